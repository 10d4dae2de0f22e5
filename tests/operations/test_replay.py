"""A second main job run on unchanged inputs is recognized by fingerprints and recomputes nothing;
any change of a landing file, of the as_of or of a derived table by hand makes it compute again."""

from datetime import UTC, datetime

import dagster as dg
import duckdb
import pytest

from tests.operations.test_ledger import RECORDS
from tradingmem_assets.defs.operations import replay
from tradingmem_assets.defs.operations.runs import run_main_job
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import table_columns

AS_OF = "2024-07-01T00:00:00Z"


def _snapshot(db) -> dict[str, list]:
    """Every derived table's rows, in a stable order."""
    with duckdb.connect(str(db), read_only=True) as con:
        names = [
            f"{s}.{t}"
            for s, t in con.execute(
                "SELECT schema_name, table_name FROM duckdb_tables() WHERE schema_name IN ('main', 'raw')"
            ).fetchall()
            if f"{s}.{t}" not in replay.NOT_DERIVED and t not in RECORDS
        ]
        return {n: sorted(map(repr, con.execute(f"SELECT * FROM {n}").fetchall())) for n in names}


def _run(instance, world_dir, as_of=AS_OF):
    report = run_main_job(
        instance, database=str(world_dir / "w.duckdb"), landing_dir=str(world_dir / "landing"), as_of=as_of
    )
    assert report.success, report.error
    return report


def _observations(instance, run_id) -> dict[str, dict]:
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_OBSERVATION)
    return {
        r.dagster_event.event_specific_data.asset_observation.asset_key.to_user_string(): {
            k: v.value for k, v in r.dagster_event.event_specific_data.asset_observation.metadata.items()
        }
        for r in records
    }


@pytest.fixture
def world(tmp_path):
    write_demo_world(tmp_path / "landing", scale=0.002, seed=5)
    return tmp_path


