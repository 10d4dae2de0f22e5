"""The verdict rule and the Wilson interval (SPEC section 17), against hand numbers and over many counts."""

import math

import polars as pl
import pytest

from tradingmem_assets.defs.efficacy.verdicts import (
    COUNT_COLUMNS,
    INSUFFICIENT_DATA,
    MIN_OUTCOMES,
    VERDICTS,
    markdown,
    strongest_effects,
    verdict,
    verdict_counts,
    with_verdicts,
)
from tradingmem_assets.lib.wilson import wilson_interval, wilson_intervals, wilson_lower_bound

Z = 1.96
# a spread of sample sizes around the 10-outcome floor, every win count of each
SIZES = (0, 1, 2, 5, 9, 10, 11, 12, 15, 20, 30, 50)
COUNTS = [(n, w) for n in SIZES for w in range(n + 1)]


def reference(wins: int, n: int) -> tuple[float, float]:
    """Wilson's interval from raw counts: (w + z^2/2 -/+ z sqrt(w (n - w) / n + z^2 / 4)) / (n + z^2)."""
    if n == 0:
        return 0.0, 1.0
    half = Z * math.sqrt(wins * (n - wins) / n + Z * Z / 4)
    return (wins + Z * Z / 2 - half) / (n + Z * Z), (wins + Z * Z / 2 + half) / (n + Z * Z)


@pytest.mark.parametrize(
    ("wins", "n", "low", "high"),
    [
        (3, 12, 0.0889, 0.5323),
        (10, 12, 0.5520, 0.9530),
        (2, 10, 0.0567, 0.5098),
        (0, 27, 0.0, 0.1246),
        (30, 30, 0.8865, 1.0),
        (5, 10, 0.2366, 0.7634),
    ],
)
def test_wilson_interval_by_hand(wins, n, low, high):
    got = wilson_interval(wins, n)
    assert got == pytest.approx((low, high), abs=5e-5)
    assert got == pytest.approx(reference(wins, n), abs=1e-12)
    assert got[0] == pytest.approx(wilson_lower_bound(wins, n), abs=1e-12)


def test_the_briefs_example_helps_and_its_mirror_hurts():
    # 12 before with 3 wins [0.089, 0.532], 12 after with 10 wins [0.552, 0.953]: no overlap, above
    assert verdict(12, 3, 12, 10) == "helps"
    assert verdict(12, 10, 12, 3) == "hurts"
    assert verdict(12, 3, 12, 9) == "no_evidence"  # 9 of 12: [0.468, 0.911] overlaps
    assert verdict(9, 0, 50, 50) == INSUFFICIENT_DATA  # a side under 10 outcomes, whatever the rates
    assert verdict(12, 3, 0, 0) == INSUFFICIENT_DATA


def test_intervals_are_proper_and_match_the_reference_everywhere():
    for n, w in COUNTS:
        low, high = wilson_interval(w, n)
        ref_low, ref_high = reference(w, n)
        assert low == pytest.approx(max(0.0, ref_low), abs=1e-12) and high == pytest.approx(
            min(1.0, ref_high), abs=1e-12
        )
        assert 0.0 <= low <= high <= 1.0
        if n:
            assert low <= w / n <= high
        assert (low == 0.0) == (w == 0) and (high == 1.0) == (w == n)
    lows, highs = wilson_intervals([w for _, w in COUNTS], [n for n, _ in COUNTS])
    for (n, w), low, high in zip(COUNTS, lows, highs, strict=True):
        assert (low, high) == pytest.approx(wilson_interval(w, n), abs=1e-15)


def test_intervals_narrow_as_evidence_grows():
    widths = [(lambda lo, hi: hi - lo)(*wilson_interval(k, 2 * k)) for k in (5, 10, 20, 40, 80)]
    assert widths == sorted(widths, reverse=True)


def test_verdict_rule_over_every_pair_of_counts():
    seen = set()
    for nb, wb in COUNTS:
        before_low, before_high = wilson_interval(wb, nb)
        for na, wa in COUNTS:
            got = verdict(nb, wb, na, wa)
            seen.add(got)
            after_low, after_high = wilson_interval(wa, na)
            if nb < MIN_OUTCOMES or na < MIN_OUTCOMES:
                assert got == INSUFFICIENT_DATA
                continue
            expected = (
                "helps" if after_low > before_high else "hurts" if after_high < before_low else "no_evidence"
            )
            assert got == expected
            # swapping the sides swaps helps and hurts
            assert verdict(na, wa, nb, wb) == {"helps": "hurts", "hurts": "helps"}.get(got, got)
            if got == "helps":  # more wins after (or fewer before) can only keep it helping
                assert wa == na or verdict(nb, wb, na, wa + 1) == "helps"
                assert wb == 0 or verdict(nb, wb - 1, na, wa) == "helps"
            if (nb, wb) == (na, wa):
                assert got == "no_evidence"
    assert seen == set(VERDICTS)


def test_the_frame_rule_equals_the_scalar_rule():
    pairs = [(nb, wb, na, wa) for nb, wb in COUNTS[::3] for na, wa in COUNTS[::2]]
    counts = pl.DataFrame(
        {
            "subject_kind": ["lesson"] * len(pairs),
            "subject_id": [f"s{i}" for i in range(len(pairs))],
            "role_id": [None] * len(pairs),
            "scope": ["role"] * len(pairs),
            "before_n": [p[0] for p in pairs],
            "before_wins": [p[1] for p in pairs],
            "after_n": [p[2] for p in pairs],
            "after_wins": [p[3] for p in pairs],
            "mean_excess_before": [None] * len(pairs),
            "mean_excess_after": [None] * len(pairs),
            "as_of": [None] * len(pairs),
        },
        schema_overrides={
            "role_id": pl.String,
            "mean_excess_before": pl.Float64,
            "mean_excess_after": pl.Float64,
            "as_of": pl.Datetime("us", "UTC"),
        },
    ).select(COUNT_COLUMNS)
    rows = with_verdicts(counts)
    assert rows.get_column("verdict").to_list() == [verdict(*p) for p in pairs]
    for row, (nb, wb, na, wa) in zip(rows.iter_rows(named=True), pairs, strict=True):
        assert (row["before_low"], row["before_high"]) == pytest.approx(wilson_interval(wb, nb), abs=1e-15)
        assert row["after_win_rate"] == (None if na == 0 else pytest.approx(wa / na))
    assert sum(verdict_counts(rows).values()) == rows.height
    table = markdown(strongest_effects(rows, limit=5))
    assert table.count("\n") == 6 and INSUFFICIENT_DATA not in table  # header, rule, five rows
