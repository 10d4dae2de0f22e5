"""Memory layers (SPEC section 10): short-term session contexts and mid- to long-term promotion.

No Dagster here. Session contexts are set-based Polars over plain frames;
``ACTIVE_SESSION_MESSAGES_SQL`` is a read pushdown that selects a superset of the messages the rules
need (``session_contexts`` re-applies them). The promotion is set-based DuckDB SQL that stays in the
warehouse (``create_promotions``, ``create_user_facts``: millions of units never come into Python);
``classify_units`` and ``user_facts`` run the same statements over plain frames in a throw-away
in-memory DuckDB, and ``count_units_awaiting_adjudication`` reads ``raw.memory_unit`` for the doctor.

Rules this module commits to (also in docs/profile.md):
- A session is active at ``as_of`` when its newest message is at most 30 minutes before ``as_of``
  and its oldest message at most 24 hours before it (both inclusive); messages after ``as_of`` do
  not exist yet. A session whose messages name more than one customer is never given a context
  (it would show one customer's words to another); it is reported instead.
- Token estimate of a text: every CJK character (Han, kana, Hangul, CJK and full-width
  punctuation) counts 1 token, the remaining characters count ceil(n / 4).
- A context holds the newest messages whose running estimate (newest first) stays within 4096
  tokens. When the newest message alone is over the budget it is kept, cut to the longest prefix
  that fits, and marked ``truncated``.
- A memory unit's status, first match wins: ``not_yet_valid`` (valid_from > as_of), ``expired``
  (valid_until <= as_of), ``awaiting_adjudication`` (conflict_count > 0), ``below_threshold``
  (evidence_count < 2 and confidence < 0.90), ``stale`` (updated_at older than MEMORY_STALE_DAYS
  before as_of: a demotion), else ``promoted``. ``reasons`` lists every code that applies.
- A promoted unit becomes one user_fact: ``fact_id`` = ``uf_`` + sha256(unit_id)[:16];
  ``promoted_at`` = max(valid_from, updated_at), the instant the unit's current state first met
  the rule, so a fact keeps its promotion time across runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dtypes import UTC_TS, as_utc

SESSION_IDLE = timedelta(minutes=30)
SESSION_MAX_AGE = timedelta(hours=24)
SESSION_TOKEN_BUDGET = 4096

PROMOTION_MIN_EVIDENCE = 2
PROMOTION_MIN_CONFIDENCE = 0.90

RISK_LEVEL_KEY = "preference:risk_level"
ASSET_CLASS_KEY = "preference:asset_class"
HORIZON_KEY = "profile:investment_horizon"
CRITICAL_FACT_KEYS: tuple[str, ...] = (RISK_LEVEL_KEY, HORIZON_KEY)

UNIT_STATUSES = ("not_yet_valid", "expired", "awaiting_adjudication", "below_threshold", "stale", "promoted")

# Han (incl. extension A and compatibility), kana, Hangul, CJK and full-width punctuation. Literal
# characters, so Python's ``re`` and Polars' Rust regex read the same class.
CJK_CLASS = (
    "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u31f0-\u31ff"
    "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\u3000-\u303f\uff00-\uffef]"
)


SESSION_CONTEXTS_SCHEMA = pl.Schema(
    {
        "session_id": pl.String(),
        "customer_id": pl.String(),
        "messages": pl.String(),
        "token_estimate": pl.Int64(),
        "message_count": pl.Int64(),
        "started_at": UTC_TS,
        "last_message_at": UTC_TS,
    }
)

MEMORY_PROMOTIONS_SCHEMA = pl.Schema(
    {
        "unit_id": pl.String(),
        "customer_id": pl.String(),
        "fact_key": pl.String(),
        "fact_value": pl.String(),
        "status": pl.String(),
        "reasons": pl.List(pl.String()),
        "detail": pl.String(),
        "confidence": pl.Float64(),
        "evidence_count": pl.Int64(),
        "conflict_count": pl.Int64(),
        "valid_from": UTC_TS,
        "valid_until": UTC_TS,
        "updated_at": UTC_TS,
        "source_portal": pl.String(),
        "source_episode_id": pl.String(),
        "evidence_rows": pl.Int64(),
    }
)

USER_FACTS_SCHEMA = pl.Schema(
    {
        "fact_id": pl.String(),
        "customer_id": pl.String(),
        "fact_key": pl.String(),
        "fact_value": pl.String(),
        "is_critical": pl.Boolean(),
        "confidence": pl.Float64(),
        "evidence_count": pl.Int64(),
        "source_unit_id": pl.String(),
        "source_portal": pl.String(),
        "source_episode_id": pl.String(),
        "promoted_at": UTC_TS,
    }
)


def sha256_hex(values: pl.Series) -> pl.Series:
    """sha256 (hex) of every string of a column, computed by DuckDB over Arrow (no Python loop)."""
    frame = pl.DataFrame({"v": values.cast(pl.String)})
    con = duckdb.connect()
    try:
        con.register("_v", frame)
        return con.sql("SELECT sha256(v) AS h FROM _v").pl().get_column("h").alias(values.name)
    finally:
        con.close()


def hashed_ids(prefix: str, keys: pl.Series) -> pl.Series:
    """Deterministic ids: ``prefix`` + the first 16 hex characters of sha256 of each natural key."""
    return pl.select(pl.lit(prefix) + pl.lit(sha256_hex(keys)).str.slice(0, 16)).to_series()


# --- short-term: session contexts ---------------------------------------------------------------


def token_estimate_expr(column: str | pl.Expr) -> pl.Expr:
    """Estimated tokens of a text column: CJK characters count 1, other characters ceil(n / 4)."""
    text = (pl.col(column) if isinstance(column, str) else column).fill_null("")
    cjk = text.str.count_matches(CJK_CLASS).cast(pl.Int64)
    other = text.str.len_chars().cast(pl.Int64) - cjk
    return cjk + (other + 3) // 4


def estimate_tokens(text: str | None) -> int:
    """The same estimate for one Python string (used to cut an oversized message)."""
    if not text:
        return 0
    frame = pl.DataFrame({"t": [text]})
    return int(frame.select(token_estimate_expr("t")).item())


def truncate_to_budget(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose estimate is within ``budget`` tokens."""
    cjk = re.compile(CJK_CLASS)
    n_cjk = n_other = 0
    for i, ch in enumerate(text):
        if cjk.match(ch):
            n_cjk += 1
        else:
            n_other += 1
        if n_cjk + (n_other + 3) // 4 > budget:
            return text[:i]
    return text


