"""Keep the best checkpoint while training: each new checkpoint is offered once and decided on as
few validation images as its evidence needs, with a guarantee over the whole stream.

    tracker = Tracker(references, metric="CIDEr", within=0.02, alpha=0.05, seed=0, state="track.json")
    verdict = tracker.offer("step-2500", captions_for)   # captions_for(i64[n] image indices) -> n captions
    tracker.best                                          # the kept checkpoint's name

An offer draws the split's images in its own random order (``ranking.tracking``: why a fresh one),
``batch`` of them (default N / 32) and then twice as many at each look, asks the challenger for its
captions of the new ones (one call a look, so a GPU decodes a batch at once) and the kept checkpoint for those it has not scored yet, scores both per
image (CIDEr-D with every reference of the split for document frequencies, so each image gets its
whole-split score) and looks: ``better`` once the split's mean difference is shown > 0, ``not
better`` once it is shown <= ``within``, ``undecided`` when ``budget`` images are drawn first (the
kept one stays, and ``bound`` says how far above it the challenger may be). The first offer is kept
without a comparison and spends no alpha; offer k is comparison k - 1, at alpha_{k-1}. The guarantee
and how alpha is spent over comparisons: ``ranking.tracking``. ``patience`` P: ``verdict.stop`` once P offers in a
row were not ``better`` (``not better`` or ``undecided``); stopping there keeps the guarantee for the checkpoints offered, and says
nothing about checkpoints never offered.

The kept checkpoint's scores are cached (and saved), and it decodes only the images an offer draws
that it has not scored. Its ``captions_for`` must keep decoding *that* checkpoint: in PyTorch, whose
modules change in place as training goes on, give a copy of the weights (``copy.deepcopy(model)``) or
a function that loads the saved file; after a restart the kept checkpoint is decoded through
``load(name) -> captions_for``.

State: after every offer the tracker writes ``state`` (JSON, atomically) and, from it, the JSONL
log (``state`` with suffix ``.jsonl``); a tracker made again with the same settings and ``state``
resumes: an offer of a name already decided returns its saved verdict (its stderr line says so, and
its one JSONL record is the saved one; nothing is decoded), and the next offer draws the same order as
it would have uninterrupted, so a restarted training gets the same verdicts.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .. import io, postgen
from ..postgen.tokenizers import DEFAULT_TOKENIZER, check_tokenizer_name, tokenize_all
from ..ranking import tracking
from .race import check_metric, race_signature, score_range

STATE_VERSION = 2  # 2: alpha spent over comparisons (offer k at alpha_{k-1}), not offers


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One offer's answer. images: the challenger's images scored; kept_decoded: images the kept
    checkpoint decoded for it (not cached); against: the checkpoint kept when it was offered; estimate, low,
    high: the challenger's split mean minus that one's, its estimate and interval at level 1 - alpha (None for the first offer); bound: how far
    the challenger may be above the checkpoint kept after the offer (0 when it is kept); best: that
    checkpoint; alpha, width_factor: the level of this offer's comparison (offer k is comparison k - 1)
    and its interval's width against one test's at the stream's alpha (None for the first offer, which
    compares nothing and spends nothing); stop: patience reached."""

    name: str
    offer: int
    against: str | None
    status: str
    images: int
    kept_decoded: int
    estimate: float | None
    low: float | None
    high: float | None
    bound: float
    best: str
    alpha: float | None
    width_factor: float | None
    stop: bool
    signature: str

    def line(self) -> str:
        """The one line on stderr."""
        if self.estimate is None:
            return f"track: offer 1 {self.name}: better (the first checkpoint: kept, nothing compared, no alpha spent)"
        return (f"track: offer {self.offer} {self.name}: {self.status}: {self.estimate:+.4f} vs {self.against}"
                f" [{self.low:+.4f}, {self.high:+.4f}] on {self.images} images (+{self.kept_decoded} decoded for the"
                f" kept one); bound {self.bound:.4f}; kept {self.best}; comparison {self.offer - 1} at alpha"
                f" {self.alpha:.2g} (x{self.width_factor:.2f} width)" + ("; patience reached: stop" if self.stop else ""))