def test_a_second_run_on_unchanged_inputs_skips_everything_and_says_why(world, instance):
    first = _run(instance, world)
    before = _snapshot(world / "w.duckdb")
    second = _run(instance, world)
    assert _snapshot(world / "w.duckdb") == before
    observed = _observations(instance, second.run_id)
    landing = [key for key in observed if key.startswith("raw/")]
    assert landing and all(observed[k]["replay_of"] == first.run_id for k in landing)
    assert all("unchanged inputs" in observed[k]["skipped"] for k in landing)
    materialized = instance.all_logs(second.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    assert materialized == []  # nothing downstream of the landing ran either
    assert {"evaluation", "role_cases", "customer_profile"} <= {s.split(".")[0] for s in second.skipped_steps}
    assert second.seconds < first.seconds
    with duckdb.connect(str(world / "w.duckdb"), read_only=True) as con:
        statuses = con.execute(f"SELECT status FROM {tables.WAREHOUSE_RUNS} ORDER BY started_at").fetchall()
    assert statuses == [("ok",), ("ok",)]
    third = _run(instance, world)  # the replay recorded the contents it found: it replays in turn
    assert {v["replay_of"] for v in _observations(instance, third.run_id).values()} == {second.run_id}


def test_a_changed_landing_file_a_later_as_of_or_a_hand_edit_is_computed_again(world, instance):
    _run(instance, world)
    with duckdb.connect(str(world / "w.duckdb")) as con:  # a hand edit of a derived table
        con.execute(f"UPDATE {tables.ROLE_CASES} SET decision_text = 'edited' WHERE rowid = 0")
    edited = _run(instance, world)
    assert not _observations(instance, edited.run_id)
    with duckdb.connect(str(world / "w.duckdb"), read_only=True) as con:
        assert con.execute(
            f"SELECT count(*) FROM {tables.ROLE_CASES} WHERE decision_text = 'edited'"
        ).fetchall() == [(0,)]
    with duckdb.connect(str(world / "w.duckdb")) as con:  # a deleted row leaves the segments as they were
        con.execute(f"DELETE FROM {tables.EVALUATION_PRIMARIES} WHERE rowid = 0")
    deleted = _run(instance, world)
    assert not _observations(instance, deleted.run_id)
    with duckdb.connect(str(world / "w.duckdb")) as con:  # a view's definition replaced by hand
        con.execute(
            f"CREATE OR REPLACE VIEW {tables.EVALUATION_COMPONENTS} AS SELECT run_id, "
            f"'excess_return' AS component, 0.0::DOUBLE AS value, 'ok' AS quality_flag "
            f"FROM {tables.EVALUATION_RUNS}"
        )
    redefined = _run(instance, world)
    assert not _observations(instance, redefined.run_id)
    with duckdb.connect(str(world / "w.duckdb"), read_only=True) as con:
        [(runs, components)] = con.execute(
            f"SELECT (SELECT count(*) FROM {tables.EVALUATION_RUNS}), "
            f"(SELECT count(*) FROM {tables.EVALUATION_COMPONENTS})"
        ).fetchall()
    assert runs > 0 and components == 8 * runs  # the evaluation defined it again
    later = _run(instance, world, as_of="2024-07-02T00:00:00Z")
    assert not _observations(instance, later.run_id)
    (world / "landing" / "trade_fills.parquet").write_bytes(
        (world / "landing" / "trade_fills.parquet").read_bytes()
    )
    same_bytes = _run(instance, world, as_of="2024-07-02T00:00:00Z")  # rewritten, same content: a replay
    assert _observations(instance, same_bytes.run_id)
    write_demo_world(world / "landing", scale=0.002, seed=6)
    changed = _run(instance, world, as_of="2024-07-02T00:00:00Z")
    assert not _observations(instance, changed.run_id)


def test_a_table_edited_twice_by_hand_is_never_taken_as_left(tmp_path):
    """DuckDB reuses freed blocks: an edit moves a column's segment to a free block, the next one
    back to the block it left, so after two edits the storage layout (``pragma_storage_info``) can
    be the one a run recorded, with other values in it. The run's record is of contents."""
    fingerprints = {"*": "code and settings"}
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute(
            "CREATE TABLE main.scores AS SELECT range AS id, (range % 100)::DOUBLE AS v FROM range(5000)"
        )
        for value in (40.5, 45.5):  # the column's segment in a block of its own, as a run's rewrites leave it
            con.execute(f"UPDATE main.scores SET v = {value} WHERE id = 3")
            con.execute("CHECKPOINT")
        replay.record(
            con, run_id="r1", as_of=datetime(2024, 7, 1, tzinfo=UTC), inputs="in", fingerprints=fingerprints
        )
        con.execute("CHECKPOINT")
        left = replay.unchanged_tables(con, inputs="in", fingerprints=fingerprints)
        assert left.replays == "r1" and "main.scores" in left.tables
        for value in (50.5, 60.5, 70.5, 80.5):
            con.execute(f"UPDATE main.scores SET v = {value} WHERE id = 3")
            con.execute("CHECKPOINT")
            edited = replay.unchanged_tables(con, inputs="in", fingerprints=fingerprints)
            assert edited.replays is None, value
            assert "main.scores" not in edited.tables
        con.execute("UPDATE main.scores SET v = 45.5 WHERE id = 3")  # the content the run left, stored anew
        assert replay.unchanged_tables(con, inputs="in", fingerprints=fingerprints).replays == "r1"


def test_records_of_an_older_version_are_not_read_and_the_next_record_replaces_them(tmp_path):
    fingerprints = {"*": "code and settings"}
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute("CREATE TABLE main.scores AS SELECT range AS id FROM range(10)")
        con.execute(  # as an older version wrote them: storage layouts, not contents
            f"CREATE TABLE {tables.RUN_INPUTS} AS SELECT 'r0' AS run_id, TIMESTAMPTZ '2024-07-01' AS as_of, "
            "'in' AS inputs_fingerprint, 'layout' AS storage_fingerprint"
        )
        assert replay.unchanged_tables(con, inputs="in", fingerprints=fingerprints) == replay.Unchanged()
        replay.record(
            con, run_id="r1", as_of=datetime(2024, 7, 1, tzinfo=UTC), inputs="in", fingerprints=fingerprints
        )
        assert "contents_fingerprint" in table_columns(con, tables.RUN_INPUTS)
        assert replay.unchanged_tables(con, inputs="in", fingerprints=fingerprints).replays == "r1"


def test_a_run_that_cannot_replay_hashes_only_the_tables_an_incremental_asset_builds_on(tmp_path):
    """Other inputs than the latest run's: no replay, so the derived tables no incremental asset
    builds on are not hashed at the start (their steps rewrite them); those it builds on are, and
    a hand edit of one is still seen."""
    fingerprints = {"*": "code and settings"}
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute("CREATE TABLE main.kept AS SELECT range AS id FROM range(10)")
        con.execute("CREATE TABLE main.rewritten AS SELECT range AS id FROM range(10)")
        replay.record(
            con, run_id="r1", as_of=datetime(2024, 7, 1, tzinfo=UTC), inputs="in", fingerprints=fingerprints
        )
        later = replay.unchanged_tables(con, inputs="later", fingerprints=fingerprints, kept=["main.kept"])
        assert later.replays is None and set(later.states) == {"main.kept"}
        assert later.as_left_by(con, "r1", ["main.kept"])
        assert not later.as_left_by(con, "r1", ["main.rewritten"])  # not hashed: never taken as left
        same = replay.unchanged_tables(con, inputs="in", fingerprints=fingerprints, kept=["main.kept"])
        assert same.replays == "r1" and set(same.states) == {"main.kept", "main.rewritten"}
        con.execute("UPDATE main.kept SET id = 11 WHERE id = 1")
        edited = replay.unchanged_tables(con, inputs="later", fingerprints=fingerprints, kept=["main.kept"])
        assert not edited.as_left_by(con, "r1", ["main.kept"])