@dataclass(frozen=True)
class SessionContexts:
    contexts: pl.DataFrame
    mixed_customer_sessions: pl.DataFrame  # session_id, customer_ids: active sessions refused a context
    active_sessions: int


def _json_list(column: str) -> pl.Expr:
    """A list-of-struct column as a JSON array (Polars encodes structs; unwrap the outer object)."""
    prefix = '{"' + column + '":'
    return pl.struct(pl.col(column)).struct.json_encode().str.strip_prefix(prefix).str.strip_suffix("}")


def session_contexts(
    messages: pl.DataFrame,
    as_of: datetime,
    *,
    idle: timedelta = SESSION_IDLE,
    max_age: timedelta = SESSION_MAX_AGE,
    budget: int = SESSION_TOKEN_BUDGET,
) -> SessionContexts:
    """Per session active at ``as_of``: its newest messages within the token budget.

    ``messages``: message_id, session_id, customer_id, role, content, created_at.
    """
    visible = as_utc(messages).filter(pl.col("created_at") <= as_of)
    sessions = visible.group_by("session_id").agg(
        pl.col("created_at").min().alias("started_at"),
        pl.col("created_at").max().alias("last_message_at"),
        pl.col("customer_id").n_unique().alias("n_customers"),
        pl.col("customer_id").unique().sort().alias("customer_ids"),
    )
    active = sessions.filter(
        (pl.col("last_message_at") >= as_of - idle) & (pl.col("started_at") >= as_of - max_age)
    )
    mixed = active.filter(pl.col("n_customers") > 1).select("session_id", "customer_ids").sort("session_id")
    usable = active.filter(pl.col("n_customers") == 1).select("session_id", "started_at", "last_message_at")

    newest_first = (
        visible.join(usable.select("session_id"), on="session_id", how="semi")
        .with_columns(token_estimate_expr("content").alias("tokens"))
        .sort(["session_id", "created_at", "message_id"], descending=[False, True, True])
        .with_columns(
            pl.col("tokens").cum_sum().over("session_id").alias("running"),
            pl.int_range(pl.len()).over("session_id").alias("rank"),
        )
    )
    kept = newest_first.filter((pl.col("running") <= budget) | (pl.col("rank") == 0)).with_columns(
        (pl.col("tokens") > budget).alias("truncated")
    )
    oversized = kept.filter(pl.col("truncated"))
    if oversized.height:  # rare: only a newest message larger than the whole budget
        cut = oversized.select(
            "message_id",
            pl.Series("cut", [truncate_to_budget(t or "", budget) for t in oversized.get_column("content")]),
        )
        kept = (
            kept.join(cut, on="message_id", how="left")
            .with_columns(pl.coalesce("cut", "content").alias("content"))
            .drop("cut")
            .with_columns(
                pl.when(pl.col("truncated"))
                .then(token_estimate_expr("content"))
                .otherwise("tokens")
                .alias("tokens")
            )
        )
    contexts = (
        kept.sort(["session_id", "created_at", "message_id"])
        .group_by("session_id", maintain_order=True)
        .agg(
            pl.col("customer_id").first(),
            pl.struct(
                "message_id",
                "role",
                "content",
                pl.col("created_at"),
                pl.col("tokens").alias("token_estimate"),
                "truncated",
            ).alias("messages"),
            pl.col("tokens").sum().alias("token_estimate"),
            pl.len().alias("message_count"),
        )
        .with_columns(_json_list("messages").alias("messages"))
        .join(usable, on="session_id", how="left")
        .select(SESSION_CONTEXTS_SCHEMA.names())
        .cast(SESSION_CONTEXTS_SCHEMA)  # type: ignore[arg-type]
        .sort("session_id")
    )
    return SessionContexts(contexts=contexts, mixed_customer_sessions=mixed, active_sessions=active.height)


