"""Would the pick also win on new images? ``evaluate``'s paired test, beside an exact answer (issue 57).

Where every model was scored on every image, the pick is the best on these images, exactly; whether
it would also be the best on other images drawn like them is a paired test's question. This is
``evaluate``'s (``evaluation.significance.compare``): the paired bootstrap over the same resampled
images for every model, the pick first, and the single-step max-T family over its comparisons with
each other model (so the chance of any false "better" among them is at most 5%), with the same
resamples, trials and seed as ``evaluate`` by default; ``evaluate --idf-from all`` on the same files
gives the same differences and adjusted p-values.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

PAIRED_COLUMNS = ["diff", "diff_low", "diff_high", "p_adjusted"]


def paired_on_new_images(scores: np.ndarray, names, picked: int, raced) -> pd.DataFrame:
    """One row per model (``scores: f64[M, I]``, the per-image scores of every model raced on every
    image; corpus score = their mean), indexed by model: ``diff`` (its score minus the pick's),
    ``diff_low``/``diff_high`` (the max-T family's simultaneous 95% interval of it) and ``p_adjusted``;
    NaN on the pick's row and for models not raced. ``better`` says where the pick is shown better
    on new images (``diff_high < 0``)."""
    from ..evaluation.significance import Resampling, compare
    from ..postgen.base import PostgenMetric
    order = [picked] + [int(c) for c in raced if c != picked]
    labels = [f"m{c}" for c in order]  # names may repeat after labelling; positions do not
    stats = {label: {"score": np.asarray(scores[c], np.float64)[:, None]} for label, c in zip(labels, order)}
    found = compare({"score": PostgenMetric()}, stats, Resampling()).set_index("system")
    table = pd.DataFrame(np.nan, index=range(len(names)), columns=PAIRED_COLUMNS)
    for label, c in zip(labels[1:], order[1:]):
        table.loc[c, PAIRED_COLUMNS] = found.loc[label, PAIRED_COLUMNS].to_numpy(np.float64)
    table["better"] = table["diff_high"] < 0
    return table