@dataclasses.dataclass(frozen=True)
class TrackerSettings:
    """Everything an offer's verdict depends on besides the captions (a resumed tracker must match)."""

    metric: str
    within: float
    alpha: float
    seed: int
    most: int | None
    batch: int
    budget: int
    patience: int | None
    tokenizer: str
    references: str  # sha256 of the references, in order


def reference_lists(references: Sequence[Sequence]) -> list[list[str]]:
    """list[N] of each image's reference strings (token lists joined by spaces), checked when the tracker
    is made rather than at the second checkpoint: one ``ValueError`` naming the first bad image."""
    lists = []
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            raise ValueError(f"references[{i}]: a string, not a list of that image's reference strings")
        lists.append([" ".join(r) if not isinstance(r, str) else r for r in refs])
        if not lists[-1]:
            raise ValueError(f"references[{i}]: no references (every validation image needs at least one)")
    return lists


def tokenized_references(refs: list[list[str]], tokenizer: str) -> list[list[str]]:
    """``refs`` as ``tokenizer`` writes them (one tokenizer run for all of them)."""
    flat = tokenize_all([r for image in refs for r in image], tokenizer)
    starts = np.cumsum([0] + [len(image) for image in refs])
    return [flat[a:b] for a, b in zip(starts[:-1], starts[1:])]


