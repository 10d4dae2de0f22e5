"""The evaluation components (SPEC section 4): ``evaluation_components`` as a view of the runs.

Each run stores its measurement in its own row (``versions.MEASURED_COLUMNS``); the view shows it
as SPEC section 4 names it, one row per run and component with its quality flag.
"""

from __future__ import annotations

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import table_type

COMPONENTS = (
    "entry_price",
    "exit_price",
    "raw_return",
    "benchmark_return",
    "excess_return",
    "volatility",
    "coverage",
    "missing_bars",
)

# The components are written once, with their run; an open window (``pending``) measures its
# volatility only, and its other components are flagged so.
COMPONENTS_VIEW_SQL = f"""
CREATE OR REPLACE VIEW {tables.EVALUATION_COMPONENTS} AS
SELECT r.run_id, c.component,
       CASE c.component
           WHEN 'entry_price' THEN r.entry_price
           WHEN 'exit_price' THEN r.exit_price
           WHEN 'raw_return' THEN r.raw_return
           WHEN 'benchmark_return' THEN r.benchmark_return
           WHEN 'excess_return' THEN r.excess_return
           WHEN 'volatility' THEN r.volatility
           WHEN 'coverage' THEN r.coverage
           WHEN 'missing_bars' THEN r.missing_bars::DOUBLE
       END AS value,
       CASE
           WHEN c.component = 'volatility' THEN CASE WHEN r.volatility IS NULL THEN 'missing'
                                                    WHEN r.short_history THEN 'short_history' ELSE 'ok' END
           WHEN r.status = 'pending' THEN 'window_open'
           WHEN c.component = 'entry_price' THEN CASE WHEN r.entry_price IS NULL THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'exit_price' THEN CASE WHEN r.exit_price IS NULL THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'raw_return' THEN
               CASE WHEN r.entry_price IS NULL OR r.exit_price IS NULL THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'benchmark_return' THEN
               CASE WHEN r.benchmark_absolute THEN 'absolute'
                    WHEN r.benchmark_missing THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'excess_return' THEN
               CASE WHEN r.entry_price IS NULL OR r.exit_price IS NULL OR r.benchmark_missing THEN 'missing'
                    ELSE 'ok' END
           WHEN c.component = 'coverage' THEN
               CASE WHEN r.below_min_coverage THEN 'below_min_coverage' ELSE 'ok' END
           ELSE CASE WHEN r.missing_bars > 0 THEN 'missing' ELSE 'ok' END
       END AS quality_flag
FROM {tables.EVALUATION_RUNS} r
CROSS JOIN (VALUES {", ".join(f"('{c}')" for c in COMPONENTS)}) c(component)
"""


def create_components_view(con: duckdb.DuckDBPyConnection) -> None:
    """``main.evaluation_components`` as the view of the stored runs (in place of the table a
    warehouse built by an earlier version holds)."""
    if table_type(con, tables.EVALUATION_COMPONENTS) == "BASE TABLE":
        con.execute(f"DROP TABLE {tables.EVALUATION_COMPONENTS}")
    con.execute(COMPONENTS_VIEW_SQL)
