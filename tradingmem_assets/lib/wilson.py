"""Wilson score interval: how sure we are of a success rate seen on a small sample.

Its lower bound penalizes small samples, so one lucky success (1 of 1 -> 0.21) never outranks a
steady record (15 of 30 -> 0.33). ``z = 1.96`` is the two-sided 95 % normal quantile (SPEC
sections 8 and 17). Without trials the lower bound is 0 and the interval is [0, 1] (nothing known).
"""

from __future__ import annotations

import math

import numpy as np

Z_95 = 1.96


def _score(successes: int | float, trials: int | float, z: float) -> tuple[float, float, float]:
    """(centre, margin, scale) of the Wilson interval: its ends are (centre -+ margin) / scale."""
    if successes < 0 or successes > trials:
        raise ValueError(f"successes must be within 0..trials, got {successes} of {trials}")
    n = float(trials)
    p = successes / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return centre, margin, 1 + z2 / n


def _scores(
    successes: np.ndarray, trials: np.ndarray, z: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``_score`` over arrays: (successes, trials, centre, margin, scale), one trial assumed where
    there are none (the callers mask those)."""
    s = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    safe = np.where(n > 0, n, 1.0)
    p = s / safe
    z2 = z * z
    centre = p + z2 / (2 * safe)
    margin = z * np.sqrt(np.clip(p * (1 - p) / safe + z2 / (4 * safe * safe), 0.0, None))
    return s, n, centre, margin, 1 + z2 / safe


def wilson_lower_bound(successes: int | float, trials: int | float, z: float = Z_95) -> float:
    """Lower bound of the Wilson score interval for ``successes`` out of ``trials`` (0 when no trials)."""
    if trials <= 0:
        return 0.0
    centre, margin, scale = _score(successes, trials, z)
    return max(0.0, (centre - margin) / scale)


def wilson_lower_bounds(successes: np.ndarray, trials: np.ndarray, z: float = Z_95) -> np.ndarray:
    """Vectorized ``wilson_lower_bound`` over arrays (0 where there are no trials)."""
    _, n, centre, margin, scale = _scores(successes, trials, z)
    return np.where(n > 0, np.clip((centre - margin) / scale, 0.0, 1.0), 0.0)


def wilson_interval(successes: int | float, trials: int | float, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval (low, high) for ``successes`` out of ``trials`` ((0, 1) without trials)."""
    if trials <= 0:
        return 0.0, 1.0
    centre, margin, scale = _score(successes, trials, z)
    low = 0.0 if successes == 0 else max(0.0, (centre - margin) / scale)  # exact ends, no rounding noise
    high = 1.0 if successes == trials else min(1.0, (centre + margin) / scale)
    return low, high


def wilson_intervals(
    successes: np.ndarray, trials: np.ndarray, z: float = Z_95
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized ``wilson_interval`` over arrays: (lows, highs), [0, 1] where there are no trials."""
    s, n, centre, margin, scale = _scores(successes, trials, z)
    low = np.where((n > 0) & (s > 0), np.clip((centre - margin) / scale, 0.0, 1.0), 0.0)
    high = np.where((n > 0) & (s < n), np.clip((centre + margin) / scale, 0.0, 1.0), 1.0)
    return low, high
