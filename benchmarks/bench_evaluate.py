"""Benchmark ``evaluate`` against pycocoevalcap's ``COCOEvalCap`` at COCO scale, in one run.

    python benchmarks/bench_evaluate.py [--images 1000]

Inputs, built in a temporary folder: each Flickr8k test image five times (``--images`` test
images, default all 1,000: 5,000 scored images), copy k scoring raw caption k against the other
four raw captions, as a COCO annotation file and a COCO results file. Both sides start from the
same two files and give BLEU-1..4, METEOR, ROUGE-L and CIDEr-D (SPICE needs the CoreNLP jars,
absent here), corpus and per image; the scores are checked equal (largest difference printed).

Timed once each (no warm-up: a user runs it once), wall and CPU (this process plus the Java
processes it started and ended: PTB's jar, METEOR's JVM):
  - COCOEvalCap: ``evaluate()`` as coco-caption's example runs it (whole), and its parts on the
    same tokenized strings: the PTB tokenizer (run twice, references then captions, as it does)
    and each scorer (Bleu(4) gives BLEU-1..4 at once; Meteor() includes its JVM's start);
  - evaluate: ``score_files`` (whole: reading, PTB tokenization in one call (the package's default
    PTB backend, printed), every metric's
    per-image statistics, the corpus table with 1,000 bootstrap resamples), and its parts: the
    tokenization and each metric's ``stats`` + ``aggregate`` on the tokenized strings (BLEU's
    four share one count, timed as one), and METEOR's Python backend (the jar's statistics without a
    JVM; the package's default, so also in the whole run) against COCOEvalCap's METEOR.
The machine may be shared: the load average is printed with the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
METRICS = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"]


def build_files(folder: Path, images: int) -> tuple[Path, Path]:
    """refs.json (COCO annotations) and res.json (COCO results) of ``images`` x 5 scored images."""
    captions: dict[str, list[str]] = {}
    for line in (SHARED / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        captions.setdefault(key.split("#")[0], []).append(caption)
    test = (SHARED / "flickr8k" / "Flickr_8k.testImages.txt").read_text().split()[:images]
    scored = [(5 * n + k, captions[name], k) for n, name in enumerate(test) for k in range(5)]
    annotations = {"images": [{"id": i, "file_name": f"{i}.jpg"} for i, _, _ in scored],
                   "annotations": [{"image_id": i, "id": 10 * i + j, "caption": c}
                                   for i, caps, k in scored for j, c in enumerate(caps) if j != k]}
    results = [{"image_id": i, "caption": caps[k]} for i, caps, k in scored]
    (folder / "refs.json").write_text(json.dumps(annotations))
    (folder / "res.json").write_text(json.dumps(results))
    return folder / "refs.json", folder / "res.json"


def timed(fn):
    """(result, wall seconds, CPU seconds of this process and of the children it waited for)."""
    wall, cpu = time.perf_counter(), time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return out, time.perf_counter() - wall, time.process_time() - cpu + child_cpu


class _SpiceNotRun(Exception):
    pass


def cocoevalcap_whole(refs: Path, res: Path) -> dict:
    """COCOEvalCap.evaluate() on the two files; SPICE (last in its list, no jars here) is not run."""
    import contextlib
    import io as stdio

    import pycocoevalcap.eval as coco_eval
    from pycocotools.coco import COCO

    class NoSpice:
        def compute_score(self, gts, res):
            raise _SpiceNotRun

        def method(self):
            return "SPICE"
    real, coco_eval.Spice = coco_eval.Spice, NoSpice
    try:
        with contextlib.redirect_stdout(stdio.StringIO()):
            coco = COCO(str(refs))
            coco_res = coco.loadRes(str(res))
            evaluator = coco_eval.COCOEvalCap(coco, coco_res)
            evaluator.params["image_id"] = coco_res.getImgIds()
            try:
                evaluator.evaluate()
            except _SpiceNotRun:
                pass
            import gc
            gc.collect()  # Meteor's JVM ends when its scorer is collected (its __del__)
    finally:
        coco_eval.Spice = real
    return {"eval": evaluator.eval, "imgToEval": evaluator.imgToEval}


def cocoevalcap_parts(refs: Path, res: Path) -> tuple[dict, dict]:
    """({part: (wall, cpu)}, tokenized gts and res) of COCOEvalCap's steps, one by one."""
    import contextlib
    import io as stdio

    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    from pycocotools.coco import COCO
    with contextlib.redirect_stdout(stdio.StringIO()):
        coco = COCO(str(refs))
        coco_res = coco.loadRes(str(res))
    ids = coco_res.getImgIds()
    gts = {i: coco.imgToAnns[i] for i in ids}
    res_anns = {i: coco_res.imgToAnns[i] for i in ids}
    times = {}
    (gts, res_tok), *times["PTB tokenizer"] = timed(lambda: (PTBTokenizer().tokenize(gts), PTBTokenizer().tokenize(res_anns)))

    def meteor():
        scorer = Meteor()
        out = scorer.compute_score(gts, res_tok)
        scorer.meteor_p.stdin.close()
        scorer.meteor_p.kill()
        scorer.meteor_p.wait()  # reaped: its CPU time counts
        return out
    for name, fn in (("Bleu_1..4", lambda: Bleu(4).compute_score(gts, res_tok, verbose=0)), ("METEOR", meteor),
                     ("ROUGE_L", lambda: Rouge().compute_score(gts, res_tok)),
                     ("CIDEr", lambda: Cider().compute_score(gts, res_tok))):
        _, *times[name] = timed(fn)
    return times, (gts, res_tok)


