"""The profile build (SPEC section 10): every customer's profile as set-based DuckDB SQL.

No Dagster here. ``create_profiles`` builds every profile from the tables its fields are owned by
(``fields.FIELD_OWNERS``): the big inputs (transactions, questionnaires, facts) never leave DuckDB,
which spills to disk under the connection's ``memory_limit``; ``build_profiles`` runs the same SQL
over plain frames. The field rules are in ``fields``, the basis entries in ``basis``.

``snapshot_hash`` = sha256 of the canonical profile JSON (``profile``, see ``lib.sql_json``):
compact, keys sorted (customer_id included). Snapshots and their versions are in ``snapshots``.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.memory.facts import RISK_LEVEL_KEY
from tradingmem_assets.defs.profile.basis import (
    HELD_BACK_TEXT,
    basis_struct_sql,
    generation_basis_sql,
    reason_columns_sql,
)
from tradingmem_assets.defs.profile.fields import (
    BEHAVIOR_WINDOW,
    FACT_PREFIXES,
    FIN_CUSTOMER_PROFILE_DTYPES,
    FREQUENCY_WINDOW,
    PROFILE_FIELDS,
    SUITABILITY_CONFLICT_TAG,
    self_reports,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.sql_json import (
    json_document,
    json_number,
    json_object,
    json_timestamp,
    json_value,
    lower_hex_escapes,
    sql_literal,
)
from tradingmem_assets.lib.warehouse import run_stages

# Unicode White_Space (what Polars' and Rust's ``\s`` match) as an RE2 class body: DuckDB's ``\s``
# is ASCII only.
_WHITESPACE = r"\t\n\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"


def _profile_json() -> str:
    """The canonical profile JSON (before the escapes are lowered)."""
    kinds = {"behavior_score": json_number, "total_asset": json_number, "opened_at": json_timestamp}
    members = {f: kinds.get(f, json_value)(f) for f in sorted(("customer_id", *PROFILE_FIELDS))}
    return json_document(json_object(members))


def _per_key(aggregate: str, alias: str) -> str:
    """One FILTERed aggregate per profile fact key, named ``<prefix>_<alias>``."""
    return ",\n           ".join(
        f"{aggregate} FILTER (WHERE fact_key = {sql_literal(key)}) AS {prefix}_{alias}"
        for key, prefix in FACT_PREFIXES.items()
    )


_FACT_KEYS = ", ".join(sql_literal(k) for k in FACT_PREFIXES)
# per key: the newest promoted fact (promoted_at, confidence, evidence_count, fact_id)
_CHOSEN_FACTS = _per_key(
    "arg_max({'value': fact_value, 'fact_id': fact_id, 'unit_id': source_unit_id}, "
    "(promoted_at, confidence, evidence_count, fact_id))",
    "fact",
)
# per key: why the other units are not facts, by unit_id
_HELD_BACK_UNITS = _per_key(
    f"string_agg('unit ' || unit_id || ' ' || {HELD_BACK_TEXT}, '; ' ORDER BY unit_id)", "others"
)
_FACT_FIELDS = ", ".join(  # the chosen fact of each key unpacked (rl_value, rl_fact_id, ...), and the others
    [f"{p}_fact.{c} AS {p}_{c}" for p in FACT_PREFIXES.values() for c in ("value", "fact_id", "unit_id")]
    + [f"{p}_others" for p in FACT_PREFIXES.values()]
)
_REASONS = reason_columns_sql()
SELF_REPORTS_VIEW = "_profile_self_reports"

# Per customer opened at or before $as_of (of those the condition __CUSTOMERS__ keeps): every value
# of the profile, and the row ids and reasons of its basis, into the temp table __INTO__, in stages (temp tables of what the next stages read,
# which DuckDB spills under its memory limit: one query over all of it ran out of memory at SF 30).
# Reads raw.customers, raw.questionnaire_results, raw.customer_transactions,
# main.user_facts, main.memory_promotions and the self-report lookup.
PROFILE_INPUTS_SCRIPT = f"""
CREATE OR REPLACE TEMP TABLE _pf_base AS (
    SELECT customer_id, real_name, birth_date, occupation, mobile, opened_at
    FROM raw.customers
    WHERE (opened_at IS NULL OR opened_at <= $as_of) AND __CUSTOMERS__
);
CREATE OR REPLACE TEMP TABLE _pf_latest_questionnaire AS (
    SELECT customer_id, arg_max({{'investor_type': investor_type, 'assessment_id': assessment_id}},
                                (assessed_at, assessment_id)) AS latest
    FROM raw.questionnaire_results
    WHERE assessed_at <= $as_of AND __CUSTOMERS__
    GROUP BY customer_id
);
CREATE OR REPLACE TEMP TABLE _pf_balance AS (  -- the latest instant, then the highest txn_id among same-instant rows
    -- (two plain aggregates: one arg_max over a (ts, txn_id) key compared rows as structs, slower)
    WITH balanced AS (
        SELECT customer_id, txn_id, ts, balance_after FROM raw.customer_transactions
        WHERE ts <= $as_of AND balance_after IS NOT NULL AND __CUSTOMERS__
    )
    SELECT customer_id, arg_max({{'total_asset': balance_after, 'txn_id': txn_id}}, txn_id) AS latest
    FROM balanced
    JOIN (SELECT customer_id, max(ts) AS ts FROM balanced GROUP BY customer_id) USING (customer_id, ts)
    GROUP BY customer_id
);
CREATE OR REPLACE TEMP TABLE _pf_window_tx AS (  -- the longest window a field reads
    SELECT customer_id, txn_id, ts, side, product_risk_level
    FROM raw.customer_transactions
    WHERE ts <= $as_of AND ts > $as_of - INTERVAL {max(FREQUENCY_WINDOW, BEHAVIOR_WINDOW).days} DAY
      AND __CUSTOMERS__
);
CREATE OR REPLACE TEMP TABLE _pf_recent AS (
    SELECT customer_id, count(*) AS trading_frequency, list(txn_id ORDER BY txn_id) AS recent_ids
    FROM _pf_window_tx
    WHERE ts > $as_of - INTERVAL {FREQUENCY_WINDOW.days} DAY
    GROUP BY customer_id
);
CREATE OR REPLACE TEMP TABLE _pf_chosen_facts AS (
    SELECT customer_id,
           {_CHOSEN_FACTS}
    FROM main.user_facts
    WHERE fact_key IN ({_FACT_KEYS}) AND __CUSTOMERS__
    GROUP BY customer_id
);
CREATE OR REPLACE TEMP TABLE _pf_held_back AS (
    SELECT customer_id,
           {_HELD_BACK_UNITS}
    FROM main.memory_promotions
    WHERE fact_key IN ({_FACT_KEYS}) AND status <> 'promoted' AND __CUSTOMERS__
    GROUP BY customer_id
);
CREATE OR REPLACE TEMP TABLE _pf_subject AS (
    SELECT base.*, latest.investor_type, latest.assessment_id, {_FACT_FIELDS},
           s.self_class, s.self_tag,
           substr(latest.investor_type, 2)::TINYINT AS inv_level,
           substr(s.self_class, 2)::TINYINT AS self_level
    FROM _pf_base base
    LEFT JOIN _pf_latest_questionnaire latest_questionnaire USING (customer_id)
    LEFT JOIN _pf_chosen_facts chosen_facts USING (customer_id)
    LEFT JOIN _pf_held_back held_back USING (customer_id)
    LEFT JOIN {SELF_REPORTS_VIEW} s ON s.rl_value = chosen_facts.rl_fact.value
);
CREATE OR REPLACE TEMP TABLE _pf_buys AS (
    SELECT t.customer_id,
           count(*) AS n_buys,
           count(*) FILTER (WHERE t.level <= s.inv_level) AS n_within,
           list(t.txn_id ORDER BY t.txn_id) AS buy_ids,
           count(*) FILTER (WHERE t.level > s.inv_level) AS n_above_inv,
           list(t.txn_id ORDER BY t.txn_id) FILTER (WHERE t.level > s.inv_level) AS above_inv_ids,
           count(*) FILTER (WHERE s.inv_level IS NULL AND t.level > s.self_level) AS n_above_self,
           list(t.txn_id ORDER BY t.txn_id) FILTER (WHERE s.inv_level IS NULL AND t.level > s.self_level)
               AS above_self_ids
    FROM (SELECT customer_id, txn_id, substr(product_risk_level, 2)::TINYINT AS level
          FROM _pf_window_tx
          WHERE side = 'buy' AND ts > $as_of - INTERVAL {BEHAVIOR_WINDOW.days} DAY) t
    JOIN _pf_subject s USING (customer_id)
    GROUP BY t.customer_id
);
CREATE OR REPLACE TEMP TABLE __INTO__ AS
WITH joined AS (
    SELECT subject.*, balance.latest.total_asset, balance.latest.txn_id AS balance_txn_id,
           coalesce(recent.trading_frequency, 0) AS trading_frequency, recent.recent_ids,
           coalesce(buys.n_buys, 0) AS n_buys, buys.n_within, buys.buy_ids,
           coalesce(buys.n_above_inv, 0) AS n_above_inv, buys.above_inv_ids,
           coalesce(buys.n_above_self, 0) AS n_above_self, buys.above_self_ids,
           coalesce(subject.self_class <> subject.investor_type, false) AS c_differs
    FROM _pf_subject subject
    LEFT JOIN _pf_balance balance USING (customer_id)
    LEFT JOIN _pf_recent recent USING (customer_id)
    LEFT JOIN _pf_buys buys USING (customer_id)
)
SELECT * EXCLUDE (m, inv_level, self_level, self_tag),
       -- 2 decimals, half to even on the scaled value: the rounding the stored profiles were hashed with
       CASE WHEN investor_type IS NOT NULL AND n_buys > 0
            THEN round_even(100.0::DOUBLE * n_within / n_buys * 100, 0) / 100 END AS behavior_score,
       ac_value AS preferred_asset_class,
       hz_value AS investment_horizon,
       -- "self_reported:..." sorts before "suitability_conflict": the list is already in order
       list_filter([self_tag, CASE WHEN conflict THEN {sql_literal(SUITABILITY_CONFLICT_TAG)} END],
                   lambda t: t IS NOT NULL) AS risk_tags,
       CASE WHEN length(m) >= 8 THEN left(m, 3) || repeat('*', length(m) - 7) || right(m, 4)
            ELSE repeat('*', length(m)) END AS mobile_masked