# Only the messages of sessions that can be active at $1 (the same rule, pushed into the read so a
# warehouse of millions of messages is never loaded whole); ``session_contexts`` re-applies it.
ACTIVE_SESSION_MESSAGES_SQL = f"""
WITH active AS (
    SELECT session_id FROM raw.conversation_message WHERE created_at <= $1
    GROUP BY session_id
    HAVING max(created_at) >= $1 - INTERVAL {int(SESSION_IDLE.total_seconds())} SECOND
       AND min(created_at) >= $1 - INTERVAL {int(SESSION_MAX_AGE.total_seconds())} SECOND
)
SELECT m.message_id, m.session_id, m.customer_id, m.role, m.content, m.created_at
FROM raw.conversation_message m SEMI JOIN active USING (session_id)
WHERE m.created_at <= $1
"""


# --- mid-term -> long-term: promotion ------------------------------------------------------------
#
# Set-based SQL over raw.memory_unit / raw.memory_evidence (``create_promotions``) and
# memory_promotions (``create_user_facts``); ``classify_units`` and ``user_facts`` run the same
# statements over plain frames.

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


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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

_STATUS = " ".join(f"WHEN {cond} THEN {_sql_text(code)}" for code, (cond, _) in _STATUS_RULES.items())
_REASONS = ", ".join(
    f"CASE WHEN {cond} THEN {_sql_text(code)} END" for code, (cond, _) in _STATUS_RULES.items()
)
_DETAIL = " ".join(f"WHEN {cond} THEN {detail}" for cond, detail in _STATUS_RULES.values())

PROMOTIONS_SQL = f"""
WITH evidence AS (
    SELECT unit_id, count(*) AS evidence_rows
    FROM raw.memory_evidence
    WHERE created_at <= $as_of
    GROUP BY unit_id
)
SELECT unit_id, customer_id, fact_key, fact_value,
       CASE {_STATUS} ELSE 'promoted' END AS status,
       list_filter([{_REASONS}], lambda code: code IS NOT NULL) AS reasons,
       CASE {_DETAIL} ELSE {_PROMOTED_DETAIL} END AS detail,
       confidence, evidence_count, conflict_count, valid_from, valid_until, updated_at,
       source_portal, source_episode_id, coalesce(evidence.evidence_rows, 0) AS evidence_rows
FROM raw.memory_unit LEFT JOIN evidence USING (unit_id)
WHERE created_at <= $as_of
"""


def create_promotions(
    con: duckdb.DuckDBPyConnection, as_of: datetime, stale_days: int, table: str = tables.MEMORY_PROMOTIONS
) -> None:
    """The promotion decision of every memory unit known at ``as_of`` (created_at <= as_of), into
    ``table`` (MEMORY_PROMOTIONS_SCHEMA, ordered by unit_id). Reads raw.memory_unit and
    raw.memory_evidence; ``evidence_rows`` counts the unit's evidence rows known at ``as_of``."""
    params = {"as_of": as_of, "stale_before": as_of - timedelta(days=stale_days), "stale_days": stale_days}
    con.execute(f"CREATE OR REPLACE TABLE {table} AS {PROMOTIONS_SQL} ORDER BY unit_id", params)


def user_facts_sql(promotions: str) -> str:
    """The long-term facts (USER_FACTS_SCHEMA): one per promoted unit of ``promotions``."""
    critical = ", ".join(_sql_text(k) for k in CRITICAL_FACT_KEYS)
    return f"""
SELECT 'uf_' || left(sha256(unit_id), 16) AS fact_id, customer_id, fact_key, fact_value,
       fact_key IN ({critical}) AS is_critical, confidence, evidence_count,
       unit_id AS source_unit_id, source_portal, source_episode_id,
       greatest(valid_from, updated_at) AS promoted_at
FROM {promotions}
WHERE status = 'promoted'
"""


def create_user_facts(
    con: duckdb.DuckDBPyConnection, promotions: str = tables.MEMORY_PROMOTIONS, table: str = tables.USER_FACTS
) -> None:
    """``user_facts_sql`` into ``table``, ordered by customer_id, fact_key, fact_id."""
    order = "customer_id, fact_key, fact_id"
    con.execute(f"CREATE OR REPLACE TABLE {table} AS {user_facts_sql(promotions)} ORDER BY {order}")


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
    return as_utc(out).cast(MEMORY_PROMOTIONS_SCHEMA)  # type: ignore[arg-type]


def user_facts(promotions: pl.DataFrame) -> pl.DataFrame:
    """``user_facts_sql`` over a plain memory_promotions frame."""
    con = _in_memory()
    try:
        con.register("_promotions", promotions)
        out = con.sql(f"{user_facts_sql('_promotions')} ORDER BY customer_id, fact_key, fact_id").pl()
    finally:
        con.close()
    return as_utc(out).cast(USER_FACTS_SCHEMA)  # type: ignore[arg-type]


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