def ours_parts(refs: Path, res: Path, options) -> dict:
    """{part: (wall, cpu)} of evaluate's steps on the same files."""
    from pregen_jax import postgen
    from pregen_jax.captionfiles import read_references
    from pregen_jax.evaluation.inputs import read_results, scored_images
    from pregen_jax.evaluation.tokenizers import tokenize_all
    references = read_references(refs)
    results = read_results(res, references)
    images = scored_images(references, [results])
    strings = [c for i in images for c in references.captions[i]] + [results.captions[i] for i in images]
    from pregen_jax.postgen.ptb import lexer, scanner
    lexer._memo.clear()  # the Python PTB lexer's word memo and rule cache, filled by the whole run: as in a fresh process
    scanner._candidates.cache_clear()
    tokens, *tokenizing = timed(lambda: tokenize_all(strings, "ptb"))
    times = {"PTB tokenizer": tuple(tokenizing)}
    at = iter(tokens)
    gts = {i: [next(at) for _ in references.captions[i]] for i in images}
    res_tok = {i: [next(at)] for i in images}
    for name, metrics in (("Bleu_1..4", ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"]), ("METEOR", ["METEOR"]),
                          ("ROUGE_L", ["ROUGE_L"]), ("CIDEr", ["CIDEr"])):
        def run(metrics=metrics):
            postgen.recent.CACHE.clear()  # each metric from the strings, nothing kept from the one before
            with postgen.make_metrics(metrics, options) as started:
                return [m.aggregate(m.stats(gts, res_tok)) for m in started.metrics]
        _, *times[name] = timed(run)

    def python_meteor():
        metric = postgen.METEOR("python")  # statistics equal to the jar's, no JVM (not yet the default backend)
        try:
            return metric.aggregate(metric.stats(gts, res_tok))
        finally:
            metric.close()
    _, *times["METEOR python"] = timed(python_meteor)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1000, help="Flickr8k test images (x5 scored images)")
    args = parser.parse_args()
    from pregen_jax import postgen
    from pregen_jax.evaluation import score_files
    from pregen_jax.postgen.meteor import DEFAULT_BACKEND
    backend = DEFAULT_BACKEND
    from pregen_jax.postgen.ptb import DEFAULT_BACKEND as PTB_BACKEND
    print(f"load average at start: {os.getloadavg()}; evaluate's backends: METEOR {backend}, PTB {PTB_BACKEND}")
    with tempfile.TemporaryDirectory() as tmp:
        refs, res = build_files(Path(tmp), args.images)
        coco, coco_wall, coco_cpu = timed(lambda: cocoevalcap_whole(refs, res))
        ours, our_wall, our_cpu = timed(lambda: score_files(refs, res, metrics=METRICS))
        worst = 0.0
        per_image = ours.per_image.set_index("image_id")
        for metric in METRICS:
            corpus = float(ours.table.set_index("metric").loc[metric, "score"])
            worst = max(worst, abs(corpus - coco["eval"][metric]),
                        float(np.max(np.abs(per_image[metric].to_numpy() -
                                            [coco["imgToEval"][i][metric] for i in per_image.index]))))
        coco_parts, _ = cocoevalcap_parts(refs, res)
        our_parts = ours_parts(refs, res, postgen.PostgenOptions())
    images = 5 * args.images
    print(f"{images} images; largest difference to COCOEvalCap (corpus and per image, all metrics): {worst:.2e}")
    print(f"{'part':15s} {'COCOEvalCap wall':>17s} {'cpu':>7s} {'evaluate wall':>14s} {'cpu':>7s} {'wall ratio':>10s}")
    for part in our_parts:
        (cw, cc), (ow, oc) = coco_parts[part.removesuffix(" python")], our_parts[part]
        print(f"{part:15s} {cw:17.2f} {cc:7.2f} {ow:14.2f} {oc:7.2f} {cw / ow:9.1f}x")
    print(f"{'in all':15s} {coco_wall:17.2f} {coco_cpu:7.2f} {our_wall:14.2f} {our_cpu:7.2f} {coco_wall / our_wall:9.1f}x")
    print(f"load average at end: {os.getloadavg()}")
    print(f"evaluate_speedup={coco_wall / our_wall:.2f} cpu_ratio={coco_cpu / our_cpu:.2f} images={images} "
          f"max_abs_diff={worst:.2e} meteor_backend={backend} ptb_backend={PTB_BACKEND}")


if __name__ == "__main__":
    main()
