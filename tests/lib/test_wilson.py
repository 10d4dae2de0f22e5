"""Wilson lower bound: values against an independent reference, and why it ranks evidence well."""

import math

import numpy as np
import pytest

from tradingmem_assets.lib.wilson import wilson_lower_bound, wilson_lower_bounds


def reference(successes: int, n: int, z: float = 1.96) -> float:
    """Wilson's interval written as centre minus half-width over (n + z^2), from raw counts."""
    if n == 0:
        return 0.0
    p = successes / n
    centre = (successes + z * z / 2) / (n + z * z)
    half = (z * math.sqrt(n) / (n + z * z)) * math.sqrt(p * (1 - p) + z * z / (4 * n))
    return max(0.0, centre - half)


@pytest.mark.parametrize(
    ("successes", "n", "approx"),
    [(15, 30, 0.3315), (1, 1, 0.2065), (0, 10, 0.0), (10, 10, 0.7225), (7, 20, 0.1812), (55, 100, 0.4524)],
)
def test_wilson_lower_bound_matches_independent_reference(successes, n, approx):
    got = wilson_lower_bound(successes, n)
    assert got == pytest.approx(reference(successes, n), abs=1e-12)
    assert got == pytest.approx(approx, abs=5e-4)


def test_one_lucky_success_never_outranks_a_steady_record():
    assert wilson_lower_bound(1, 1) < wilson_lower_bound(15, 30)


def test_vectorized_bounds_equal_the_scalar_ones_and_zero_without_trials():
    s = np.array([0, 1, 15, 0, 9, 3])
    n = np.array([0, 1, 30, 10, 9, 7])
    got = wilson_lower_bounds(s, n)
    assert got.tolist() == pytest.approx([reference(a, b) for a, b in zip(s, n, strict=True)], abs=1e-12)
    assert got[0] == 0.0


def test_more_successes_than_trials_is_refused():
    with pytest.raises(ValueError, match="within 0..trials"):
        wilson_lower_bound(3, 2)
