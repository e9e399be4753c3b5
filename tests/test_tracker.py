"""The checkpoint tracker (issue 61): ``selection.Tracker`` and ``pregen-search track``: verdicts
valid over a stream, a fresh image order per offer, the state resumed with the same verdicts."""
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pregen_jax import cli
from pregen_jax.ranking import tracking
from pregen_jax.selection import Tracker

WORDS = ["dog", "cat", "runs", "sits", "grass", "mat", "red", "blue", "on", "the", "ball", "jumps"]
IMAGES = 120
BATCH = 30  # 4 looks an offer: few scoring calls (each costs ~20 ms)
REFS = [[" ".join(np.random.default_rng([7, i, r]).choice(WORDS, 7)) for r in range(5)] for i in range(IMAGES)]
STREAM = [("step-1", 0.9), ("step-2", 0.5), ("step-3", 0.55), ("step-4", 0.2), ("step-5", 0.5), ("step-6", 0.05)]


def model(noise: float):
    """A checkpoint: copies an image's first reference, each word replaced at rate ``noise`` (the same
    captions at every call: decoding is deterministic)."""
    def captions_for(images):
        out = []
        for i in images:
            rng = np.random.default_rng([int(noise * 1000), int(i)])
            out.append(" ".join(w if rng.random() > noise else str(rng.choice(WORDS)) for w in REFS[i][0].split()))
        return out
    return captions_for


def run_stream(tracker, stream=STREAM):
    return [tracker.offer(name, model(noise)) for name, noise in stream]


def test_killed_and_resumed_tracker_gives_the_same_verdicts(tmp_path):
    whole = run_stream(Tracker(REFS, within=0.05, batch=BATCH, state=tmp_path / "a.json", quiet=True))
    assert {v.status for v in whole} >= {"better", "not better"}

    class Killed(Exception):
        pass

    tracker = Tracker(REFS, within=0.05, batch=BATCH, state=tmp_path / "b.json", quiet=True)
    run_stream(tracker, STREAM[:3])
    calls = []

    def dies_mid_offer(images):  # training killed while the 4th checkpoint decodes its second batch
        calls.append(len(images))
        if len(calls) == 2:
            raise Killed
        return model(STREAM[3][1])(images)

    with pytest.raises(Killed):
        tracker.offer(STREAM[3][0], dies_mid_offer)
    # a failed offer leaves the tracker as it was (the kept one's scores of that offer not taken)
    assert len(tracker.verdicts) == 3 and tracker.kept_scores == Tracker(
        REFS, within=0.05, batch=BATCH, state=tmp_path / "b.json", quiet=True).kept_scores
    decoded = []

    def load(name):  # a restarted training decodes the kept checkpoint from its saved file
        def captions_for(images):
            decoded.append(name)
            return model(dict(STREAM)[name])(images)
        return captions_for

    resumed = Tracker(REFS, within=0.05, batch=BATCH, state=tmp_path / "b.json", load=load, quiet=True)
    assert [v.name for v in resumed.verdicts] == ["step-1", "step-2", "step-3"]
    again = run_stream(resumed)  # the loop offers every checkpoint again: decided ones are not decoded
    assert [dataclasses.asdict(v) for v in again] == [dataclasses.asdict(v) for v in whole]
    assert (tmp_path / "b.jsonl").read_text() == (tmp_path / "a.jsonl").read_text()
    assert len((tmp_path / "b.jsonl").read_text().splitlines()) == len(STREAM)
    assert resumed.best == whole[-1].best and set(decoded) <= {v.against for v in whole}


