"""``repeated_values`` finds exactly the values (or keys) more than one row has, as a plain GROUP BY does."""

import duckdb
import pytest

from tradingmem_assets.lib.whole_query import repeated_values


@pytest.fixture
def con():
    con = duckdb.connect()
    # 20 000 distinct ids, then: one id three times, one twice, two null ids, and a key (a, b)
    # repeated only as a pair (each of its columns alone repeats often)
    con.execute(
        "CREATE TABLE t AS "
        "SELECT 'id_' || i::VARCHAR AS id, (i % 7)::VARCHAR AS a, (i // 7)::BIGINT AS b "
        "FROM range(20000) r(i)"
    )
    con.execute(
        "INSERT INTO t VALUES ('id_17', 'x', 1), ('id_17', 'y', 2), ('id_42', 'z', 3), "
        "(NULL, 'p', 4), (NULL, 'q', 5), ('id_new', '3', 0)"
    )
    yield con
    con.close()


def _grouped(con, columns: str) -> list[tuple]:
    return con.execute(f"SELECT {columns} FROM t GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL").fetchall()


def test_the_repeated_values_of_a_column_are_those_a_group_by_finds(con):
    found = repeated_values(con, "t", "id")
    assert _grouped(con, "id") == [("id_17",), ("id_42",), (None,)]
    # a value shows once however many rows repeat it; the null key too (as Pandera reports it)
    assert found.get_column("failure_case").to_list() == ["id_17", "id_42", None]
    assert set(found.get_column("check")) == {"field_uniqueness"}


def test_a_key_repeated_only_as_a_whole_is_found_and_spelled_as_one_object(con):
    found = repeated_values(con, "t", ["a", "b"], "t_schema")
    assert _grouped(con, "a, b") == [("3", 0)]
    assert found.get_column("failure_case").to_list() == ['{"a":"3","b":0}']
    assert found.get_column("column").to_list() == ["t_schema"]


def test_no_repeated_value_finds_nothing(con):
    con.execute("DELETE FROM t WHERE id IN ('id_17', 'id_42') OR id IS NULL OR id = 'id_new'")
    assert repeated_values(con, "t", "id").height == 0
    assert repeated_values(con, "t", ["a", "b"], "t_schema").height == 0
