"""Incremental role cases: whether the past the last admission saw is unchanged, and which decisions
a later ``as_of`` can change.

The admission reads the chain as known at ``as_of`` (``admission_sql``): decisions, previews,
consumptions and executions stamped at or before it, whether each position had closed by it, and
the primary evaluation run of each decision. Its *basis* (``lib.basis``, stored in
``role_cases_basis`` with the cases) is a digest of exactly that per raw table, and of everything
the evaluation reads (so the evaluation runs of the past are the same ones too). A position's row
is digested as it was at ``as_of``: a position that closes later changes its landing row, not what
was known then.

While the basis holds, and the role cases, their recall index and the evaluation tables were as
the basis's run left them when this run started (so no hand edit and the same code, settings and registry), a case can
change only through an instant in ``(since, as_of]``: its decision, its preview, a consumption of
it, an execution it names, a position of that execution opening or closing, or a run of its
evaluation written or made primary since (the evaluation appends versions and closes primary
intervals; it never edits a stored run). Only those decisions are admitted again (and the recall
index is rebuilt only when one of them has a recallable reflection);
``tests/role_memory/test_incremental.py`` proves the table equal to a full rebuild's.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from tradingmem_assets.defs.evaluation.incremental import EVALUATION_TABLES, EVALUATION_VISIBLE
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import visible_rows

# a position as known at $as_of: opened by then, and whether and when it had closed by then
POSITIONS_AT = """
SELECT position_id, execution_id, opened_at,
       status IN ('closed', 'liquidated') AND closed_at IS NOT NULL AND closed_at <= $as_of AS settled,
       CASE WHEN closed_at <= $as_of THEN closed_at END AS closed_at
FROM raw.position_lifecycles WHERE opened_at <= $as_of
"""
ADMISSION_VISIBLE = {
    **EVALUATION_VISIBLE,
    "trade_previews": visible_rows(tables.raw_table("trade_previews"), "created_at"),
    "position_lifecycles": POSITIONS_AT,
}
# what must be as the basis's run left them (read as of that run's end)
KEPT_TABLES = (tables.ROLE_CASES, tables.ROLE_RECALL_INDEX, *EVALUATION_TABLES)
TOUCHED = "_rc_touched"

TOUCHED_DECISIONS_SQL = f"""
CREATE OR REPLACE TEMP TABLE {TOUCHED} AS
WITH executions AS (
    SELECT execution_id FROM raw.trade_executions WHERE executed_at > $since AND executed_at <= $as_of
    UNION
    SELECT execution_id FROM raw.position_lifecycles
    WHERE (opened_at > $since AND opened_at <= $as_of) OR (closed_at > $since AND closed_at <= $as_of)
),
previews AS (
    SELECT preview_id FROM raw.trade_previews WHERE created_at > $since AND created_at <= $as_of
    UNION
    SELECT preview_id FROM raw.preview_consumptions WHERE consumed_at > $since AND consumed_at <= $as_of
    UNION
    SELECT c.preview_id FROM raw.preview_consumptions c SEMI JOIN executions x USING (execution_id)
)
SELECT decision_id FROM raw.trading_decisions WHERE decided_at > $since AND decided_at <= $as_of
UNION
SELECT d.decision_id FROM raw.trading_decisions d SEMI JOIN previews p USING (preview_id)
UNION
SELECT decision_id FROM {tables.EVALUATION_RUNS} WHERE created_at > $since
UNION
SELECT decision_id FROM {tables.EVALUATION_PRIMARIES} WHERE primary_from > $since OR primary_until > $since
"""


def touch(con: duckdb.DuckDBPyConnection, since: datetime, as_of: datetime) -> str:
    """The decisions an instant in ``(since, as_of]`` can change, into temp table ``TOUCHED``."""
    con.execute(TOUCHED_DECISIONS_SQL, {"since": since, "as_of": as_of})
    return TOUCHED
