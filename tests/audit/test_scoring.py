"""The six audit dimensions, the composite and the tiers, as pure functions over plain rows."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from tests.audit.world import AS_OF, EXPECTED, EXPECTED_COMPOSITE, days_ago, healthy_learning_state
from tradingmem_assets.defs.audit import scoring as s

WINDOW = s.AuditWindow.ending(AS_OF, 30)


def ev(event: str, days: float, mid: str | None = "m1") -> dict:
    return {"methodology_id": mid, "event": event, "ts": days_ago(days)}


def m(mid: str, *, quarantine: int = 0, graduated: float | None = 20, created: float = 25) -> dict:
    return {
        "methodology_id": mid,
        "quarantine": quarantine,
        "graduated_at": None if graduated is None else days_ago(graduated),
        "created_at": days_ago(created),
    }


def case(mid: str, j: int, correct: bool, days: float = 5, run: str = "r1") -> dict:
    return {
        "case_id": f"{mid}_{j}",
        "methodology_id": mid,
        "run_id": run,
        "correct": correct,
        "recorded_at": days_ago(days),
    }


# --- null thresholds -----------------------------------------------------------------------------


def test_synthesis_quality_is_null_under_five_candidates_and_scored_at_five():
    four = [ev("created", 1), ev("merged", 2), ev("rejected_invalid", 3), ev("created", 4)]
    assert s.synthesis_quality(four, WINDOW).score is None
    five = [*four, ev("rejected_injection", 5)]
    assert s.synthesis_quality(five, WINDOW).score == pytest.approx(60.0)


def test_synthesis_quality_counts_only_candidates_inside_the_window():
    rows = [ev("created", d) for d in (1, 2, 3, 4)] + [ev("rejected_invalid", 31)]
    assert s.synthesis_quality(rows, WINDOW).score is None  # the fifth is older than the window


def graduated_world(n_methodologies: int, outcomes: int, correct: int):
    ms = [m(f"m{i}") for i in range(n_methodologies)]
    cases = [
        case(f"m{i}", j, j < correct, days=10 - j * 0.1)
        for i in range(n_methodologies)
        for j in range(outcomes)
    ]
    return ms, cases


def test_graduation_fp_rate_is_null_under_three_qualifying_methodologies_and_scored_at_three():
    ms, cases = graduated_world(2, 5, 5)
    assert s.graduation_fp_rate(ms, [], cases, WINDOW).score is None
    ms, cases = graduated_world(3, 5, 5)
    assert s.graduation_fp_rate(ms, [], cases, WINDOW).score == pytest.approx(100.0)


def test_graduation_fp_rate_counts_only_methodologies_with_five_outcomes_after_graduation():
    ms, cases = graduated_world(3, 4, 4)  # 4 outcomes each: none qualifies
    assert s.graduation_fp_rate(ms, [], cases, WINDOW).score is None
    # outcomes recorded before graduation do not count either
    ms = [m(f"m{i}", graduated=3) for i in range(3)]
    _, cases = graduated_world(3, 5, 5)
    assert s.graduation_fp_rate(ms, [], cases, WINDOW).score is None


def test_graduation_fp_rate_flags_a_graduation_whose_accuracy_falls_below_one_half():
    ms, cases = graduated_world(3, 6, 6)
    cases = [c if c["methodology_id"] != "m0" else {**c, "correct": c["case_id"] < "m0_2"} for c in cases]
    result = s.graduation_fp_rate(ms, [], cases, WINDOW)
    assert result.score == pytest.approx(100 * 2 / 3)
    high = [f for f in result.findings if f.code == "injectable_below_chance"]
    assert high and high[0].severity == "high" and high[0].detail["methodology_ids"] == ["m0"]


def test_graduation_time_comes_from_the_graduated_event_when_the_row_has_none():
    ms = [m(f"m{i}", graduated=None) for i in range(3)]
    events = [ev("graduated", 20, f"m{i}") for i in range(3)]
    _, cases = graduated_world(3, 5, 5)
    assert s.graduation_fp_rate(ms, events, cases, WINDOW).score == pytest.approx(100.0)


def test_attribution_integrity_is_null_without_cases_or_hints_and_scored_with_one():
    assert s.attribution_integrity([], [], [m("m1")], [{"run_id": "r1"}], WINDOW).score is None
    result = s.attribution_integrity([case("m1", 0, True)], [], [m("m1")], [{"run_id": "r1"}], WINDOW)
    assert result.score == pytest.approx(100.0)


def test_attribution_integrity_breaks_on_unknown_run_unknown_methodology_and_uninjectable_hint():
    cases = [case("m1", 0, True), case("m1", 1, True, run="r_missing"), case("m_gone", 2, True)]
    hints = [
        {
            "methodology_id": "m1",
            "run_id": "r1",
            "injection_id": "i1",
            "injected_at": days_ago(2),
            "injectable_at_injection": True,
        },
        {
            "methodology_id": "m1",
            "run_id": "r1",
            "injection_id": "i2",
            "injected_at": days_ago(2),
            "injectable_at_injection": False,
        },
    ]
    result = s.attribution_integrity(cases, hints, [m("m1")], [{"run_id": "r1"}], WINDOW)
    assert result.score == pytest.approx(100 * 2 / 5)
    assert {f.code for f in result.findings} >= {
        "unknown_run",
        "unknown_methodology",
        "injected_while_quarantined",
    }


def test_coverage_health_is_null_without_methodologies_and_scored_with_one():
    assert s.coverage_health([], [], WINDOW).score is None
    assert s.coverage_health([m("m1")], [], WINDOW).score == pytest.approx(0.0)
    assert s.coverage_health([m("m1")], [case("m1", 0, True)], WINDOW).score == pytest.approx(100.0)


def test_coverage_health_ignores_outcomes_outside_the_window():
    assert s.coverage_health([m("m1")], [case("m1", 0, True, days=40)], WINDOW).score == pytest.approx(0.0)


def test_quarantine_churn_is_null_without_graduation_or_demotion_and_scored_with_one():
    assert s.quarantine_churn([ev("created", 1)], WINDOW).score is None
    assert s.quarantine_churn([ev("graduated", 1)], WINDOW).score == pytest.approx(100.0)
    both = [ev("graduated", 3), ev("demoted", 1), ev("graduated", 2, "m2")]
    assert s.quarantine_churn(both, WINDOW).score == pytest.approx(50.0)


def test_cron_health_is_null_without_any_heartbeat_and_scored_with_one():
    assert s.cron_health([], WINDOW).score is None
    assert s.cron_health([{"status": "ok", "ts": days_ago(0.5)}], WINDOW).score == pytest.approx(100.0)


def test_cron_health_expects_one_heartbeat_a_day_over_the_window():
    beats = [{"status": "ok", "ts": days_ago(i)} for i in range(0, 30, 2)]  # every other day since d29 ago
    beats.append({"status": "ok", "ts": days_ago(40)})  # an old one: the deployment predates the window
    result = s.cron_health(beats, WINDOW)
    assert result.score == pytest.approx(100 * 15 / 30)
    failed = s.cron_health([{"status": "failed", "ts": days_ago(0.5)}], WINDOW)
    assert failed.score == 0.0 and any(f.code == "failed_runs" for f in failed.findings)


def test_cron_health_reports_a_silent_learning_loop_as_high():
    result = s.cron_health([{"status": "ok", "ts": days_ago(5)}], WINDOW)
    assert any(f.code == "stale_heartbeat" and f.severity == "high" for f in result.findings)


# --- composite and tiers --------------------------------------------------------------------------


def test_composite_drops_null_dimensions_and_renormalizes_the_weights():
    scores = {
        "synthesis_quality": 50.0,
        "graduation_fp_rate": None,
        "attribution_integrity": 100.0,
        "coverage_health": None,
        "quarantine_churn": None,
        "cron_health": 80.0,
    }
    composite, weights = s.composite_score(scores)
    total = 0.22 + 0.22 + 0.12
    assert weights == pytest.approx(
        {
            "synthesis_quality": 0.22 / total,
            "attribution_integrity": 0.22 / total,
            "cron_health": 0.12 / total,
        }
    )
    assert sum(weights.values()) == pytest.approx(1.0)
    assert composite == pytest.approx((0.22 * 50 + 0.22 * 100 + 0.12 * 80) / total)


def test_composite_of_all_null_dimensions_is_none_with_tier_insufficient_data():
    composite, weights = s.composite_score(dict.fromkeys(s.DIMENSIONS))
    assert composite is None and weights == {}
    assert s.tier_of(composite) == "insufficient_data"
    empty = s.score_audit(s.AuditInputs(), WINDOW)
    assert empty.composite is None and empty.tier == "insufficient_data"


@pytest.mark.parametrize(
    ("composite", "tier"),
    [
        (100.0, "healthy"),
        (80.0, "healthy"),
        (79.99, "watch"),
        (60.0, "watch"),
        (59.99, "degraded"),
        (40.0, "degraded"),
        (39.99, "alarm"),
        (0.0, "alarm"),
    ],
)
def test_tier_boundaries(composite, tier):
    assert s.tier_of(composite) == tier


def test_a_switched_off_audit_is_tier_disabled_whatever_the_score():
    assert s.tier_of(95.0, enabled=False) == "disabled"
    off = s.disabled_score()
    assert off.tier == "disabled" and off.composite is None and off.weights_used == {}


def test_a_full_pass_over_the_healthy_world_matches_the_hand_computed_scores():
    state = healthy_learning_state()
    inputs = s.AuditInputs(
        methodologies=state["main.methodologies"],
        lifecycle_events=state["main.methodology_lifecycle_events"],
        cases=state["main.methodology_cases"],
        case_hints=state["main.methodology_case_hints"],
        heartbeats=state["main.methodology_cron_runs"],
        known_run_ids=state["raw.institution_runs"],
    )
    result = s.score_audit(inputs, WINDOW)
    assert result.dimension_scores == pytest.approx(EXPECTED)
    assert result.composite == pytest.approx(EXPECTED_COMPOSITE)
    assert result.tier == "healthy"
    # the same rows as Polars frames score the same
    as_frames = s.AuditInputs(**{k: pl.DataFrame(v) for k, v in inputs.__dict__.items()})
    assert s.score_audit(as_frames, WINDOW).composite == pytest.approx(EXPECTED_COMPOSITE)


def test_findings_are_sorted_high_first_and_carry_a_known_severity():
    cases = [case("m1", 0, True, run="r_missing")]
    result = s.score_audit(
        s.AuditInputs(
            methodologies=[m("m1")], cases=cases, heartbeats=[{"status": "ok", "ts": days_ago(0.2)}]
        ),
        WINDOW,
    )
    severities = [f["severity"] for f in result.findings]
    assert set(severities) <= set(s.SEVERITIES)
    assert severities == sorted(severities, key=s.SEVERITIES.index)
    assert severities[0] == "high"


def test_a_learning_table_without_a_needed_column_is_a_clear_error():
    with pytest.raises(s.AuditInputError, match="methodology_cases.*recorded_at"):
        s.coverage_health([m("m1")], pl.DataFrame({"methodology_id": ["m1"]}), WINDOW)


def test_the_window_is_closed_at_both_ends():
    window = s.AuditWindow.ending(AS_OF, 1)
    assert window.start == AS_OF - timedelta(days=1)
    # graduated exactly at the start and demoted exactly at as_of: both inside, so it flapped
    assert s.quarantine_churn([ev("graduated", 1), ev("demoted", 0)], window).score == pytest.approx(0.0)
    # a millisecond before the start is outside
    just_before = ev("graduated", 1 + 1 / 86_400_000)
    assert s.quarantine_churn([just_before, ev("demoted", 0)], window).score == pytest.approx(100.0)


def test_pass_ids_differ_per_run_and_are_stable_for_the_same_run():
    assert s.pass_id_for(AS_OF, "run-1") == s.pass_id_for(AS_OF, "run-1")
    assert s.pass_id_for(AS_OF, "run-1") != s.pass_id_for(AS_OF, "run-2")
    assert s.pass_id_for(AS_OF, "run-1").startswith("ap_")
