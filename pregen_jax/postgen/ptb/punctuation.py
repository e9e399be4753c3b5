# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""pycocoevalcap's clean-up of the PTB tokenizer's output: its punctuation list, removed token by token."""
from __future__ import annotations

# pycocoevalcap's list (tokenizer/ptbtokenizer.py); compared after lower-casing, so "-LRB-" and the
# other bracket names never match a token (the lower-cased "-lrb-" survives, as in COCOEvalCap).
PUNCTUATIONS = frozenset(["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                          ".", "?", "!", ",", ":", "-", "--", "...", ";"])


def drop_punctuation(line: str) -> str:
    """One jar output line after pycocoevalcap's clean-up: split on single spaces, listed tokens removed."""
    return " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS)
