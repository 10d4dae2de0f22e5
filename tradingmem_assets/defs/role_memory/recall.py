"""Recall (SPEC section 7): a role's own lessons and success patterns, ranked by TF-IDF.

Filters are exact and applied in DuckDB before any ranking: the role, the symbol and scenario when
given, only non-quarantined cases whose chain is eligible, and, as of ``T`` (SPEC section 16), only
the newest reflection known at ``T`` of the run that was the case's primary run at ``T``; only the
recallable classes (``missing_data`` / ``logic_error`` lessons and ``sound`` success patterns;
``variance`` and ``exogenous`` carry no guidance). Similarity only orders what passed the filters:
TF-IDF fitted on the role's documents visible at ``T`` (recall_tfidf.py: scikit-learn's scores,
computed from a stored term index), so the same read on two warehouses that know the same past
gives the same scores.

Speed: recall reads ``main.role_recall_index`` (rebuilt in the same transaction by every writer of
role_cases / role_reflections), where each row already is "a recallable reflection, valid from the
instant it was knowable while its run was primary until it was superseded", with its term index and
the current state's TF-IDF statistics beside it.
Recalled text is advisory: it never overrides safety rules, permissions or user constraints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from tradingmem_assets.defs.role_memory.reasons import chain_eligible_sql
from tradingmem_assets.defs.role_memory.recall_terms import layout_outdated, rebuild_terms_and_stats
from tradingmem_assets.defs.role_memory.recall_tfidf import ranked
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.vocabulary import RECALLABLE_CLASSES
from tradingmem_assets.lib.warehouse import connection, md5_upper_sql, table_exists
from tradingmem_assets.settings import SETTINGS, default_as_of, default_db_path, parse_as_of


class RoleMemoryUnavailableError(RuntimeError):
    """Recall / manual reflection asked for while ROLE_MEMORY_MODE is not ``active``."""


def require_active(what: str, mode: str | None = None) -> None:
    """Refuse with a clear message unless this process runs with ROLE_MEMORY_MODE=active."""
    mode = SETTINGS.role_memory_mode if mode is None else mode
    if mode != "active":
        raise RoleMemoryUnavailableError(
            f"{what} is not available: ROLE_MEMORY_MODE is '{mode}' for this process "
            f"(recall and manual reflection are registered only in 'active'; set ROLE_MEMORY_MODE=active "
            f"and restart)"
        )


@dataclass(frozen=True)
class RecallHit:
    case_id: str
    decision_id: str
    role_id: str
    symbol: str
    scenario: str | None
    direction: str
    classification: str
    lesson: str | None
    decision_text: str | None
    outcome: str | None
    score: float
    reflected_at: datetime
    known_at: datetime
    reflector: str
    execution_id: str | None
    primary_run_id: str | None

    def as_dict(self) -> dict:
        return asdict(self)


RECALL_INDEX = tables.ROLE_RECALL_INDEX
NEXT_INDEX = "_recall_index_next"  # the index as its inputs now give it, before it replaces the stored one
# the columns the term index fills in (recall_terms.py), so not part of what the inputs give
_DERIVED = "doc_no, base2"
_RECALLABLE = ", ".join(f"'{c}'" for c in RECALLABLE_CLASSES)

# One row per reflection of a currently recallable case, valid from its reflected_at until the
# case's next reflection (of any class or run): "the newest reflection at or before as_of" becomes
# a range predicate, so a query is a filtered scan with no aggregation or join.
RECALL_INDEX_SQL = f"""
WITH recallable AS (  -- only the history of a case with a recallable reflection can end up here
    SELECT DISTINCT case_id FROM main.role_reflections WHERE classification IN ({_RECALLABLE})
),
history AS (  -- each reflection of (case, run) is the newest until the next one of that run
    SELECT rr.*, lead(rr.known_at) OVER (
               PARTITION BY rr.case_id, rr.run_id ORDER BY rr.known_at, rr.reflection_id) AS superseded_at
    FROM main.role_reflections rr
    SEMI JOIN recallable r ON r.case_id = rr.case_id
),
valid AS (  -- visible while its run is primary and it is the newest reflection of that run
    SELECT h.*, greatest(h.known_at, ep.primary_from) AS valid_from,
           CASE WHEN h.superseded_at IS NULL THEN ep.primary_until
                WHEN ep.primary_until IS NULL THEN h.superseded_at
                ELSE least(h.superseded_at, ep.primary_until) END AS valid_to
    FROM history h
    JOIN main.role_cases rc0 ON rc0.case_id = h.case_id
    JOIN main.evaluation_primaries ep ON ep.decision_id = rc0.decision_id AND ep.run_id = h.run_id
)
SELECT rc.role_id, rc.symbol, rc.scenario, v.valid_from, v.valid_to,
       rc.case_id, rc.decision_id, rc.direction, v.classification, v.lesson, rc.decision_text, v.outcome,
       v.reflected_at, v.known_at, v.reflector, rc.execution_id, v.run_id AS primary_run_id,
       lower(coalesce(rc.decision_text, '') || ' ' || coalesce(v.lesson, '')) AS doc,
       {md5_upper_sql("doc")} AS doc_id, NULL::INTEGER AS doc_no, NULL::DOUBLE AS base2,
       -- recall's order after the score, as one number unique in the index (so also its key): by
       -- role, newest known first, then case id (then the reflection and its interval, so two rows
       -- of one case known at one instant have one order)
       row_number() OVER (
           ORDER BY rc.role_id, v.known_at DESC, rc.case_id, v.reflection_id, v.valid_from) AS tie