def test_every_offer_draws_a_fresh_order_and_caches_the_kept_scores():
    asked = {}

    def recording(name, noise):
        def captions_for(images):
            asked.setdefault(name, []).append(np.asarray(images).tolist())
            return model(noise)(images)
        return captions_for

    def decoded(name):
        return sum(len(call) for call in asked.get(name, []))

    tracker = Tracker(REFS, within=0.05, batch=20, quiet=True)
    for name, noise in STREAM[:4]:
        before = decoded(tracker.best)
        verdict = tracker.offer(name, recording(name, noise))
        assert verdict.kept_decoded == (decoded(verdict.against) - before if verdict.against else 0)
    assert any(v.kept_decoded for v in tracker.verdicts)
    calls = []

    def short_at_second_look(images):
        calls.append(images)
        return model(0.3)(images)[:len(images) - (len(calls) == 2)]

    scored = decoded(tracker.best)
    assert len(tracker.kept_scores) == scored
    with pytest.raises(ValueError, match="captions_for gave"):  # a failed offer caches none of its kept scores
        tracker.offer("short", short_at_second_look)
    assert decoded(tracker.best) > scored == len(tracker.kept_scores)  # it decoded some for it, and kept none
    first = [asked[name][0] for name in ("step-2", "step-3", "step-4")]
    assert first[0] != first[1] != first[2]  # one order for every offer would be a winner's curse
    # the kept checkpoint decodes only images it has not scored, each once
    kept = [image for call in asked["step-2"] for image in call]
    assert len(kept) == len(set(kept))


def test_verdicts_and_their_intervals():
    tracker = Tracker(REFS, within=0.02, batch=BATCH, quiet=True)
    assert tracker.offer("a", model(0.5)).status == "better" and tracker.best == "a"
    worse = tracker.offer("b", model(0.95))
    assert worse.status == "not better" and worse.high <= 0.02
    same = tracker.offer("c", model(0.5))  # the same captions: shown within 0.02 only once nearly every image is in
    assert same.status == "not better" and same.estimate == 0 and same.low <= 0 <= same.high
    better = tracker.offer("d", model(0.05))
    assert better.status == "better" and better.low > 0 and tracker.best == "d" and better.against == "a"
    far = tracker.offer("e", model(0.95))
    assert far.status == "not better" and far.images < IMAGES  # decided before every image is drawn
    line = better.line()
    assert line.startswith("track: offer 4 d: better: +") and "vs a" in line and "comparison 3 at alpha 0.0034" in line
    assert "d is at most 0.0200 CIDEr below every one of the 5" in tracker.guarantee()


def test_a_capped_offer_is_undecided_with_its_bound():
    tracker = Tracker(REFS, within=0.0, batch=BATCH, budget=0.25, quiet=True)
    tracker.offer("a", model(0.5))
    verdict = tracker.offer("b", model(0.52))
    assert verdict.status == "undecided" and verdict.images == IMAGES // 4
    assert verdict.bound == max(verdict.high, 0) > 0 and tracker.best == "a"
    assert f"at most {verdict.bound:.4f}" in tracker.guarantee()


def test_every_image_scored_gives_the_exact_verdict():
    tracker = Tracker(REFS, within=0.0, batch=IMAGES, quiet=True)
    tracker.offer("a", model(0.5))
    verdict = tracker.offer("b", model(0.45))
    every = np.arange(IMAGES)
    scores = [s.mean() for s in tracker._scores([("b", model(0.45), every), ("a", model(0.5), every)])]
    assert verdict.low == pytest.approx(scores[0] - scores[1], abs=1e-9) == verdict.high
    assert verdict.status == ("better" if scores[0] > scores[1] else "not better")


def test_patience_stops_after_offers_in_a_row_not_better():
    tracker = Tracker(REFS, within=0.05, batch=BATCH, patience=2, quiet=True)
    stops = [tracker.offer(name, model(x)).stop for name, x in [("a", 0.1), ("b", 0.9), ("c", 0.8), ("d", 0.9)]]
    assert stops == [False, False, True, True]


