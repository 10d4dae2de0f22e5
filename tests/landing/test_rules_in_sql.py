"""The landing value rules run as SQL; they must say exactly what the Pandera schema says."""

import datetime as dt
import random

import duckdb
import pandera.polars as pa
import polars as pl
import pytest
from pandera.errors import SchemaErrors

from tradingmem_assets.defs.landing.invariants import (
    LANDING_TABLES,
    LandingTable,
    landing_schema,
    value_reasons_sql,
)

NASTY_FLOATS = [None, float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, 1.5, -1.0, 1e-300, 7.0]
NASTY_INTS = [None, 0, 1, -1, 2**40]
NASTY_STRINGS = [None, "", " ", "x", "é", "O'Brien", "null"]


def candidates(spec: LandingTable, column) -> list:
    if column.kind == "float":
        return NASTY_FLOATS + [column.ge, column.gt, column.le]
    if column.kind == "int":
        return NASTY_INTS + [v if v is None else int(v) for v in (column.ge, column.gt, column.le)]
    if column.kind == "bool":
        return [None, True, False]
    if column.kind == "ts":
        return [None, dt.datetime(2024, 1, 2, tzinfo=dt.UTC)]
    if column.kind == "date":
        return [None, dt.date(2024, 1, 2)]
    vocabulary = list(column.isin or [])
    return NASTY_STRINGS + vocabulary + [v.upper() for v in vocabulary]


def pandera_reasons(spec: LandingTable, frame: pl.DataFrame) -> set[tuple[int, str]]:
    try:
        landing_schema(spec.name).validate(frame, lazy=True)
    except SchemaErrors as err:
        cases = err.failure_cases
        assert cases["index"].null_count() == 0, cases
        return {(int(i), f"{c}: {k}") for i, c, k in cases.select("index", "column", "check").rows()}
    return set()


def sql_reasons(spec: LandingTable, frame: pl.DataFrame) -> set[tuple[int, str]]:
    listed = ", ".join(value_reasons_sql(spec, cast_failed={})) or "NULL"
    con = duckdb.connect()
    con.register("typed", frame.with_row_index("idx"))
    rows = con.execute(
        f"SELECT idx, unnest(list_filter([{listed}]::VARCHAR[], lambda x: x IS NOT NULL)) FROM typed"
    ).fetchall()
    return {(int(i), r) for i, r in rows}


@pytest.mark.parametrize("table", sorted(LANDING_TABLES))
def test_sql_value_rules_agree_with_pandera_on_edge_values(table):
    spec = LANDING_TABLES[table]
    rng = random.Random(table)
    columns = {c.name: candidates(spec, c) for c in spec.columns}
    n = 4 * max(len(v) for v in columns.values())
    frame = pl.DataFrame(
        {
            name: [values[i % len(values)] if i < len(values) else rng.choice(values) for i in range(n)]
            for name, values in columns.items()
        },
        schema=spec.polars_schema(),
    )
    expected = pandera_reasons(spec, frame)
    assert sql_reasons(spec, frame) == expected
    if any(not c.nullable for c in spec.columns):
        assert expected, "the edge values break no rule: the comparison proves nothing"


def test_a_rule_without_a_sql_form_is_refused(monkeypatch):
    from tradingmem_assets.defs.landing import invariants

    spec = LANDING_TABLES["trade_fills"]
    schema = landing_schema("trade_fills")
    odd = schema.update_column("qty", checks=[pa.Check(lambda s: s > 0, name="custom_positive")])
    monkeypatch.setattr(invariants, "landing_schema", lambda _: odd)
    with pytest.raises(ValueError, match="custom_positive has no SQL form"):
        value_reasons_sql(spec, cast_failed={})
