"""The methodology ladder on a later day keeps its stored history and appends the rows that became
knowable since; its six tables then equal a full build's row for row, in their stored order too
(SPEC section 14). When the past changed, the tables are written whole, and still equal."""

import shutil

import duckdb
import pytest

from tests.incremental import at, materialization_metadata, run
from tradingmem_assets.benchmark.days import landing_until
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib.tables import METHODOLOGY_ASSETS

DAYS = ("2024-06-17T00:00:00Z", "2024-06-24T00:00:00Z", "2024-06-25T00:00:00Z")
HISTORY = ("institution_reflections", "methodology_lifecycle_events", "methodology_cases")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("ladder_world")
    write_demo_world(root, scale=0.004, seed=47)
    return root


def _tables(db) -> dict[str, list[tuple]]:
    """Every row of the ladder's tables in stored order: what a reader without ORDER BY sees."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: con.execute(f"SELECT * FROM main.{t}").fetchall() for t in METHODOLOGY_ASSETS}


def _written(instance, run_id: str) -> dict[str, str]:
    return {t: materialization_metadata(instance, run_id, t)["written"] for t in METHODOLOGY_ASSETS}


def _full_build(tmp_path, instance, landing, as_of: str) -> dict[str, list[tuple]]:
    db = tmp_path / f"full-{as_of[:10]}.duckdb"
    run(instance, db, landing, as_of)
    return _tables(db)


def test_a_later_day_appends_to_the_history_and_equals_a_full_build(tmp_path, world, instance):
    db, landing = tmp_path / "incremental.duckdb", tmp_path / "landing"
    landing_until(world, landing, at(DAYS[0]))
    first = _written(instance, run(instance, db, landing, DAYS[0]).run_id)
    assert all(how.startswith("written whole") for how in first.values()), first
    before = _tables(db)
    landing_until(world, landing, at(DAYS[1]))
    written = _written(instance, run(instance, db, landing, DAYS[1]).run_id)
    after = _tables(db)
    for table in HISTORY:  # a week of windows, outcomes and events: only the new rows were written
        assert written[table].startswith("appended"), (table, written[table])
        assert int(written[table].split()[1]) == len(after[table]) - len(before[table]) > 0, table
        assert after[table][: len(before[table])] == before[table], table
    assert after == _full_build(tmp_path, instance, landing, DAYS[1])


def test_a_changed_past_writes_the_history_whole_and_equals_a_full_build(tmp_path, world, instance):
    db, landing = tmp_path / "incremental.duckdb", tmp_path / "landing"
    landing_until(world, landing, at(DAYS[1]))
    run(instance, db, landing, DAYS[1])
    landing_until(world, landing, at(DAYS[2]))
    bars = landing / "price_bars.parquet"  # two days of closes corrected afterwards
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            "COPY (SELECT * REPLACE (CASE WHEN ts BETWEEN '2024-06-10' AND '2024-06-12' "
            f"THEN close * 1.5 ELSE close END AS close) FROM read_parquet('{bars}')) "
            f"TO '{bars}.new' (FORMAT parquet)"
        )
    shutil.move(f"{bars}.new", bars)
    written = _written(instance, run(instance, db, landing, DAYS[2]).run_id)
    assert written["institution_reflections"].startswith("written whole"), written["institution_reflections"]
    assert _tables(db) == _full_build(tmp_path, instance, landing, DAYS[2])


def test_a_hand_edited_history_is_written_again(tmp_path, world, instance):
    db, landing = tmp_path / "incremental.duckdb", tmp_path / "landing"
    landing_until(world, landing, at(DAYS[0]))
    run(instance, db, landing, DAYS[0])
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE main.methodology_cases SET correct = NOT correct WHERE rowid = 0")
    landing_until(world, landing, at(DAYS[1]))
    written = _written(instance, run(instance, db, landing, DAYS[1]).run_id)
    assert written["methodology_cases"].startswith("written whole"), written["methodology_cases"]
    assert _tables(db) == _full_build(tmp_path, instance, landing, DAYS[1])
