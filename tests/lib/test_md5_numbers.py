"""The md5 number helpers give exactly what DuckDB's ``md5_number_lower``/``_upper`` give: the
evaluation's digests and the recall index's document ids are stored, so one bit of difference
would change every stored hash."""

import duckdb

from tradingmem_assets.lib.warehouse import md5_lower_sql, md5_upper_sql


def test_the_shift_and_the_mask_equal_duckdbs_md5_number_lower_and_upper():
    con = duckdb.connect()
    texts = (
        "(SELECT i::VARCHAR || chr(65 + (i % 50)::INTEGER) || repeat('é|', (i % 7)::INTEGER) AS s "
        "FROM range(50000) t(i) UNION ALL SELECT '')"
    )
    lower, upper, rows = con.execute(
        f"SELECT count(*) FILTER (WHERE {md5_lower_sql('s')} = md5_number_lower(s)), "
        f"count(*) FILTER (WHERE {md5_upper_sql('s')} = md5_number_upper(s)), count(*) FROM {texts}"
    ).fetchone()
    assert (lower, upper) == (rows, rows) == (50001, 50001)
    shifted = md5_lower_sql("'x'")
    types = con.execute(f"SELECT typeof({shifted}), typeof(md5_number_lower('x'))").fetchone()
    assert types == ("UBIGINT", "UBIGINT")
