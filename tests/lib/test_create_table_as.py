"""``create_table_as`` declares the columns of ``COLUMN_COMPRESSION`` with their compression (the
long JSON with ZSTD), whether the table is created or replaced, and stores exactly the query's rows."""

from datetime import UTC, datetime

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import create_table_as

AS_OF = datetime(2024, 6, 28, tzinfo=UTC)
SNAPSHOTS = """
SELECT 's' || i AS snapshot_id, 'c' || i AS customer_id, 1::BIGINT AS version,
       '{"investor_type": "C' || (i % 5 + 1) || '", "n": ' || i || '}' AS profile,
       '{"investor_type": {"source": "questionnaire_results", "row_ids": ["q' || i || '"], "reason": "'
           || repeat('latest questionnaire at or before as_of; ', 20) || '"}}' AS generation_basis,
       sha256(i::VARCHAR) AS snapshot_hash, true AS is_current, $1::TIMESTAMPTZ AS created_at
FROM range(20000) t(i)
"""


def _storage(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, set[str]]:
    con.execute("CHECKPOINT")
    rows = con.execute(
        f"SELECT column_name, compression FROM pragma_storage_info('{table}') WHERE segment_type = 'VARCHAR'"
    ).fetchall()
    found: dict[str, set[str]] = {}
    for column, compression in rows:
        found.setdefault(column, set()).add(compression)
    return found


def test_the_declared_columns_are_stored_with_zstd_when_created_and_when_replaced(tmp_path):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("SET TimeZone = 'UTC'")
    assert tables.COLUMN_COMPRESSION[tables.PROFILE_SNAPSHOTS] == {
        "snapshot_id": "uncompressed",
        "snapshot_hash": "uncompressed",
        "profile": "zstd",
        "generation_basis": "zstd",
    }
    for replace in (False, True):
        create_table_as(con, tables.PROFILE_SNAPSHOTS, SNAPSHOTS, [AS_OF], replace=replace)
        (declared,) = con.execute(
            "SELECT sql FROM duckdb_tables() WHERE table_name = 'profile_snapshots'"
        ).fetchall()[0]
        assert "profile VARCHAR USING COMPRESSION ZSTD" in declared
        assert "generation_basis VARCHAR USING COMPRESSION ZSTD" in declared
        assert "snapshot_hash VARCHAR USING COMPRESSION Uncompressed" in declared
        assert "customer_id VARCHAR," in declared  # the others are left to DuckDB
        storage = _storage(con, "profile_snapshots")
        assert storage["profile"] == storage["generation_basis"] == {"ZSTD"}
        assert storage["snapshot_hash"] == {"Uncompressed"}
        assert "ZSTD" not in storage["customer_id"]
        difference = con.execute(
            f"SELECT count(*) FROM ((SELECT * FROM profile_snapshots EXCEPT ALL ({SNAPSHOTS})) "
            f"UNION ALL (({SNAPSHOTS}) EXCEPT ALL SELECT * FROM profile_snapshots))",
            [AS_OF],
        ).fetchall()[0][0]
        assert difference == 0
        assert con.execute("SELECT count(*) FROM profile_snapshots").fetchall() == [(20000,)]


def test_a_table_without_declared_columns_is_created_as_the_query_says(tmp_path):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    create_table_as(con, "main.other", "SELECT repeat('x', 500) AS generation_basis FROM range(3)")
    (declared,) = con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = 'other'").fetchall()[0]
    assert "USING COMPRESSION" not in declared
    assert con.execute("SELECT count(*) FROM main.other").fetchall() == [(3,)]


def test_a_query_reading_the_table_it_replaces_reads_the_rows_stored_before(tmp_path):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("SET TimeZone = 'UTC'")
    create_table_as(con, tables.PROFILE_SNAPSHOTS, SNAPSHOTS, [AS_OF])
    # the stored rows and 20,000 more: the query reads the table it replaces
    again = f"SELECT * FROM profile_snapshots UNION ALL ({SNAPSHOTS})"
    create_table_as(con, tables.PROFILE_SNAPSHOTS, again, [AS_OF], replace=True)
    assert con.execute("SELECT count(*), count(DISTINCT snapshot_id) FROM profile_snapshots").fetchall() == [
        (40000, 20000)
    ]
    (declared,) = con.execute(
        "SELECT sql FROM duckdb_tables() WHERE table_name = 'profile_snapshots'"
    ).fetchone()
    assert "profile VARCHAR USING COMPRESSION ZSTD" in declared
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '%next'").fetchall() == [
        (0,)
    ]