FROM (SELECT *, c_differs OR n_above_inv > 0 OR n_above_self > 0 AS conflict,
             regexp_replace(mobile, '[{_WHITESPACE}\\-]', '', 'g') AS m
      FROM joined)
ORDER BY customer_id;
"""


def _with_profile_sql(inputs: str) -> str:
    """The inputs plus the basis reasons, ``profile`` and ``snapshot_hash``: projections only, so
    the rows keep the inputs' order."""
    return f"""
SELECT * EXCLUDE (profile_text), sha256(profile) AS snapshot_hash
FROM (SELECT *, {lower_hex_escapes("profile_text")} AS profile
      FROM (SELECT *, {_REASONS}, {_profile_json()} AS profile_text FROM {inputs}))
"""


def create_profiles(
    con: duckdb.DuckDBPyConnection, as_of: datetime, table: str, customers: str = "TRUE"
) -> None:
    """Build every profile (of the customers the SQL condition ``customers`` keeps) into the temp
    table ``table``, ordered by customer_id.

    Columns: FIN_CUSTOMER_PROFILE_DTYPES's values (without generation_basis and profile_version),
    ``snapshot_hash``, ``profile`` (the canonical JSON the hash covers), and the row ids and
    reasons ``generation_basis_sql`` and ``basis_struct_sql`` read. Needs raw.customers,
    raw.questionnaire_results, raw.customer_transactions, main.user_facts and main.memory_promotions.
    """
    reported = con.sql(
        "SELECT DISTINCT fact_value FROM main.user_facts WHERE fact_key = ?", params=[RISK_LEVEL_KEY]
    ).pl()
    inputs = f"{table}_inputs"
    con.register(SELF_REPORTS_VIEW, self_reports(reported.get_column("fact_value")))
    try:
        script = PROFILE_INPUTS_SCRIPT.replace("__INTO__", inputs).replace("__CUSTOMERS__", customers)
        run_stages(con, script, {"as_of": as_of}, keep=inputs)
    finally:
        con.unregister(SELF_REPORTS_VIEW)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {_with_profile_sql(inputs)}")
    con.execute(f"DROP TABLE {inputs}")


