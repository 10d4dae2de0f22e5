"""Mid-term -> long-term memory (SPEC section 10): the promotion of memory units to user_facts.

No Dagster here. Set-based DuckDB SQL over raw.memory_unit / raw.memory_evidence
(``create_promotions``) and memory_promotions (``create_user_facts``) that stays in the warehouse
(millions of units never come into Python); ``classify_units`` and ``user_facts`` run the same
statements over plain frames in a throw-away in-memory DuckDB, and
``count_units_awaiting_adjudication`` reads ``raw.memory_unit`` for the doctor.

Rules this module commits to (also in docs/profile.md):
- A memory unit's status, first match wins: ``not_yet_valid`` (valid_from > as_of), ``expired``
  (valid_until <= as_of), ``awaiting_adjudication`` (conflict_count > 0), ``below_threshold``
  (evidence_count < 2 and confidence < 0.90), ``stale`` (updated_at older than MEMORY_STALE_DAYS
  before as_of: a demotion), else ``promoted``. ``reasons`` lists every code that applies.
- Incremental (SPEC section 14): while the basis of the last build holds (``lib.basis``: every raw
  row created at or before its ``as_of`` is unchanged) and its two tables are as its run left them,
  a unit's row can change only when, in ``(since, as_of]``, it was created, got evidence, became
  valid, expired, or went stale (``updated_at`` crossed ``as_of - MEMORY_STALE_DAYS``): only those
  units are decided again (``touch_units``); ``tests/memory/test_incremental.py`` proves the
  tables equal to a full build's.
- A promoted unit becomes one user_fact: ``fact_id`` = ``uf_`` + sha256(unit_id)[:16];
  ``promoted_at`` = max(valid_from, updated_at), the instant the unit's current state first met
  the rule, so a fact keeps its promotion time across runs; ``known_at`` = the unit's updated_at
  then (SPEC section 16).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import polars as pl

from tradingmem_assets.defs.memory.facts import CRITICAL_FACT_KEYS
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import touched_only, visible_rows
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.dtypes import UTC_TS, as_utc
from tradingmem_assets.lib.sql_json import sql_literal

PROMOTION_MIN_EVIDENCE = 2
PROMOTION_MIN_CONFIDENCE = 0.90

UNIT_STATUSES = ("not_yet_valid", "expired", "awaiting_adjudication", "below_threshold", "stale", "promoted")

MEMORY_PROMOTIONS_DTYPES = table_dtypes(tables.MEMORY_PROMOTIONS)

USER_FACTS_DTYPES = table_dtypes(tables.USER_FACTS)

UNIT_COLUMNS = (
    "unit_id",
    "customer_id",
    "fact_key",
    "fact_value",
    "confidence",
    "evidence_count",
    "conflict_count",
    "valid_from",
    "valid_until",
    "source_portal",
    "source_episode_id",
    "created_at",
    "updated_at",
)


def _day(column: str) -> str:
    return f"strftime({column}, '%Y-%m-%d')"


# 4 decimals, half to even on the scaled value: the rounding the stored decisions were written with
_CONFIDENCE = "(round_even(confidence * 10000, 0) / 10000)::VARCHAR"

# first match wins; $as_of and $stale_before are the run's instants
_STATUS_RULES: dict[str, tuple[str, str]] = {  # code: (condition, detail)
    "not_yet_valid": ("valid_from > $as_of", f"'not valid yet: valid_from ' || {_day('valid_from')}"),
    "expired": (
        "valid_until IS NOT NULL AND valid_until <= $as_of",
        f"'expired: valid_until ' || {_day('valid_until')}",
    ),
    "awaiting_adjudication": (
        "conflict_count > 0",
        "'waits for adjudication: conflict_count ' || conflict_count::VARCHAR || ' > 0'",
    ),
    "below_threshold": (
        f"evidence_count < {PROMOTION_MIN_EVIDENCE} AND confidence < {PROMOTION_MIN_CONFIDENCE!r}::DOUBLE",
        f"'one-off statement: evidence_count ' || evidence_count::VARCHAR || ' < {PROMOTION_MIN_EVIDENCE}"
        f" and confidence ' || {_CONFIDENCE} || ' < {PROMOTION_MIN_CONFIDENCE:.2f}'",
    ),
    "stale": (
        "updated_at < $stale_before",
        f"'demoted: stale, no new evidence since ' || {_day('updated_at')} || ' (more than "
        "MEMORY_STALE_DAYS=' || $stale_days::VARCHAR || ' days before as_of)'",
    ),
}
_PROMOTED_DETAIL = (
    "'promoted: evidence_count ' || evidence_count::VARCHAR || ' / confidence ' || "
    f"{_CONFIDENCE} || ' meet the threshold (evidence >= {PROMOTION_MIN_EVIDENCE} or confidence >= "
    f"{PROMOTION_MIN_CONFIDENCE:.2f}), no conflict, valid and fresh'"
)

_STATUS = " ".join(f"WHEN {cond} THEN {sql_literal(code)}" for code, (cond, _) in _STATUS_RULES.items())
_REASONS = ", ".join(
    f"CASE WHEN {cond} THEN {sql_literal(code)} END" for code, (cond, _) in _STATUS_RULES.items()
)
_DETAIL = " ".join(f"WHEN {cond} THEN {detail}" for cond, detail in _STATUS_RULES.values())

PROMOTIONS_SQL = f"""
WITH evidence AS (
    SELECT unit_id, count(*) AS evidence_rows
    FROM raw.memory_evidence
    WHERE created_at <= $as_of AND {{units}}
    GROUP BY unit_id
)
SELECT unit_id, customer_id, fact_key, fact_value,
       CASE {_STATUS} ELSE 'promoted' END AS status,
       list_filter([{_REASONS}], lambda code: code IS NOT NULL) AS reasons,
       CASE {_DETAIL} ELSE {_PROMOTED_DETAIL} END AS detail,
       confidence, evidence_count, conflict_count, valid_from, valid_until, updated_at,
       source_portal, source_episode_id, coalesce(evidence.evidence_rows, 0) AS evidence_rows
