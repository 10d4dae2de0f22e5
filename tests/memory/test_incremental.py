"""Memory promotion after the last run on an unchanged past decides again only the units a later
instant can change, and both tables equal a full build's (SPEC section 14)."""

import shutil

import duckdb
import pytest

from tests.incremental import at, forget_state, materialization_metadata, rows, run, touched_count
from tradingmem_assets.benchmark.days import landing_until
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import tables

# far apart: units are created, get evidence, become valid, expire and go stale in between
STEPS = ("2024-03-04T00:00:00Z", "2024-04-22T00:00:00Z", "2024-06-10T00:00:00Z")
ASSET = "memory_promotions"
COMPARED = (tables.MEMORY_PROMOTIONS, tables.USER_FACTS)


PLANNED = "mu_planned_valid_later"  # known before the first step, valid only from between the first two


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("promotion_world")
    write_demo_world(root, scale=0.004, seed=31)
    path = root / "memory_unit.parquet"
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            f"""COPY (
                SELECT * FROM read_parquet('{path}')
                UNION ALL
                (SELECT * REPLACE ('{PLANNED}' AS unit_id, 0.95 AS confidence, 3 AS evidence_count,
                                   0 AS conflict_count, TIMESTAMPTZ '2024-01-02' AS created_at,
                                   TIMESTAMPTZ '2024-01-02' AS updated_at,
                                   TIMESTAMPTZ '2024-04-01' AS valid_from,
                                   NULL AS valid_until)
                 FROM read_parquet('{path}') LIMIT 1)
            ) TO '{path}.new' (FORMAT parquet)"""
        )
    shutil.move(f"{path}.new", path)
    return root


def _statuses(db) -> dict[str, str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return dict(con.execute(f"SELECT unit_id, status FROM {tables.MEMORY_PROMOTIONS}").fetchall())


def test_incremental_promotions_equal_a_full_build(tmp_path, world, instance):
    """The same landing files at later instants: every decision and fact equals the full build's,
    and units decided before change their status in between (not only new units are decided)."""
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    run(instance, incremental, world, STEPS[0])
    shutil.copy(incremental, full)
    moved = set()
    for as_of in STEPS[1:]:
        before = _statuses(incremental)
        metadata = materialization_metadata(instance, run(instance, incremental, world, as_of).run_id, ASSET)
        touched = touched_count(metadata, "built")
        forget_state(full, tables.MEMORY_PROMOTIONS)
        full_metadata = materialization_metadata(instance, run(instance, full, world, as_of).run_id, ASSET)
        assert full_metadata["built"].startswith("every unit")
        assert rows(incremental, COMPARED) == rows(full, COMPARED)
        after = _statuses(incremental)
        moved |= {(u, before[u], after[u]) for u in before if before[u] != after[u]}
        assert 0 < touched < len(after)
    # the instants themselves moved decisions: units expired and went stale, one became valid
    transitions = {(old, new) for _, old, new in moved}
    assert transitions & {("promoted", "expired"), ("awaiting_adjudication", "expired")}
    assert transitions & {("promoted", "stale"), ("below_threshold", "stale")}
    assert (PLANNED, "not_yet_valid", "promoted") in moved


def test_new_landing_rows_are_decided_incrementally_as_a_full_build_would(tmp_path, world, instance):
    """Landing files grown by the weeks since keep the basis; evidence backdated before the last
    build does not (the past changed: every unit is decided again)."""
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    landing = tmp_path / "landing"
    landing_until(world, landing, at(STEPS[0]))
    run(instance, incremental, landing, STEPS[0])
    shutil.copy(incremental, full)
    landing_until(world, landing, at(STEPS[1]))
    metadata = materialization_metadata(instance, run(instance, incremental, landing, STEPS[1]).run_id, ASSET)
    assert touched_count(metadata, "built") > 0
    forget_state(full, tables.MEMORY_PROMOTIONS)
    run(instance, full, landing, STEPS[1])
    assert rows(incremental, COMPARED) == rows(full, COMPARED)
    # one evidence row moved back before the last build: what that build saw changed
    path = landing / "memory_evidence.parquet"
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            "COPY (SELECT * REPLACE (CASE WHEN row_number() OVER () = 1 THEN created_at - INTERVAL 400 DAY "
            f"ELSE created_at END AS created_at) FROM read_parquet('{path}')) "
            f"TO '{path}.new' (FORMAT parquet)"
        )
    shutil.move(f"{path}.new", path)
    metadata = materialization_metadata(instance, run(instance, incremental, landing, STEPS[2]).run_id, ASSET)
    assert metadata["built"].startswith("every unit")


def test_a_hand_edited_promotion_table_is_built_in_full(tmp_path, world, instance):
    db = tmp_path / "w.duckdb"
    run(instance, db, world, STEPS[0])
    with duckdb.connect(str(db)) as con:
        con.execute(f"UPDATE {tables.USER_FACTS} SET fact_value = 'edited' WHERE rowid = 0")
    metadata = materialization_metadata(instance, run(instance, db, world, STEPS[1]).run_id, ASSET)
    assert metadata["built"].startswith("every unit")
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(
            f"SELECT count(*) FROM {tables.USER_FACTS} WHERE fact_value = 'edited'"
        ).fetchall() == [(0,)]