def profile_rows_sql(source: str, also: tuple[str, ...] = ()) -> str:
    """FIN_CUSTOMER_PROFILE_DTYPES's columns plus ``profile`` (and the ``also`` columns) from ``source``: rows of
    a ``create_profiles`` table with their ``profile_version``, kept in ``source``'s order.
    generation_basis, the widest column, is written only here, once the rows are sorted and filtered."""
    columns = [*FIN_CUSTOMER_PROFILE_DTYPES.names()[:-3], f"{generation_basis_sql()} AS generation_basis"]
    columns += ["snapshot_hash", "profile_version", "profile", *also]
    return f"SELECT {', '.join(columns)} FROM {source}"


BUILD_INPUTS: dict[str, dict[str, pl.DataType]] = {
    tables.raw_table("customers"): {
        "customer_id": pl.String(),
        "real_name": pl.String(),
        "birth_date": pl.Date(),
        "occupation": pl.String(),
        "mobile": pl.String(),
        "opened_at": UTC_TS,
    },
    tables.raw_table("questionnaire_results"): {
        "assessment_id": pl.String(),
        "customer_id": pl.String(),
        "investor_type": pl.String(),
        "assessed_at": UTC_TS,
    },
    tables.raw_table("customer_transactions"): {
        "txn_id": pl.String(),
        "customer_id": pl.String(),
        "ts": UTC_TS,
        "product_risk_level": pl.String(),
        "side": pl.String(),
        "balance_after": pl.Float64(),
    },
    tables.USER_FACTS: {
        "fact_id": pl.String(),
        "customer_id": pl.String(),
        "fact_key": pl.String(),
        "fact_value": pl.String(),
        "confidence": pl.Float64(),
        "evidence_count": pl.Int64(),
        "source_unit_id": pl.String(),
        "promoted_at": UTC_TS,
    },
    tables.MEMORY_PROMOTIONS: {
        "unit_id": pl.String(),
        "customer_id": pl.String(),
        "fact_key": pl.String(),
        "status": pl.String(),
    },
}