FROM raw.memory_unit LEFT JOIN evidence USING (unit_id)
WHERE created_at <= $as_of AND {{units}}
"""

# what the promotion reads, as known at its as_of (its basis), and the tables it writes
PROMOTION_VISIBLE = {
    "memory_unit": visible_rows(tables.raw_table("memory_unit"), "created_at"),
    "memory_evidence": visible_rows(tables.raw_table("memory_evidence"), "created_at"),
}
PROMOTION_TABLES = (tables.MEMORY_PROMOTIONS, tables.USER_FACTS)
TOUCHED_UNITS = "_mp_touched"
# the units whose decision an instant in (since, as_of] can change (see the module's rules)
_TOUCHED_UNITS_SQL = f"""
CREATE OR REPLACE TEMP TABLE {TOUCHED_UNITS} AS
SELECT unit_id FROM raw.memory_unit
WHERE (created_at > $since AND created_at <= $as_of)
   OR (valid_from > $since AND valid_from <= $as_of)
   OR (valid_until > $since AND valid_until <= $as_of)
   OR (updated_at >= $since - $stale AND updated_at < $as_of - $stale)
UNION
SELECT unit_id FROM raw.memory_evidence WHERE created_at > $since AND created_at <= $as_of
"""


def touch_units(con: duckdb.DuckDBPyConnection, since: datetime, as_of: datetime, stale_days: int) -> str:
    """The units whose decision can differ at ``as_of`` from the one taken at ``since``, into temp
    table ``TOUCHED_UNITS`` (one column, unit_id)."""
    con.execute(_TOUCHED_UNITS_SQL, {"since": since, "as_of": as_of, "stale": timedelta(days=stale_days)})
    return TOUCHED_UNITS


def create_promotions(
    con: duckdb.DuckDBPyConnection,
    as_of: datetime,
    stale_days: int,
    table: str = tables.MEMORY_PROMOTIONS,
    units: str | None = None,
) -> None:
    """The promotion decision of every memory unit known at ``as_of`` (created_at <= as_of), into
    ``table`` (MEMORY_PROMOTIONS_DTYPES, ordered by unit_id). Reads raw.memory_unit and
    raw.memory_evidence; ``evidence_rows`` counts the unit's evidence rows known at ``as_of``.
    ``units`` (a table of unit_id): decide only those again, in the stored ``table``."""
    params = {"as_of": as_of, "stale_before": as_of - timedelta(days=stale_days), "stale_days": stale_days}
    sql = PROMOTIONS_SQL.format(units=touched_only(units, "unit_id"))
    if units is None:
        con.execute(f"CREATE OR REPLACE TABLE {table} AS {sql} ORDER BY unit_id", params)
        return
    con.execute(f"DELETE FROM {table} WHERE {touched_only(units, 'unit_id')}")
    con.execute(f"INSERT INTO {table} BY NAME {sql} ORDER BY unit_id", params)


def user_facts_sql(promotions: str, units: str | None = None) -> str:
    """The long-term facts (USER_FACTS_DTYPES): one per promoted unit of ``promotions`` (of the
    table ``units`` only, when given)."""
    critical = ", ".join(sql_literal(k) for k in CRITICAL_FACT_KEYS)
    return f"""
