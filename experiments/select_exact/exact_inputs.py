"""The where-image2 inputs as a new user has them: one COCO annotation file of the 1,000 Flickr8k
test images (the 5 raw references of Flickr8k.token.txt each) and one COCO results file per model:
the six of issue 57 (init_1..3, pre_1..3), par_2, and par_2's captions moved by one image
(``par_2_moved``: each image gets the next one's caption, CIDEr-D 0.06 against 0.47).

    python3 experiments/select_exact/exact_inputs.py OUT
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pregen_jax import io

SIX = [f"{arch}_{run}" for arch in ("init", "pre") for run in (1, 2, 3)]
MODELS = [*SIX, "par_2", "par_2_moved"]


def write(out: Path) -> list[Path]:
    """Write refs.json and <model>.json for each of ``MODELS`` into ``out``; return the results files."""
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
    for model in MODELS:
        lines = (folder / f"flickr8k_{model.removesuffix('_moved')}.txt").read_text(encoding="utf-8").split("\n")
        lines = lines[:len(ids)]
        if model.endswith("_moved"):
            lines = lines[1:] + lines[:1]
        path = out / f"{model}.json"
        path.write_text(json.dumps([{"image_id": number[i], "caption": c} for i, c in zip(ids, lines)]))
        paths.append(path)
    return paths


if __name__ == "__main__":
    print("\n".join(str(p) for p in write(Path(sys.argv[1]))))