def build_profiles(
    customers: pl.DataFrame,
    questionnaires: pl.DataFrame,
    transactions: pl.DataFrame,
    facts: pl.DataFrame,
    as_of: datetime,
    promotions: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``create_profiles`` over plain frames (an in-memory DuckDB exposes them under the warehouse's
    table names): one row per customer opened at or before ``as_of``, sorted by customer_id.

    ``customers``/``questionnaires``/``transactions``: the raw landing columns. ``facts``: user_facts.
    ``promotions`` (optional): memory_promotions, only used to explain why a unit is not a fact.
    Returns FIN_CUSTOMER_PROFILE_DTYPES columns (``profile_version`` null) plus ``profile`` and ``basis``
    (generation_basis as a struct, for validation).
    """
    frames = [customers, questionnaires, transactions, facts, promotions]
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE SCHEMA raw")
        for (table, schema), frame in zip(BUILD_INPUTS.items(), frames, strict=True):
            data = pl.DataFrame(schema=schema) if frame is None else frame.select(list(schema))
            con.register("_input", data)
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM _input")
            con.unregister("_input")
        create_profiles(con, as_of, "_profiles")
        rows = (
            f"(SELECT *, NULL::BIGINT AS profile_version, {basis_struct_sql()} AS basis "
            "FROM _profiles ORDER BY customer_id)"
        )
        built = con.sql(profile_rows_sql(rows, also=("basis",))).pl()
    finally:
        con.close()
    return built.cast({**FIN_CUSTOMER_PROFILE_DTYPES, "profile": pl.String()})  # type: ignore[arg-type]