def test_alpha_spending_indexes_comparisons():
    """Offer 1 compares nothing: comparison j (offer j + 1) is spent alpha_j, the first 6 alpha / pi^2
    (not 6 alpha / (4 pi^2), offer 2's level when offers were indexed), summing to at most alpha."""
    basel = tracking.Spending(0.05)
    assert sum(basel.level(j) for j in range(1, 100_000)) < 0.05
    assert basel.level(1) == pytest.approx(0.05 * 6 / math.pi ** 2)
    assert 1 < basel.width_factor(1) < basel.width_factor(29)
    declared = tracking.Spending(0.05, most=10)  # 10 offers: 9 comparisons at alpha / 9
    assert declared.level(9) == pytest.approx(0.05 / 9) and sum(declared.level(j) for j in range(1, 10)) <= 0.05
    with pytest.raises(ValueError, match="at most 10 offers"):
        declared.level(10)
    with pytest.raises(ValueError, match="most 1: at least 2 offers"):
        tracking.Spending(0.05, most=1)
    for most, second in ((None, 6 * 0.05 / math.pi ** 2), (3, 0.05 / 2)):
        tracker = Tracker(REFS, within=0.05, batch=BATCH, most=most, quiet=True)
        first, offer_2, _ = run_stream(tracker, STREAM[:3])
        assert first.alpha is None and offer_2.alpha == pytest.approx(second)
        if most:
            with pytest.raises(ValueError, match="offer 4: the tracker was declared for at most 3 offers"):
                tracker.offer(*STREAM[3])


def test_offer_k_is_tested_at_alpha_of_comparison_k_minus_1():
    """The interval of offer k is the sequence at alpha_{k-1} = 6 alpha / (pi^2 (k-1)^2) (comparison
    k - 1), not at alpha (which would spend alpha on every offer: no guarantee over the stream)."""
    drawn, noise = {}, {"a": 0.5, "b": 0.52, "c": 0.48}

    def recording(name):
        def captions_for(images):
            drawn.setdefault(name, []).extend(np.asarray(images).tolist())
            return model(noise[name])(images)
        return captions_for

    tracker = Tracker(REFS, within=0.0, batch=BATCH, budget=0.5, quiet=True)
    verdicts = [tracker.offer(name, recording(name)) for name in noise]
    spending, width = tracking.Spending(0.05), tracker.range[1] - tracker.range[0]
    for k, verdict in enumerate(verdicts[1:], start=2):
        images = np.array(drawn[verdict.name])
        new, kept = tracker._scores([("new", model(noise[verdict.name]), images),
                                     ("kept", model(noise[verdict.against]), images)])
        _, low, high = tracking.paired_look((new - kept)[None], IMAGES, spending.level(k - 1), width, 0.0)
        assert verdict.alpha == spending.level(k - 1) and verdict.images == len(images) < IMAGES
        assert (verdict.low, verdict.high) == pytest.approx((low[0], high[0]), abs=1e-9)


def test_a_name_offered_again_gets_its_line_and_no_second_record(tmp_path, capsys):
    """Every offer prints one line, a name already decided too (its saved verdict, nothing decoded: a
    new checkpoint under an old name would otherwise pass unseen); the JSONL keeps one record per verdict."""
    tracker = Tracker(REFS, within=0.05, batch=BATCH, state=tmp_path / "s.json")
    first, second = run_stream(tracker, STREAM[:2])
    capsys.readouterr()
    again = tracker.offer("step-1", lambda images: 1 / 0)
    lines = capsys.readouterr().err.splitlines()
    assert again == first and len(lines) == 1
    assert lines[0].startswith(first.line()) and "offered again: the saved verdict, nothing decoded" in lines[0]
    assert ("kept now step-2" in lines[0]) == (second.best == "step-2")
    records = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert records == [dataclasses.asdict(first), dataclasses.asdict(second)]
    assert json.loads((tmp_path / "s.json").read_text())["verdicts"] == records


def test_bad_references_and_settings_are_refused_when_made():
    for references, settings, message in [(["a dog runs", "a cat sits"], {}, r"references\[0\]: a string"),
                                          ([["a dog"], []], {}, r"references\[1\]: no references"),
                                          (REFS, {"batch": 0}, "batch 0"), (REFS, {"within": math.nan}, "within nan"),
                                          (REFS, {"tokenizer": "PTB"}, "tokenizer 'PTB'")]:
        with pytest.raises(ValueError, match=message):
            Tracker(references, **settings)


