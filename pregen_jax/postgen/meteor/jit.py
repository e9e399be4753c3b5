# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""numba compilation for METEOR's hot loops, its code cached in the user cache folder."""
from __future__ import annotations

import numba

from .resources import cache_folder


def compiled(function):
    """``numba.njit`` with its compiled code cached in ``cache_folder()/numba``, never beside the
    installed source: numba reads ``config.CACHE_DIR`` when the function is decorated."""
    previous = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = str(cache_folder() / "numba")
    try:
        return numba.njit(cache=True)(function)
    finally:
        numba.config.CACHE_DIR = previous
