"""Canonical SHA-256 of the learning tables: order-free, value-exact, stable across processes, fast."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.audit.world import healthy_learning_state, write_learning_state
from tradingmem_assets.defs.audit.table_hash import (
    LEARNING_TABLES,
    MISSING_TABLE_SHA256,
    table_sha256,
    tables_sha256,
)


@pytest.fixture
def con():
    c = duckdb.connect()
    c.execute("SET TimeZone = 'UTC'")
    yield c
    c.close()


def make(con, name: str, rows: str, cols: str = "a VARCHAR, b BIGINT, c TIMESTAMPTZ") -> None:
    con.execute(f"CREATE OR REPLACE TABLE {name} ({cols})")
    if rows:
        con.execute(f"INSERT INTO {name} VALUES {rows}")


def test_row_order_and_column_order_do_not_change_the_hash(con):
    make(con, "t", "('x', 1, '2024-01-01 00:00:00+00'), ('y', 2, NULL)")
    first, rows = table_sha256(con, "main.t")
    assert rows == 2
    make(con, "t", "('y', 2, NULL), ('x', 1, '2024-01-01 00:00:00+00')")
    assert table_sha256(con, "main.t")[0] == first
    make(con, "t", "(NULL, 2, 'y'), ('2024-01-01 00:00:00+00', 1, 'x')", "c TIMESTAMPTZ, b BIGINT, a VARCHAR")
    assert table_sha256(con, "main.t")[0] == first


def test_changing_one_timestamp_by_one_second_changes_the_hash(con):
    make(con, "t", "('x', 1, '2024-01-01 00:00:00+00'), ('y', 2, '2024-01-02 00:00:00+00')")
    before = table_sha256(con, "main.t")
    con.execute("UPDATE t SET c = c + INTERVAL 1 SECOND WHERE a = 'y'")
    after = table_sha256(con, "main.t")
    assert before[1] == after[1] == 2  # same row count: a row-count comparison would miss this
    assert before[0] != after[0]


@pytest.mark.parametrize(
    ("rows_a", "rows_b"),
    [
        ("('ab', 'c')", "('a', 'bc')"),  # no concatenation ambiguity
        ("(NULL, 'x')", "('null', 'x')"),  # NULL is not the string 'null'
        ("('', 'x')", "(NULL, 'x')"),  # empty string is not NULL
        ("('x', 'y'), ('x', 'y')", "('x', 'y')"),  # duplicates count
    ],
)
def test_values_are_serialized_unambiguously(con, rows_a, rows_b):
    make(con, "t", rows_a, "a VARCHAR, b VARCHAR")
    first = table_sha256(con, "main.t")[0]
    make(con, "t", rows_b, "a VARCHAR, b VARCHAR")
    assert table_sha256(con, "main.t")[0] != first


@pytest.mark.parametrize(
    ("rows_a", "rows_b"),
    [
        ("('ab'), ('c')", "('a'), ('bc')"),  # the rows' texts are hashed one after another
        ("('x'), ('')", "('x')"),  # an empty value still is a row
    ],
)
def test_where_one_row_ends_and_the_next_begins_is_part_of_the_hash(con, rows_a, rows_b):
    make(con, "t", rows_a, "a VARCHAR")
    first = table_sha256(con, "main.t")[0]
    make(con, "t", rows_b, "a VARCHAR")
    assert table_sha256(con, "main.t")[0] != first


def test_a_schema_change_changes_the_hash_even_with_no_rows(con):
    make(con, "t", "", "a VARCHAR")
    first = table_sha256(con, "main.t")[0]
    make(con, "t", "", "a BIGINT")
    assert table_sha256(con, "main.t")[0] != first


def test_a_missing_table_hashes_as_the_documented_constant(con):
    assert table_sha256(con, "main.methodologies") == (MISSING_TABLE_SHA256, None)
    digest = tables_sha256(con)
    assert digest.tables == dict.fromkeys(LEARNING_TABLES, MISSING_TABLE_SHA256)
    make(con, "methodologies", "", "methodology_id VARCHAR")
    assert tables_sha256(con).changed_tables(digest) == ["main.methodologies"]


HASH_IN_SUBPROCESS = """
import sys, duckdb
from tradingmem_assets.defs.audit.table_hash import tables_sha256
con = duckdb.connect(sys.argv[1], read_only=True)
print(tables_sha256(con).combined)
"""


def test_the_hash_is_stable_across_processes(tmp_path):
    db = tmp_path / "w.duckdb"
    write_learning_state(db, healthy_learning_state())
    con = duckdb.connect(str(db), read_only=True)
    try:
        here = tables_sha256(con).combined
    finally:
        con.close()
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", HASH_IN_SUBPROCESS, str(db)],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PYTHONHASHSEED": "7"},
    )
    assert out.stdout.strip() == here


def test_hashing_a_million_rows_is_fast(con):
    con.execute(
        """CREATE TABLE methodology_cases AS
           SELECT 'c' || i AS case_id, 'm_' || (i % 5000) AS methodology_id, 'r' || (i // 3) AS run_id,
                  (i % 3)::BIGINT AS "window", i % 2 = 0 AS correct,
                  TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(i) AS recorded_at
           FROM range(1000000) t(i)"""
    )
    started = time.perf_counter()
    digest = tables_sha256(con)
    elapsed = time.perf_counter() - started
    assert digest.rows["main.methodology_cases"] == 1_000_000
    assert elapsed < 10.0, f"hashing 1M rows took {elapsed:.1f}s"
