"""The diversity metrics of ``evaluate`` on where-image2's captions (docs/guides/evaluate.md's numbers).

    python experiments/diversity/run.py [--out runs/diversity]

Writes, from ``../shared/data`` (Flickr8k and where-image2-captions), into ``--out``:
  - ``refs.json``: a COCO annotation file of the 1,000 Flickr8k test images, their five raw captions;
  - ``<arch>.json`` (init, pre, par, merge): a COCO results file with each image id three times, the
    captions of the architecture's runs 1, 2 and 3 (3 samples per image);
  - ``models12.json``: one JSON object image id -> the 12 models' captions (12 samples per image);
  - ``human.json``: each image's five human captions as five samples (the references themselves);
then runs ``pregen-search evaluate`` with every diversity metric on the four architectures (one
family of comparisons against ``init``), on the 12 models, and on the human captions, each into
``--out/<name>`` and printed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
METRICS = "Div_1,Div_2,gDiv_1,mBLEU_4,Self_CIDEr"
ARCHITECTURES = ("init", "pre", "par", "merge")


def write_inputs(out: Path) -> None:
    folder = SHARED / "where-image2-captions"
    images = (folder / "imgs_flickr8k.txt").read_text().split()
    refs: dict[str, list[str]] = {}
    for line in (SHARED / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        name, caption = line.split("\t")
        refs.setdefault(name.split("#")[0], []).append(caption)
    ids = {name: k + 1 for k, name in enumerate(images)}
    (out / "refs.json").write_text(json.dumps({
        "images": [{"id": ids[n], "file_name": n} for n in images],
        "annotations": [{"image_id": ids[n], "id": 10 * ids[n] + j, "caption": c}
                        for n in images for j, c in enumerate(refs[n])]}))
    runs = {f"{a}_{r}": (folder / f"flickr8k_{a}_{r}.txt").read_text().splitlines()
            for a in ARCHITECTURES for r in (1, 2, 3)}
    for arch in ARCHITECTURES:
        (out / f"{arch}.json").write_text(json.dumps([{"image_id": ids[n], "caption": runs[f"{arch}_{r}"][k]}
                                                      for r in (1, 2, 3) for k, n in enumerate(images)]))
    (out / "models12.json").write_text(json.dumps({str(ids[n]): [runs[run][k] for run in runs]
                                                   for k, n in enumerate(images)}))
    (out / "human.json").write_text(json.dumps({str(ids[n]): refs[n] for n in images}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/diversity")
    args = parser.parse_args()
    from pregen_jax.cli import main as cli
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_inputs(out)
    for name, files in (("architectures", [f"{a}.json" for a in ARCHITECTURES]), ("models12", ["models12.json"]),
                        ("human", ["human.json"])):
        print(f"## {name}", flush=True)
        code = cli(["evaluate", "--references", str(out / "refs.json"), "--captions", *(str(out / f) for f in files),
                    "--metrics", METRICS, "--out", str(out / name)])
        assert code == 0, name


if __name__ == "__main__":
    main()
