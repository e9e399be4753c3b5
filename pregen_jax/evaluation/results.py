"""One row of ``evaluate``'s table as an object: a system's corpus score of one metric, its 95%
interval, and against the first system the difference, its interval and the p-values
(``Evaluation.results``; ``Evaluation.rows()`` gives the same as dicts)."""
from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Result:
    """A system's score of one metric, as the table prints it, with what applies (else None).

    Attributes:
      system, metric: which; score: the corpus score (f64, the toolkit's scale).
      interval: (low, high), the 95% BCa bootstrap interval; None for a metric without statistics.
      diff: score minus the first system's; diff_interval: its 95% interval, simultaneous over the family
        of comparisons (max-T: excludes 0 exactly when ``p_adjusted < 0.05``).
      p_adjusted: ``p_bootstrap`` adjusted over the family (single-step max-T); p_stepdown: step-down max-T;
      p_bootstrap, p_randomization: the paired tests against the first system, unadjusted.
      tokenizer: the tokenizer's short name; signature: how the score was computed (``postgen.signature``).
    """

    system: str
    metric: str
    score: float
    interval: tuple[float, float] | None = None
    diff: float | None = None
    diff_interval: tuple[float, float] | None = None
    p_bootstrap: float | None = None
    p_adjusted: float | None = None
    p_stepdown: float | None = None
    p_randomization: float | None = None
    tokenizer: str = ""
    signature: str = ""

    @classmethod
    def of_row(cls, row: dict) -> Result:
        """From one of ``Evaluation.rows()`` (a cell that is absent or NaN: None)."""
        def given(key):
            value = row.get(key)
            return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
        pair = lambda low, high: None if given(low) is None else (given(low), given(high))
        return cls(row["system"], row["metric"], float(row["score"]), pair("low", "high"), given("diff"),
                   pair("diff_low", "diff_high"), given("p_bootstrap"), given("p_adjusted"), given("p_stepdown"),
                   given("p_randomization"),
                   row.get("tokenizer", ""), row.get("signature", ""))
