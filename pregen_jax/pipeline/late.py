"""The steps of a run after its table (ranking, model-level decisions, plots, report sections): none
of them may lose what is done.

A late step that does not apply to this data (``ranking.NotApplicable``: a constant metric, too few
models) is a declared outcome: the run names the step and why in ``report.md`` and
``excluded.tsv``, prints one warning line, and exits 0. Any other error in a late step is not
hidden: the run still writes everything else, then ``raise_failures`` ends it with one line naming
the step (``LateStepFailed``, exit 1 from the CLI).
"""
from __future__ import annotations

import dataclasses
import sys
import traceback
from collections.abc import Callable
from typing import TypeVar

from ..ranking import NotApplicable

T = TypeVar("T")


class LateStepFailed(RuntimeError):
    """A late step raised an unexpected error; everything else of the run is written."""

    def __init__(self, failed: dict[str, str], out):
        self.failed, self.out = dict(failed), out
        steps = "; ".join(f"step '{step}' failed: {why}" for step, why in failed.items())
        super().__init__(f"{steps} (the table, manifest.json and every other output are written in {out}; "
                         "report.md names the step)")


@dataclasses.dataclass
class LateSteps:
    """What became of the late steps of one run: step -> why, for those skipped (did not apply) and
    those that failed (an unexpected error, with its type)."""

    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    tracebacks: dict[str, str] = dataclasses.field(default_factory=dict)  # failed step -> its traceback (report.md)

    def run(self, step: str, compute: Callable[[], T], default: T) -> T:
        """``compute()``, or ``default`` when it raises: recorded as skipped (NotApplicable, with one
        warning line) or failed (anything else but Ctrl-C; its traceback goes in report.md, not on
        the terminal, which gets one line at the end)."""
        try:
            return compute()
        except NotApplicable as err:
            why = " ".join(str(err).split())
            self.skipped[step] = why
            print(f"warning: {step} not done: {why}", file=sys.stderr)
        except Exception as err:  # noqa: BLE001 - recorded and raised once the rest is written
            self.tracebacks[step] = traceback.format_exc()
            self.failed[step] = f"{type(err).__name__}: {' '.join(str(err).split())}"
        return default

    def not_applicable(self, step: str, why: str) -> None:
        """Record a step this data does not allow (decided without running it), with one warning line."""
        self.skipped[step] = why
        print(f"warning: {step} not done: {why}", file=sys.stderr)

    @property
    def all(self) -> dict[str, str]:
        """step -> why, skipped and failed together (failed ones say so): excluded.tsv's step rows."""
        return {**self.skipped, **{step: f"failed: {why}" for step, why in self.failed.items()}}

    def as_json(self) -> dict[str, dict[str, str]]:
        return {"skipped": dict(self.skipped), "failed": dict(self.failed), "tracebacks": dict(self.tracebacks)}

    def raise_failures(self, out) -> None:
        if self.failed:
            raise LateStepFailed(self.failed, out)


def section(steps: dict[str, dict[str, str]], excluded_postgen: dict[str, str]) -> str:
    """report.md's section on what was not done and why ("" when everything was)."""
    lines = [f"- post-gen metric **{name}** not ranked against: {why}" for name, why in excluded_postgen.items()]
    lines += [f"- **{step}** not done: {why}" for step, why in steps.get("skipped", {}).items()]
    for step, why in steps.get("failed", {}).items():
        lines += [f"- **{step}** FAILED: {why} (a bug: please report it with this run's config)", "",
                  "```", steps.get("tracebacks", {}).get(step, "").rstrip(), "```", ""]
    if not lines:
        return ""
    return "\n".join(["## Not done for this data", "",
                      "Everything else of the run is written; these are also listed in `excluded.tsv`.", "",
                      *lines, ""])
