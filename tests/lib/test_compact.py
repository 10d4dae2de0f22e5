"""``lib.warehouse``: deferred row-group merges, and the compaction of the tables deletes thinned."""

import duckdb

from tradingmem_assets.lib.warehouse import DEAD_ROWS_SHARE, compact, defer_vacuum, rows_digest, sparse_tables

ROWS = 300_000  # three row groups: a checkpoint merges two of them once every second row is deleted


def _stored(con: duckdb.DuckDBPyConnection, name: str) -> int:
    """The rows the table's row groups hold, the deleted ones included."""
    ((size,),) = con.execute(
        "SELECT estimated_size FROM duckdb_tables() WHERE table_name = ?", [name]
    ).fetchall()
    return size


def _warehouse(path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    defer_vacuum(con)
    for name in ("thinned", "touched", "keyed"):
        key = " PRIMARY KEY" if name == "keyed" else ""
        con.execute(f"CREATE TABLE {name} (id BIGINT{key}, payload VARCHAR)")
        con.execute(f"INSERT INTO {name} SELECT range, 'row ' || range FROM range({ROWS})")
    con.execute("CHECKPOINT")
    return con


def test_deleted_rows_stay_stored_until_a_table_outgrows_its_share_then_compaction_keeps_its_rows(tmp_path):
    con = _warehouse(tmp_path / "w.duckdb")
    # every second row of one table, every twentieth of the other, every second of the keyed table
    con.execute("DELETE FROM thinned WHERE id % 2 = 0")
    con.execute("DELETE FROM touched WHERE id % 20 = 0")
    con.execute("DELETE FROM keyed WHERE id % 2 = 0")
    con.execute("CHECKPOINT")
    # deferred: the checkpoint merged nothing, the deleted rows are still stored
    assert _stored(con, "thinned") == ROWS
    assert _stored(con, "touched") == ROWS

    live = ROWS // 2
    assert sparse_tables(con) == [("main.thinned", live, ROWS - live)]
    assert (ROWS // 20) <= DEAD_ROWS_SHARE * (ROWS - ROWS // 20)  # the other one is under its share

    before = rows_digest(con, "thinned")
    order = con.execute("SELECT id FROM thinned").fetchall()
    compact(con, "main.thinned")
    con.execute("CHECKPOINT")
    assert rows_digest(con, "thinned") == before
    assert con.execute("SELECT id FROM thinned").fetchall() == order  # in their order
    assert _stored(con, "thinned") == live
    assert sparse_tables(con) == []


def test_a_compacted_table_stays_compact_after_a_reopen(tmp_path):
    path = tmp_path / "w.duckdb"
    con = _warehouse(path)
    con.execute("DELETE FROM thinned WHERE id < 200000")
    con.close()
    con = duckdb.connect(str(path))
    defer_vacuum(con)
    assert [t for t, _, _ in sparse_tables(con)] == ["main.thinned"]
    compact(con, "main.thinned")
    con.close()
    con = duckdb.connect(str(path))
    assert con.execute("SELECT count(*), min(id) FROM thinned").fetchall() == [(100_000, 200_000)]
    assert _stored(con, "thinned") == 100_000


def test_a_compacted_table_keeps_its_zstd_columns_and_one_with_a_default_or_a_constraint_is_left_alone(
    tmp_path,
):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    defer_vacuum(con)
    zstd = "generation_basis VARCHAR USING COMPRESSION zstd"
    con.execute(f"CREATE TABLE fin_customer_profile (customer_id BIGINT, {zstd})")
    con.execute("CREATE TABLE defaulted (id BIGINT, note VARCHAR DEFAULT 'x')")
    con.execute("CREATE TABLE required (id BIGINT NOT NULL, note VARCHAR)")
    for name in ("fin_customer_profile", "defaulted", "required"):
        con.execute(f"INSERT INTO {name} SELECT range, repeat('basis ', 20) || range FROM range({ROWS})")
        con.execute(f"DELETE FROM {name} WHERE rowid % 2 = 0")
    assert [t for t, _, _ in sparse_tables(con)] == ["main.fin_customer_profile"]
    compact(con, "main.fin_customer_profile")
    con.execute("CHECKPOINT")
    compression = con.execute(
        "SELECT DISTINCT compression FROM pragma_storage_info('fin_customer_profile') "
        "WHERE column_name = 'generation_basis' AND segment_type = 'VARCHAR'"
    ).fetchall()
    assert compression == [("ZSTD",)]
    assert _stored(con, "fin_customer_profile") == ROWS // 2
