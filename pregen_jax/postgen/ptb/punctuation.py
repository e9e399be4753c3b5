# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
#   (coco-caption / pycocoevalcap, tokenizer/ptbtokenizer.py: Hao Fang, Tsung-Yi Lin)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: BSD-2-Clause-Views
"""pycocoevalcap's clean-up of the PTB tokenizer's output: its punctuation list, removed token by token.

Taken from coco-caption's ``tokenizer/ptbtokenizer.py`` (Hao Fang and Tsung-Yi Lin): the list as it
stands there, in its order, and the expression that drops its tokens from a line. So this file is
under coco-caption's licence (its ``license.txt``: BSD-2-Clause-Views, Copyright (c) 2015 Xinlei
Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam; docs/licensing.md).
"""
from __future__ import annotations

# pycocoevalcap's list (tokenizer/ptbtokenizer.py); compared after lower-casing, so "-LRB-" and the
# other bracket names never match a token (the lower-cased "-lrb-" survives, as in COCOEvalCap).
PUNCTUATIONS = frozenset(["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                          ".", "?", "!", ",", ":", "-", "--", "...", ";"])


def drop_punctuation(line: str) -> str:
    """One jar output line after pycocoevalcap's clean-up: split on single spaces, listed tokens removed."""
    return " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS)