FROM valid v
JOIN main.role_cases rc ON rc.case_id = v.case_id AND rc.role_id = v.role_id
WHERE {chain_eligible_sql("rc")} AND v.classification IN ({_RECALLABLE})
  AND (v.valid_to IS NULL OR v.valid_to > v.valid_from)
ORDER BY rc.role_id, tie
"""


def rebuild_recall_index(
    con: duckdb.DuckDBPyConnection, *, keep_if_unchanged: bool = False, changed_decisions: str | None = None
) -> str | None:
    """Rebuild the recall index from role_cases and role_reflections (call inside the writer's transaction).

    Every writer of either table calls this, so recall never sees a case whose eligibility or
    reflections changed since. With ``keep_if_unchanged`` (role_cases: a later day's cases rarely
    change one with a recallable reflection), the rows are built aside first, and when they equal
    the stored index's, the stored index and its term statistics are kept. Returns ``"rebuilt"``
    or ``"unchanged"``, and None (building nothing) until both tables exist. ``changed_decisions``
    (with ``keep_if_unchanged``: a table of the only decisions whose cases or primary intervals
    may have changed since the stored index was built) keeps the index without building it aside
    when none of their cases has a recallable reflection.
    """
    if not (table_exists(con, tables.ROLE_CASES) and table_exists(con, tables.ROLE_REFLECTIONS)):
        return None
    # an index whose term index an older version wrote is rebuilt, whatever its rows
    keep_if_unchanged = keep_if_unchanged and table_exists(con, RECALL_INDEX) and not layout_outdated(con)
    if keep_if_unchanged and changed_decisions is not None:
        ((affected,),) = con.execute(
            f"SELECT EXISTS (SELECT 1 FROM main.role_reflections rr JOIN main.role_cases rc USING (case_id) "
            f"WHERE rr.classification IN ({_RECALLABLE}) "
            f"AND rc.decision_id IN (SELECT decision_id FROM {changed_decisions}))"
        ).fetchall()
        if not affected:
            return "unchanged"
    if keep_if_unchanged:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {NEXT_INDEX} AS {RECALL_INDEX_SQL}")
        try:
            if _same_rows(con):
                return "unchanged"
            con.execute(f"CREATE OR REPLACE TABLE {RECALL_INDEX} AS SELECT * FROM {NEXT_INDEX}")
        finally:
            con.execute(f"DROP TABLE {NEXT_INDEX}")
    else:
        con.execute(f"CREATE OR REPLACE TABLE {RECALL_INDEX} AS {RECALL_INDEX_SQL}")
    rebuild_terms_and_stats(con)
    # a read fetches its k rows by tie: an ART index makes that a lookup instead of a scan
    con.execute(f"CREATE INDEX {RECALL_INDEX.split('.')[-1]}_tie ON {RECALL_INDEX} (tie)")
    return "rebuilt"


def _same_rows(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the stored index holds exactly the rows just built (as multisets)."""
    shapes = [con.execute(f"DESCRIBE {t}").fetchall() for t in (RECALL_INDEX, NEXT_INDEX)]
    if shapes[0] != shapes[1]:  # written by another version of this code
        return False
    stored, fresh = (f"SELECT * EXCLUDE ({_DERIVED}) FROM {t}" for t in (RECALL_INDEX, NEXT_INDEX))
    ((differ,),) = con.execute(
        f"SELECT EXISTS ({stored} EXCEPT ALL {fresh}) OR EXISTS ({fresh} EXCEPT ALL {stored})"
    ).fetchall()
    return not differ


def _as_of(value: str | datetime | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return parse_as_of(value)


def search_cases(
    con: duckdb.DuckDBPyConnection,
    role_id: str,
    query: str,
    symbol: str | None = None,
    scenario: str | None = None,
    k: int = 5,
    as_of: str | datetime | None = None,
) -> list[RecallHit]:
    """The filtered, ranked recall over an open warehouse connection (no mode check: see ``recall``)."""
    if not role_id:
        raise ValueError("recall needs a role (--role): there is no generic role to fall back to")
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    columns = [f for f in RecallHit.__dataclass_fields__ if f != "score"]
    try:
        rows = ranked(
            con,
            columns,
            role_id=role_id,
            query=query,
            symbol=symbol,
            scenario=scenario,
            k=k,
            as_of=_as_of(as_of),
        )
    except duckdb.CatalogException:
        if table_exists(con, RECALL_INDEX):
            raise
        return []  # nothing built yet: asked only after an error, not before every read
    return [RecallHit(**dict(zip([*columns, "score"], row, strict=True))) for row in rows]


def recall(
    role_id: str,
    query: str,
    *,
    db: str | Path | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    **filters: Any,
) -> list[RecallHit]:
    """Recall a role's lessons and success patterns; refused unless ROLE_MEMORY_MODE=active.

    ``filters`` are those of ``search_cases`` (``symbol``, ``scenario``, ``k``, ``as_of``). Reads the
    warehouse read-only (``TRADINGMEM_DB`` unless ``db`` or an open ``con`` is given). Without
    ``as_of``, "now" is ``TRADINGMEM_AS_OF`` when set (a replay), else no time limit.
    """
    require_active("recall")
    if filters.get("as_of") is None:
        filters["as_of"] = default_as_of()
    if con is not None:
        return search_cases(con, role_id, query, **filters)
    with connection(db or default_db_path(), read_only=True) as ro:
        return search_cases(ro, role_id, query, **filters)