class Tracker:
    """A stream of checkpoints, each ``offer``-ed once; ``best`` the kept one's name (None before any)."""

    def __init__(self, references: Sequence[Sequence[str]], metric: str = "CIDEr", within: float = 0.02,
                 alpha: float = 0.05, seed: int = 0, *, most: int | None = None, batch: int | None = None,
                 budget: float = 1.0, patience: int | None = None, tokenizer: str = DEFAULT_TOKENIZER,
                 state: str | Path | None = None, load: Callable[[str], Callable] | None = None,
                 quiet: bool = False):
        check_metric(metric)
        check_tokenizer_name(tokenizer)
        if not math.isfinite(within) or within < 0:
            raise ValueError(f"within {within}: must be >= 0 (on the metric's scale)")
        if not 0 < budget <= 1:
            raise ValueError(f"budget {budget}: the share of images an offer may draw, in (0, 1]")
        if patience is not None and patience < 1:
            raise ValueError(f"patience {patience}: at least 1 offer")
        self.refs = reference_lists(references)
        n = len(self.refs)
        if n == 0:
            raise ValueError("no validation images")
        self.spending = tracking.Spending(alpha, most)
        batch = max(1, math.ceil(n / 32)) if batch is None else batch  # 0 is refused (by looks), not the default
        digest = hashlib.sha256(json.dumps(self.refs).encode()).hexdigest()
        self.settings = TrackerSettings(metric, float(within), float(alpha), int(seed), most, int(batch),
                                        max(1, math.ceil(budget * n)), patience, tokenizer, digest)
        self.looks = tracking.looks(n, self.settings.batch, self.settings.budget)
        self.gts = dict(enumerate(self.refs))
        # the bets' range from the references as this tracker's tokenizer scores them (CIDEr-D's bound
        # moves with the tokens: PTB's on Flickr8k's test references is above alnum-lower's)
        as_scored = dict(enumerate(tokenized_references(self.refs, tokenizer)))
        self.range = score_range(metric, as_scored, as_scored, tokenized=True)
        # the tokenizer outputs name: a caller that tokenized the text itself (tokenizer "none") names its own
        self.tokenizer_name = tokenizer
        self.signature = race_signature(metric, tokenizer, self.refs)
        self.state_path = None if state is None else Path(state)
        self.load, self.quiet = load, quiet
        self.verdicts: list[Verdict] = []
        self.kept_scores: dict[int, float] = {}  # the kept checkpoint's per-image scores, by image
        self.kept_captions_for: Callable | None = None
        if self.state_path is not None and self.state_path.exists():
            self._resume()

    @property
    def best(self) -> str | None:
        return self.verdicts[-1].best if self.verdicts else None

    @property
    def num_images(self) -> int:
        return len(self.refs)

    def offer(self, name: str, captions_for: Callable[[np.ndarray], Sequence]) -> Verdict:
        """Decide on checkpoint ``name`` (``captions_for``: i64[n] image indices -> n captions, strings or
        token lists); a name already decided returns its saved verdict, decodes nothing and prints its line
        saying so (a new checkpoint needs a new name)."""
        for verdict in self.verdicts:
            if verdict.name == name:
                return self._again(verdict)
        k = len(self.verdicts) + 1
        if not self.verdicts:
            verdict = Verdict(name, 1, None, "better", 0, 0, None, None, None, 0.0, name, None, None, False,
                              self.signature)
            return self._record(verdict, {}, captions_for)
        alpha_j = self.spending.level(k - 1)  # offer k is comparison k - 1: the first offer spent nothing
        order = np.random.default_rng([self.settings.seed, k]).permutation(self.num_images)
        differences, challenger, kept = [], {}, dict(self.kept_scores)  # taken only with the verdict
        status = 0
        for t in self.looks:
            images = order[len(differences):t]
            missing = self._kept_missing(images, kept)
            new, old = self._scores([(name, captions_for, images), (self.best, self.kept_captions_for, missing)])
            kept.update(zip(missing.tolist(), old.tolist()))
            challenger.update(zip(images.tolist(), new.tolist()))
            differences.extend(new - np.array([kept[i] for i in images.tolist()]))
            status, low, high = tracking.paired_look(np.array([differences]), self.num_images, alpha_j,
                                                     self.range[1] - self.range[0], self.settings.within)
            if status[0]:
                break
        status, low, high = tracking.STATUSES[int(status[0])], float(low[0]), float(high[0])
        best = name if status == "better" else self.best
        bound = 0.0 if status == "better" else max(high, 0.0)
        since = next((j for j, v in enumerate(reversed(self.verdicts)) if v.status == "better"), len(self.verdicts))
        misses = 0 if status == "better" else since + 1
        stop = self.settings.patience is not None and misses >= self.settings.patience
        verdict = Verdict(name, k, self.best, status, len(differences), len(kept) - len(self.kept_scores),
                          float(np.mean(differences)), low, high, bound, best, alpha_j, self.spending.width_factor(k - 1),
                          stop, self.signature)
        self.kept_scores = kept
        return self._record(verdict, challenger, captions_for)

    def guarantee(self) -> str:
        """What holds, at 1 - alpha, for every checkpoint offered so far."""
        worst = max([self.settings.within] + [v.bound for v in self.verdicts if v.status == "undecided"])
        return (f"{self.best} is at most {worst:.4f} {self.settings.metric} below every one of the {len(self.verdicts)} "
                f"checkpoints offered, and every replacement was truly better, at {1 - self.settings.alpha:.0%} for the"
                f" whole stream ({self.spending.describe()})")

    # ---------------------------------------------------------------- scoring

    def _scores(self, parts: list[tuple[str, Callable, np.ndarray]]) -> list[np.ndarray]:
        """f64[n] per (name, captions_for, images i64[n]) part: the per-image scores of that checkpoint's
        captions of those images (whole-split document frequencies); an empty part decodes nothing."""
        scores = []
        for name, captions_for, images in parts:
            if not len(images):
                scores.append(np.zeros(0))
                continue
            captions = list(captions_for(np.asarray(images, np.int64)))
            if len(captions) != len(images):
                raise ValueError(f"{name}: captions_for gave {len(captions)} captions for {len(images)} images")
            res = {i: [c if isinstance(c, str) else " ".join(c)] for i, c in zip(images.tolist(), captions)}
            gts = {i: self.gts[i] for i in images.tolist()}
            idf = {"idf_from": self.gts} if self.settings.metric == "CIDEr" else {}
            per_image = postgen.score(self.settings.metric, gts, res, tokenizer=self.settings.tokenizer, **idf)[1]
            scores.append(np.asarray(per_image, np.float64))
        return scores

    def _kept_missing(self, images: np.ndarray, kept: dict[int, float]) -> np.ndarray:
        """i64[m]: those of ``images`` the kept checkpoint has not scored (``kept``: its scores so far),
        making sure it can decode them."""
        missing = np.array([i for i in images.tolist() if i not in kept], np.int64)
        if len(missing) and self.kept_captions_for is None:
            if self.load is None:
                raise ValueError(f"the kept checkpoint {self.best} must decode {len(missing)} images and this tracker "
                                 "has no way to decode it (resumed from its state): give load=name -> captions_for")
            self.kept_captions_for = self.load(self.best)
        return missing

    # ---------------------------------------------------------------- state

    def _record(self, verdict: Verdict, challenger: dict[int, float], captions_for: Callable) -> Verdict:
        """Take the verdict (a new kept checkpoint brings its scores), save, log one line."""
        self.verdicts.append(verdict)
        if verdict.status == "better":
            self.kept_scores, self.kept_captions_for = dict(challenger), captions_for
        self._save()
        if not self.quiet:
            print(verdict.line(), file=sys.stderr)
        return verdict

    def _again(self, verdict: Verdict) -> Verdict:
        """A name already decided, offered again: its saved verdict (its JSONL record already written),
        one stderr line that says so."""
        if not self.quiet:
            now = "" if verdict.best == self.best else f", kept now {self.best}"
            print(f"{verdict.line()}; offered again: the saved verdict, nothing decoded{now}", file=sys.stderr)
        return verdict

    def _save(self) -> None:
        if self.state_path is None:
            return
        state = {"version": STATE_VERSION, "settings": dataclasses.asdict(self.settings),
                 "verdicts": [dataclasses.asdict(v) for v in self.verdicts],
                 "kept_scores": {str(i): s for i, s in self.kept_scores.items()}}
        io.write_text(json.dumps(state), self.state_path)
        self._write_log()

    def _write_log(self) -> None:
        lines = "".join(json.dumps(dataclasses.asdict(v)) + "\n" for v in self.verdicts)
        io.write_text(lines, self.state_path.with_suffix(".jsonl"))

    def _resume(self) -> None:
        """Load ``state``: its settings must be this tracker's."""
        where = self.state_path
        try:
            state = json.loads(where.read_text(encoding="utf-8"))
            saved = state["settings"]
            if state.get("version") != STATE_VERSION:
                raise ValueError(f"state version {state.get('version')}, this tracker writes {STATE_VERSION}, whose offer k "
                                 "is tested at alpha_{k-1}: give another state file")
            verdicts = [Verdict(**v) for v in state["verdicts"]]
            kept = {int(i): float(s) for i, s in state["kept_scores"].items()}
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{where}: not a tracker state ({err})") from None
        for key, value in dataclasses.asdict(self.settings).items():
            if saved.get(key) != value:
                raise ValueError(f"{where}: key {key!r} is {saved.get(key)!r}, this tracker's is {value!r}: resume with the "
                                 "same settings and references, or give another state file")
        self.verdicts, self.kept_scores = verdicts, kept
        self._write_log()  # a kill between the state and its log: the log follows the state


def decided_names(state: str | Path) -> set[str]:
    """The checkpoint names a saved ``state`` decided (empty where there is none or it cannot be read:
    a ``Tracker`` given that state refuses it, naming why)."""
    try:
        return {v["name"] for v in json.loads(Path(state).read_text(encoding="utf-8"))["verdicts"]}
    except (OSError, ValueError, KeyError, TypeError):
        return set()