SELECT 'uf_' || left(sha256(unit_id), 16) AS fact_id, customer_id, fact_key, fact_value,
       fact_key IN ({critical}) AS is_critical, confidence, evidence_count,
       unit_id AS source_unit_id, source_portal, source_episode_id,
       greatest(valid_from, updated_at) AS promoted_at,
       -- SPEC section 16: the unit's updated_at when it met the promotion rule
       updated_at AS known_at
FROM {promotions}
WHERE status = 'promoted' AND {touched_only(units, "unit_id")}
"""


def create_user_facts(
    con: duckdb.DuckDBPyConnection,
    promotions: str = tables.MEMORY_PROMOTIONS,
    table: str = tables.USER_FACTS,
    units: str | None = None,
) -> None:
    """``user_facts_sql`` into ``table``, ordered by customer_id, fact_key, fact_id; ``units`` (a
    table of unit_id): only the facts of those units again, in the stored ``table``."""
    order = "customer_id, fact_key, fact_id"
    if units is None:
        con.execute(f"CREATE OR REPLACE TABLE {table} AS {user_facts_sql(promotions)} ORDER BY {order}")
        return
    con.execute(f"DELETE FROM {table} WHERE source_unit_id IN (SELECT unit_id FROM {units})")
    con.execute(f"INSERT INTO {table} BY NAME {user_facts_sql(promotions, units)} ORDER BY {order}")


def _in_memory() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA raw")
    return con


def classify_units(
    units: pl.DataFrame,
    as_of: datetime,
    stale_days: int,
    evidence: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``create_promotions`` over plain frames.

    ``units``: the columns of ``raw.memory_unit``. ``evidence`` (optional): unit_id, created_at.
    """
    if evidence is None:
        evidence = pl.DataFrame(schema={"unit_id": pl.String, "created_at": UTC_TS})
    con = _in_memory()
    try:
        con.register("_units", units.select(UNIT_COLUMNS))
        con.register("_evidence", evidence.select("unit_id", "created_at"))
        con.execute("CREATE TABLE raw.memory_unit AS SELECT * FROM _units")
        con.execute("CREATE TABLE raw.memory_evidence AS SELECT * FROM _evidence")
        create_promotions(con, as_of, stale_days, "_promotions")
        out = con.sql("SELECT * FROM _promotions ORDER BY unit_id").pl()
    finally:
        con.close()
    return as_utc(out).cast(MEMORY_PROMOTIONS_DTYPES)  # type: ignore[arg-type]


def user_facts(promotions: pl.DataFrame) -> pl.DataFrame:
    """``user_facts_sql`` over a plain memory_promotions frame."""
    con = _in_memory()
    try:
        con.register("_promotions", promotions)
        out = con.sql(f"{user_facts_sql('_promotions')} ORDER BY customer_id, fact_key, fact_id").pl()
    finally:
        con.close()
    return as_utc(out).cast(USER_FACTS_DTYPES)  # type: ignore[arg-type]


def units_awaiting_adjudication(units: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Units with conflicting evidence that are valid at ``as_of``: they wait for a human decision.

    The doctor counts these. Same precedence as ``classify_units``: an expired or not-yet-valid
    unit needs no adjudication; staleness and thresholds do not matter (conflict outranks them).
    """
    if units.height == 0:
        return units.clear().with_columns(pl.lit(None, dtype=pl.String).alias("detail"))
    classified = classify_units(units, as_of, stale_days=36500)
    return classified.filter(pl.col("status") == "awaiting_adjudication").select(
        "unit_id", "customer_id", "fact_key", "fact_value", "conflict_count", "updated_at", "detail"
    )


def count_units_awaiting_adjudication(con: duckdb.DuckDBPyConnection, as_of: datetime) -> int:
    """The doctor's number: units in ``raw.memory_unit`` waiting for adjudication at ``as_of``.

    0 when the landing table does not exist yet.
    """
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables "
        "WHERE table_schema = 'raw' AND table_name = 'memory_unit'"
    ).fetchall()[0][0]
    if not exists:
        return 0
    units = con.sql(
        "SELECT unit_id, customer_id, fact_key, fact_value, confidence, evidence_count, conflict_count, "
        "valid_from, valid_until, created_at, updated_at, NULL::VARCHAR AS source_portal, "
        "NULL::VARCHAR AS source_episode_id FROM raw.memory_unit WHERE conflict_count > 0"
    ).pl()
    return units_awaiting_adjudication(units, as_of).height
