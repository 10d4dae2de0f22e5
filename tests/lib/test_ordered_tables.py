"""write_in_order: the table ends holding the frame's rows in the frame's order, whichever way it
was written, and the stored rows are kept only when they are exactly the frame's first rows."""

from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl
import pytest

from tradingmem_assets.lib.ordered_tables import write_in_order
from tradingmem_assets.lib.warehouse import transaction

TABLE = "main.history"
T0 = datetime(2024, 6, 3, tzinfo=UTC)


def _frame(n: int, **changes) -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "id": [f"e{i:03d}" for i in range(n)],
            "ts": [T0 + timedelta(hours=i) for i in range(n)],
            "score": [i / 7 for i in range(n)],
            "ok": [i % 3 == 0 for i in range(n)],
            "detail": [None if i % 5 == 0 else f'{{"i": {i}}}' for i in range(n)],
            "tags": [[f"t{i % 4}"] for i in range(n)],
        }
    )
    for column, (i, value) in changes.items():
        frame = _set(frame, column, i, value)
    return frame


def _set(frame: pl.DataFrame, column: str, i: int, value) -> pl.DataFrame:
    values = frame.get_column(column).to_list()
    values[i] = value
    return frame.with_columns(pl.Series(column, values, dtype=frame.schema[column]))


@pytest.fixture
def con():
    with duckdb.connect() as c:
        c.execute("SET TimeZone = 'UTC'")
        yield c


def _write(con, frame: pl.DataFrame) -> str:
    with transaction(con):
        return write_in_order(con, TABLE, frame)


def _stored(con) -> pl.DataFrame:
    """The table in its scan order: what a reader without ORDER BY gets."""
    return con.sql(f"SELECT * FROM {TABLE}").pl()


def _row_ids(con) -> list[int]:
    """The stored rows' row ids in scan order: a row kept in place keeps its id, a whole write
    numbers the rows from 0 again."""
    return [r[0] for r in con.execute(f"SELECT rowid FROM {TABLE}").fetchall()]


def test_a_new_table_is_written_whole(con):
    how = _write(con, _frame(10))
    assert how == "written whole: 10 rows, the table is new"
    assert _stored(con).equals(_frame(10))


def test_grown_rows_are_appended_after_the_unchanged_ones(con):
    _write(con, _frame(10))
    con.execute(f"DELETE FROM {TABLE} WHERE id = 'e009'")  # its row id 9 stays unused
    assert _write(con, _frame(10)) == "appended 1 rows after the 9 stored ones, which are unchanged"
    how = _write(con, _frame(25))
    assert how == "appended 15 rows after the 10 stored ones, which are unchanged"
    assert _stored(con).equals(_frame(25))
    assert _row_ids(con) == [*range(9), *range(10, 26)]  # the first nine rows were never rewritten
    assert _write(con, _frame(25)) == "unchanged: the 25 stored rows are the new ones"
    assert _row_ids(con) == [*range(9), *range(10, 26)]


@pytest.mark.parametrize(
    ("changes", "label"),
    [
        ({"score": (3, 3 / 7 + 1e-15)}, "a float one ulp away"),
        ({"score": (0, -0.0)}, "0.0 stored, -0.0 now"),
        ({"detail": (0, '{"i": 0}')}, "a null that is a value now"),
        ({"detail": (1, None)}, "a value that is null now"),
        ({"ok": (2, True)}, "a flipped flag"),
        ({"ts": (4, T0)}, "another instant"),
        ({"tags": (5, ["t9"])}, "another list"),
    ],
)
def test_a_changed_stored_row_makes_a_whole_write(con, changes, label):
    _write(con, _frame(10))
    how = _write(con, _frame(20, **changes))
    assert how.startswith("written whole: 20 rows, a stored row is not the row at its place"), label
    assert _stored(con).equals(_frame(20, **changes)), label


def test_the_same_rows_in_another_order_make_a_whole_write(con):
    _write(con, _frame(10).reverse())
    how = _write(con, _frame(12))
    assert how.startswith("written whole")
    assert _stored(con).equals(_frame(12))


def test_nan_stays_equal_to_nan(con):
    frame = _frame(6, score=(2, float("nan")))
    _write(con, frame)
    grown = pl.concat([frame, _frame(8).tail(2)])
    assert _write(con, grown).startswith("appended 2 rows")
    assert _stored(con).equals(grown)


def test_a_hand_edited_table_is_written_whole(con):
    _write(con, _frame(10))
    con.execute(f"UPDATE {TABLE} SET detail = 'edited' WHERE id = 'e007'")
    assert _write(con, _frame(11)).startswith("written whole: 11 rows, a stored row is not")
    con.execute(f"INSERT INTO {TABLE} SELECT * FROM {TABLE} WHERE id = 'e003'")  # a duplicate
    assert _write(con, _frame(11)).startswith("written whole: 11 rows, it held 12 rows")
    assert _stored(con).equals(_frame(11))


def test_fewer_rows_or_other_columns_make_a_whole_write(con):
    _write(con, _frame(10))
    assert _write(con, _frame(8)) == "written whole: 8 rows, it held 10 rows, more than the 8 it holds now"
    assert _write(con, _frame(9).drop("tags")) == "written whole: 9 rows, its columns changed"
    assert _write(con, _frame(9).with_columns(pl.col("ok").cast(pl.Int64))).endswith("its columns changed")
    assert _stored(con).equals(_frame(9).with_columns(pl.col("ok").cast(pl.Int64)))


def test_a_failed_transaction_leaves_the_table_as_it_was(con):
    _write(con, _frame(10))
    with pytest.raises(RuntimeError), transaction(con):
        write_in_order(con, TABLE, _frame(15))
        raise RuntimeError("a later write of the same run failed")
    assert _stored(con).equals(_frame(10))