def test_the_bets_range_is_that_of_the_tokens_scored():
    """CIDEr-D's bound on a split's scores comes from its references as the tracker's tokenizer writes
    them: 'well-known' is one token to PTB and two to alnum-lower (two identical references, bound 10)."""
    refs = [["a well-known man runs", "a well known man runs"], ["a cat sits on a mat", "two kids play on the sand"],
            ["a dog", "the red ball"]]
    ptb, alnum = (Tracker(refs, tokenizer=name, quiet=True).range[1] for name in ("ptb", "alnum-lower"))
    assert ptb < alnum == pytest.approx(10)


def test_a_resume_with_other_settings_is_refused(tmp_path):
    run_stream(Tracker(REFS, within=0.05, batch=BATCH, state=tmp_path / "s.json", quiet=True), STREAM[:2])
    with pytest.raises(ValueError, match="key 'within' is 0.05, this tracker's is 0.1"):
        Tracker(REFS, within=0.1, batch=BATCH, state=tmp_path / "s.json")
    with pytest.raises(ValueError, match="key 'references'"):
        Tracker([*REFS[:-1], ["another caption"]], within=0.05, batch=BATCH, state=tmp_path / "s.json")
    saved = json.loads((tmp_path / "s.json").read_text())
    (tmp_path / "s.json").write_text(json.dumps(saved | {"version": 1}))  # offers spent alpha: not resumed
    with pytest.raises(ValueError, match=r"state version 1, this tracker writes 2, whose offer k is tested at alpha_\{k-1\}"):
        Tracker(REFS, within=0.05, batch=BATCH, state=tmp_path / "s.json")


def test_stream_intervals_cover():
    """Replays of one offer on a population with a known mean difference: every interval covers in
    at least 1 - alpha of them, at the look where each stopped; a row that drew every image is exact."""
    rng = np.random.default_rng(0)
    population = np.clip(rng.normal(0.03, 0.4, 200), -2, 2)
    orders = np.stack([rng.permutation(200) for _ in range(200)])
    result = tracking.paired_verdicts(population[orders], 200, 0.05, 2.0, 0.05, tracking.looks(200, 50, 200))
    truth = population.mean()
    assert ((result.low <= truth + 1e-12) & (truth - 1e-12 <= result.high)).mean() >= 0.95
    every = result.drawn == 200
    assert every.any() and np.allclose(result.low[every], truth) and np.allclose(result.high[every], truth)
    assert (result.status[result.low > 0] == 1).all() and (result.status[result.drawn < 200] != 0).all()


def decode_checkpoint(path, images):
    """``--decode tests.test_tracker:decode_checkpoint``: a checkpoint file holds its noise level."""
    return model(float(Path(path).read_text()))(images)


