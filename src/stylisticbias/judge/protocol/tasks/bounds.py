"""phi's range under undecided mass (numpy only: the scores' pandas and columnar engines share it).

Undecided (pruned) answer mass is left out of phi; had it gone to either pole, phi would lie in
``[pos / (valid + u), (pos + u) / (valid + u)]`` (:mod:`stylisticbias.scores`).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def phi_bounds(pos: Any, valid: Any, und: Any) -> tuple[np.ndarray, np.ndarray]:
    """phi's range when the undecided mass ``und`` could have gone to either pole (arrays or
    Series of one value per cell; NaN where no mass is decided or undecided)."""
    tot = np.asarray(valid + und, dtype=np.float64)
    p, u = np.asarray(pos, dtype=np.float64), np.asarray(und, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(tot > 0, p / np.where(tot > 0, tot, 1.0), np.nan)
        hi = np.where(tot > 0, (p + u) / np.where(tot > 0, tot, 1.0), np.nan)
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
