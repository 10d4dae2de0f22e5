"""The equivalence that defines correctness (SPEC section 16): warehouse A built at T1 and warehouse B
built at T2 >= T1 from the same landing files answer every read as of T1 identically."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest

from tests.world import World
from tradingmem_assets.defs.learning.queries import methodologies_as_of
from tradingmem_assets.defs.role_memory.recall import search_cases
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib.registry import load_registry
from tradingmem_assets.settings import SETTINGS

# instants inside the trading history, the methodology ladder and the learning turns of the demo world
T1S = ("2013-06-01T00:00:00Z", "2023-06-15T00:00:00Z", "2024-03-15T12:00:00Z")
T2 = "2024-07-01T00:00:00Z"
QUERIES = ("valuation gap after earnings", "momentum breakout on volume", "funding rate flipped", "")
# ids of every learned table: what exists in A exists in B
ID_COLUMNS = {
    "evaluation_runs": "run_id",
    "role_cases": "case_id",
    "role_reflections": "reflection_id",
    "methodologies": "methodology_id",
    "methodology_lifecycle_events": "event_id",
    "methodology_cases": "case_id",
    "learnings": "learning_id",
}


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    root = tmp_path_factory.mktemp("pit_landing")
    write_demo_world(root, scale=0.003, seed=5)
    return root


@pytest.fixture(scope="module")
def warehouse_b(tmp_path_factory, landing, instance) -> World:
    world = World(tmp_path_factory.mktemp("pit_b"), instance, as_of=T2)
    world.landing = landing
    assert world.materialize().success
    return world


def build_a(tmp_path_factory, landing, instance, as_of: str) -> World:
    world = World(tmp_path_factory.mktemp("pit_a"), instance, as_of=as_of)
    world.landing = landing
    assert world.materialize().success
    return world


def _read(world: World, fn):
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        return fn(con)
    finally:
        con.close()


ROLES = sorted(r["role_id"] for r in load_registry(SETTINGS.roles_file).rows())


def recall_reads(world: World, as_of: datetime | None) -> dict:
    def reads(con):
        out = {}
        for role in ROLES:
            for query in QUERIES:
                hits = search_cases(con, role, query, k=10, as_of=as_of)
                # reflected_at is record time (when the warehouse wrote it): not part of the answer
                out[role, query] = [
                    {k: v for k, v in h.as_dict().items() if k != "reflected_at"} for h in hits
                ]
        return out

    return _read(world, reads)


@pytest.mark.parametrize("t1", T1S)
def test_reads_as_of_t1_on_a_later_warehouse_equal_those_of_one_built_at_t1(
    t1, tmp_path_factory, landing, warehouse_b, instance
):
    warehouse_a = build_a(tmp_path_factory, landing, instance, t1)
    at = instant(t1)

    a_recall, b_recall = recall_reads(warehouse_a, at), recall_reads(warehouse_b, at)
    assert any(a_recall.values()), "the world must have lessons known at T1 for this test to mean anything"
    assert a_recall == b_recall

    for injectable in (False, True):
        a_m = _read(warehouse_a, lambda con: methodologies_as_of(con, at, injectable=injectable))
        b_m = _read(warehouse_b, lambda con: methodologies_as_of(con, at, injectable=injectable))
        if (
            t1 >= "2023-06" and not injectable
        ):  # the demo's institution runs start in 2023: methodologies exist from then
            assert a_m.height > 0
        assert a_m.equals(b_m), f"methodologies as of {t1} (injectable={injectable}) differ"

    for table, column in ID_COLUMNS.items():
        a_ids = set(warehouse_a.query(f"SELECT {column} FROM main.{table}").to_series())
        b_ids = set(warehouse_b.query(f"SELECT {column} FROM main.{table}").to_series())
        assert a_ids <= b_ids, f"{table}: ids of A missing in B: {sorted(a_ids - b_ids)[:5]}"


def test_a_warehouse_grown_run_by_run_equals_one_built_at_once(
    tmp_path_factory, landing, warehouse_b, instance
):
    grown = build_a(tmp_path_factory, landing, instance, T1S[0])
    for as_of in (T1S[1], T2):
        assert grown.materialize(as_of=as_of).success
    for t in (*T1S, T2):
        assert recall_reads(grown, instant(t)) == recall_reads(warehouse_b, instant(t))
        assert _read(grown, lambda con: methodologies_as_of(con, instant(t))).equals(
            _read(warehouse_b, lambda con: methodologies_as_of(con, instant(t)))
        )
    for table, column in ID_COLUMNS.items():
        assert set(grown.query(f"SELECT {column} FROM main.{table}").to_series()) == set(
            warehouse_b.query(f"SELECT {column} FROM main.{table}").to_series()
        ), table
