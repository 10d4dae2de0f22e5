"""``lib.warehouse.staged``: a script's temp tables and views live for the block, then go."""

import duckdb
import pytest

from tradingmem_assets.lib.warehouse import staged

SCRIPT = """
CREATE OR REPLACE TEMP TABLE _stage_numbers AS SELECT range AS x FROM range(5);
CREATE OR REPLACE TEMP VIEW _stage_total AS SELECT sum(x) AS total FROM _stage_numbers;
"""


def _temp_objects(con: duckdb.DuckDBPyConnection) -> set[str]:
    tables = con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal").fetchall()
    return {name for (name,) in tables + views}


def test_the_stages_and_the_view_over_them_live_for_the_block():
    con = duckdb.connect()
    with staged(con, SCRIPT, None):
        assert _temp_objects(con) == {"_stage_numbers", "_stage_total"}
        assert con.execute("SELECT total FROM _stage_total").fetchall() == [(10,)]
    assert _temp_objects(con) == set()


@pytest.mark.parametrize("where", ["in the script", "in the block"])
def test_a_failure_drops_what_was_created(where):
    con = duckdb.connect()
    script = SCRIPT + ("SELECT * FROM _no_such_table;\n" if where == "in the script" else "")
    with pytest.raises((duckdb.Error, RuntimeError)), staged(con, script, None):
        raise RuntimeError("the write failed")
    assert _temp_objects(con) == set()
