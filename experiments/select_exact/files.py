"""Write the where-image2 study's inputs as a new user has them: one COCO annotation file of the
1,000 Flickr8k test images (the 5 raw references of Flickr8k.token.txt each) and one COCO results
file per model, plus a "moved" file (merge_1's captions moved among the images: a model and its
captions shifted by one image, CIDEr-D 7x lower).

    python3 experiments/select_exact/files.py OUT
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pregen_jax import io

MODELS = [f"{arch}_{run}" for arch in ("init", "merge") for run in (1, 2, 3)]


def write(out: Path) -> list[Path]:
    """Write refs.json and <model>.json (and moved.json) into ``out``; return the results files."""
    folder = io.shared_data() / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    refs: dict[str, list[str]] = {}
    for line in (io.shared_data() / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, _, caption = line.partition("\t")
        refs.setdefault(key.split("#")[0], []).append(caption)
    number = {image: k + 1 for k, image in enumerate(ids)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "refs.json").write_text(json.dumps({
        "images": [{"id": number[i], "file_name": i} for i in ids],
        "annotations": [{"image_id": number[i], "caption": c} for i in ids for c in refs[i]]}))
    paths = []
    for model in MODELS + ["moved"]:
        lines = (folder / f"flickr8k_{'merge_1' if model == 'moved' else model}.txt").read_text().split("\n")[:len(ids)]
        if model == "moved":
            lines = lines[1:] + lines[:1]
        path = out / f"{model}.json"
        path.write_text(json.dumps([{"image_id": number[i], "caption": c} for i, c in zip(ids, lines)]))
        paths.append(path)
    return paths


if __name__ == "__main__":
    print("\n".join(str(p) for p in write(Path(sys.argv[1]))))
