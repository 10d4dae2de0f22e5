"""known_at of every learned table against instants computed independently from the raw chain."""

from __future__ import annotations

import pytest

from tests.world import World
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib.registry import load_registry
from tradingmem_assets.settings import SETTINGS

T = "2024-07-01T00:00:00Z"


@pytest.fixture(scope="module")
def demo(tmp_path_factory, instance) -> World:
    world = World(tmp_path_factory.mktemp("known_at"), instance, as_of=T)
    write_demo_world(world.landing, scale=0.003, seed=2)
    assert world.materialize().success
    return world


def mismatches(world: World, sql: str) -> int:
    return world.rows(f"SELECT count(*) FROM ({sql})")[0][0]


def test_evaluation_runs_are_known_at_their_window_end_and_pending_ones_never(demo):
    assert (
        demo.rows("SELECT count(*) FROM evaluation_runs WHERE status = 'pending' AND known_at IS NOT NULL")[
            0
        ][0]
        == 0
    )
    assert (
        mismatches(
            demo,
            "SELECT r.run_id FROM evaluation_runs r JOIN raw.trade_executions e USING (execution_id) "
            "JOIN raw.benchmark_profiles p USING (profile_id) WHERE r.run_version = 1 "
            "AND r.known_at <> e.executed_at + to_days(p.horizon_days::INTEGER)",
        )
        == 0
    )


def test_role_cases_are_known_when_they_reached_their_status(demo):
    eligible = (
        "SELECT rc.case_id FROM role_cases rc JOIN evaluation_runs r ON r.run_id = rc.primary_run_id "
        "JOIN (SELECT execution_id, max(closed_at) AS closed_at FROM raw.position_lifecycles GROUP BY 1) p "
        "ON p.execution_id = rc.execution_id "
        "WHERE rc.status = 'eligible' AND rc.known_at <> greatest(p.closed_at, r.known_at)"
    )
    assert mismatches(demo, eligible) == 0
    ruled_out = (
        "SELECT rc.case_id FROM role_cases rc JOIN raw.trading_decisions d USING (decision_id) "
        "LEFT JOIN raw.trade_executions e ON e.execution_id = rc.execution_id "
        "WHERE rc.status IN ('ineligible', 'quarantined') "
        "AND rc.known_at < greatest(d.decided_at, coalesce(e.executed_at, d.decided_at))"
    )
    assert mismatches(demo, ruled_out) == 0
    assert (
        demo.rows("SELECT count(*) FROM role_cases WHERE status = 'pending' AND known_at IS NOT NULL")[0][0]
        == 0
    )


def test_reflections_are_known_at_maturity_or_their_runs_settlement(demo):
    maturity = ", ".join(
        f"('{r['role_id']}', {int(r['maturity_days'])})" for r in load_registry(SETTINGS.roles_file).rows()
    )
    checked = (
        "SELECT rr.reflection_id, rr.known_at = greatest(p.closed_at + to_days(m.days), r.known_at) AS ok "
        "FROM role_reflections rr JOIN role_cases rc USING (case_id) "
        "JOIN evaluation_runs r ON r.run_id = rr.run_id "
        f"JOIN (VALUES {maturity}) m(role_id, days) ON m.role_id = rc.role_id "
        "JOIN (SELECT execution_id, max(closed_at) AS closed_at FROM raw.position_lifecycles GROUP BY 1) p "
        "ON p.execution_id = rc.execution_id WHERE rr.reflector = 'deterministic'"
    )
    rows = demo.rows(f"SELECT count(*), count(*) FILTER (WHERE ok) FROM ({checked})")[0]
    assert rows[0] > 0 and rows[0] == rows[1]
    assert demo.rows("SELECT count(*) FROM role_reflections WHERE known_at > ?", [T])[0][0] == 0


def test_ladder_rows_are_known_at_the_run_start_plus_the_window(demo):
    for table in ("methodology_cases", "institution_reflections"):
        assert (
            mismatches(
                demo,
                f"SELECT 1 FROM {table} t JOIN raw.institution_runs r USING (run_id) "
                'WHERE t.known_at <> r.started_at + to_days(t."window"::INTEGER)',
            )
            == 0
        ), table


def test_methodologies_are_known_at_their_first_accepted_proposal(demo):
    assert (
        mismatches(
            demo,
            "SELECT m.methodology_id FROM methodologies m JOIN ("
            "SELECT methodology_id, min(ts) AS first FROM methodology_lifecycle_events "
            "WHERE event = 'created' GROUP BY 1) e USING (methodology_id) WHERE m.known_at <> e.first",
        )
        == 0
    )
    assert (
        mismatches(
            demo,
            "SELECT m.methodology_id FROM methodologies m WHERE m.graduated_at IS NOT NULL AND m.graduated_at <> ("
            "SELECT max(ts) FROM methodology_lifecycle_events e WHERE e.methodology_id = m.methodology_id "
            "AND e.event = 'graduated')",
        )
        == 0
    )


def test_learnings_and_user_facts_are_known_when_their_source_was(demo):
    assert (
        mismatches(
            demo,
            "SELECT l.learning_id FROM learnings l WHERE l.known_at <> (SELECT min(started_at) FROM learning_reviews r "
            "WHERE r.learning_id = l.learning_id)",
        )
        == 0
    )
    assert (
        mismatches(
            demo,
            "SELECT f.fact_id FROM user_facts f JOIN raw.memory_unit u ON u.unit_id = f.source_unit_id "
            "WHERE f.known_at <> u.updated_at",
        )
        == 0
    )