def test_track_command_offers_a_folder_in_natural_order_and_resumes(tmp_path, capsys):
    """step-9 before step-10 (digits compared as numbers); a rerun prints every checkpoint's verdict,
    the decided ones as offered again."""
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"images": [{"id": i} for i in range(IMAGES)],
                                "annotations": [{"image_id": i, "caption": r} for i in range(IMAGES) for r in REFS[i]]}))
    folder = tmp_path / "ckpt"
    folder.mkdir()
    stream = [(f"step-{8 + i}", noise) for i, (_, noise) in enumerate(STREAM)]  # step-8 ... step-13
    for name, noise in stream[:3]:
        (folder / name).write_text(str(noise))
    command = ["track", "--references", str(refs), "--checkpoints", str(folder), "--decode",
               "tests.test_tracker:decode_checkpoint", "--tokenizer", "alnum-lower", "--batch", str(BATCH), "--state", str(tmp_path / "t.json")]
    assert cli.main(command) == 0
    first = capsys.readouterr()
    assert first.err.count("track: offer") == 3 and "signature: CIDEr" in first.out
    assert [json.loads(line)["name"] for line in (tmp_path / "t.jsonl").read_text().splitlines()] == [
        "step-8", "step-9", "step-10"]
    for name, noise in stream[3:]:
        (folder / name).write_text(str(noise))
    assert cli.main(command) == 0  # new checkpoints: only they are decoded
    again = capsys.readouterr()
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert again.err.count("track: offer") == 6 and again.err.count("offered again") == 3
    assert f"kept: {records[-1]['best']}" in again.out
    assert records[-1]["best"] == "step-13"  # noise 0.05: far above the rest
    assert [r["name"] for r in records] == [n for n, _ in stream] and records[-1]["signature"].startswith("CIDEr")
    saved = [(tmp_path / f"t.{suffix}").read_text() for suffix in ("json", "jsonl")]
    assert cli.main([*command, "--most", "5"]) == 2  # 6 files: refused before any work, nothing written
    err = capsys.readouterr().err.splitlines()
    assert err == [f"pregen-search track: error: --most 5: --checkpoints {folder} holds 6 checkpoints, more than the "
                   "5 offers declared (raise --most, or keep fewer files)"]
    for name in ("step-8", "step-9"):  # checkpoints deleted after their offers still count as offers
        (folder / name).unlink()
    assert cli.main([*command, "--most", "5"]) == 2
    err = capsys.readouterr().err
    assert f"--checkpoints {folder} holds 4 checkpoints and --state {tmp_path / 't.json'} decided 2 others, 6 offers" in err
    assert [(tmp_path / f"t.{suffix}").read_text() for suffix in ("json", "jsonl")] == saved


def test_track_command_refuses_bad_input_before_any_work(tmp_path, capsys):
    state = tmp_path / "t.json"
    assert cli.main(["track", "--references", "r.json", "--captions", "a.txt", "--checkpoints", str(tmp_path),
                     "--state", str(state)]) == 2
    assert "not both" in capsys.readouterr().err
    assert cli.main(["track", "--references", "r.json", "--checkpoints", str(tmp_path), "--state", str(state)]) == 2
    assert "needs --decode" in capsys.readouterr().err
    assert cli.main(["track", "--references", "r.json", "--checkpoints", str(tmp_path), "--decode", "m:f",
                     "--state", str(state)]) == 2  # the state beside the checkpoints would be offered as one
    assert "inside --checkpoints" in capsys.readouterr().err
    assert not state.exists()


def test_track_command_scores_caption_files_on_every_image(tmp_path, capsys):
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"images": [{"id": i} for i in range(IMAGES)],
                                "annotations": [{"image_id": i, "caption": r} for i in range(IMAGES) for r in REFS[i]]}))
    files = []
    for name, noise in STREAM[:3]:
        files.append(str(tmp_path / f"{name}.json"))
        Path(files[-1]).write_text(json.dumps([{"image_id": i, "caption": c}
                                               for i, c in enumerate(model(noise)(np.arange(IMAGES)))]))
    command = ["track", "--references", str(refs), "--captions", *files, "--state", str(tmp_path / "t.json")]
    assert cli.main(command) == 0
    printed = capsys.readouterr()
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert all(r["images"] == IMAGES and r["low"] == r["high"] for r in records[1:])  # exact verdicts
    assert "tokenizer: ptb\n" in printed.out and all("tok:ptb" in r["signature"] for r in records)
    assert "at 95% for the whole stream (alpha_j = 6 x 0.05 / (pi^2 j^2) for comparison j (offer j + 1)" in printed.out
    assert cli.main([*command, "--most", "2"]) == 2
    assert "--most 2: --captions gives 3 checkpoints, more than the 2 offers declared" in capsys.readouterr().err
    assert cli.main([*command, "--within", "0.1"]) == 2
    assert "key 'within' is 0.02, this tracker's is 0.1" in capsys.readouterr().err
