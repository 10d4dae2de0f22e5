"""The customer profile (SPEC section 10): field ownership and generation basis, as set-based SQL.

Set-based DuckDB SQL builds every profile from the tables it owns (``create_profiles``): the big
inputs (transactions, questionnaires, facts) never leave DuckDB, which spills to disk under the
connection's ``memory_limit``; ``build_profiles`` runs the same SQL over plain frames. Each field
has exactly one writer:

- ``investor_type``: the latest questionnaire result (assessed_at <= as_of; ties: highest
  assessment_id). Nothing said in a conversation can reach it.
- ``total_asset``: balance_after of the latest transaction (ts, txn_id) at or before as_of that
  carries a balance. ``trading_frequency``: transactions with ts in (as_of - 30 days, as_of].
  ``behavior_score``: 100 x share of buys with ts in (as_of - 90 days, as_of] whose product risk
  level is <= the investor type's (C1->R1 ... C5->R5), rounded to 2 decimals (half to even);
  null without a questionnaire or without buys.
- ``preferred_asset_class``, ``investment_horizon``, ``risk_tags``: promoted user_facts only (the
  newest by promoted_at, then confidence, evidence_count, fact_id). A self-reported risk level
  becomes the tag ``self_reported:<value>``; ``suitability_conflict`` is added when two of the
  three sources disagree (self-report class != investor_type; a buy above the investor type's
  level; without a questionnaire, a buy above the self-report's level).
- identity: the customers row; ``mobile_masked`` keeps the first 3 and last 4 characters of the
  number (whitespace and dashes removed) and stars the rest; 7 characters or fewer are fully starred.

Every field has a ``generation_basis`` entry {source, row_ids, rule, reason}; ``row_ids`` are
``<table>:<id>`` so a reader can walk back; ``reason`` says why, also (above all) when the value
is null. ``generation_basis`` is DuckDB's ``to_json`` of that struct. ``snapshot_hash`` = sha256
of the canonical profile JSON (``profile``): compact, keys sorted (customer_id included), dates
ISO, timestamps ``YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]+00:00``, floats in shortest round-trip form
(plain from 1e-5 to 1e16, else ``1e-7`` / ``1e+16``; NaN and infinities null), control
characters escaped with lower-case hex. Snapshots and their versions are in ``core.snapshots``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import polars as pl

from tradingmem_assets.defs.memory.layers import ASSET_CLASS_KEY, HORIZON_KEY, RISK_LEVEL_KEY
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dtypes import UTC_TS

FREQUENCY_WINDOW = timedelta(days=30)
BEHAVIOR_WINDOW = timedelta(days=90)

# Self-reported risk preferences and the investor class each one claims (SPEC section 10).
SELF_REPORT_CLASSES: dict[str, str] = {
    "保守型": "C1",
    "conservative": "C1",
    "稳健型": "C2",
    "moderately conservative": "C2",
    "平衡型": "C3",
    "balanced": "C3",
    "成长型": "C4",
    "growth": "C4",
    "进取型": "C5",
    "激进型": "C5",
    "aggressive": "C5",
    **{f"c{i}": f"C{i}" for i in range(1, 6)},
}
SELF_REPORTED_TAG = "self_reported:"
SUITABILITY_CONFLICT_TAG = "suitability_conflict"

# The profile, in canonical (alphabetical) order: this order is what the snapshot hash covers.
PROFILE_FIELDS: tuple[str, ...] = (
    "behavior_score",
    "birth_date",
    "investment_horizon",
    "investor_type",
    "mobile_masked",
    "occupation",
    "opened_at",
    "preferred_asset_class",
    "real_name",
    "risk_tags",
    "total_asset",
    "trading_frequency",
)
FIELD_OWNERS: dict[str, str] = {
    "investor_type": "questionnaire_results",
    "total_asset": "customer_transactions",
    "trading_frequency": "customer_transactions",
    "behavior_score": "customer_transactions",
    "preferred_asset_class": "user_facts",
    "investment_horizon": "user_facts",
    "risk_tags": "user_facts",
    "real_name": "customers",
    "birth_date": "customers",
    "occupation": "customers",
    "mobile_masked": "customers",
    "opened_at": "customers",
}

PROFILE_SCHEMA = pl.Schema(
    {
        "customer_id": pl.String(),
        "investor_type": pl.String(),
        "total_asset": pl.Float64(),
        "trading_frequency": pl.Int64(),
        "behavior_score": pl.Float64(),
        "preferred_asset_class": pl.String(),
        "investment_horizon": pl.String(),
        "risk_tags": pl.List(pl.String()),
        "real_name": pl.String(),
        "birth_date": pl.Date(),
        "occupation": pl.String(),
        "mobile_masked": pl.String(),
        "opened_at": UTC_TS,
        "generation_basis": pl.String(),
        "snapshot_hash": pl.String(),
        "profile_version": pl.Int64(),
    }
)
# The rule each basis entry names (a short id, so 500,000 profiles stay small) and what it means.
RULES: dict[str, str] = {
    "investor_type": "latest_questionnaire",
    "total_asset": "latest_balance",
    "trading_frequency": "transactions_30d",
    "behavior_score": "buys_within_risk_90d",
    "preferred_asset_class": "newest_promoted_fact",
    "investment_horizon": "newest_promoted_fact",
    "risk_tags": "self_report_and_suitability",
    "real_name": "customers_field",
    "birth_date": "customers_field",
    "occupation": "customers_field",
    "mobile_masked": "customers_mobile_masked",
    "opened_at": "customers_field",
}
RULE_DESCRIPTIONS: dict[str, str] = {
    "latest_questionnaire": "investor_type of the latest questionnaire_results row with assessed_at <= as_of "
    "(ties: highest assessment_id); nothing from memory or conversation can write it",
    "latest_balance": "balance_after of the latest transaction (ts, txn_id) at or before as_of that has one",
    "transactions_30d": "number of transactions with ts in (as_of - 30 days, as_of]",
    "buys_within_risk_90d": "100 x share of buys with ts in (as_of - 90 days, as_of] whose product risk "
    "level <= the investor type's (C1->R1 ... C5->R5); null without questionnaire or buys",
    "newest_promoted_fact": "fact_value of the customer's newest promoted user_fact for the field's key "
    "(promoted_at, confidence, evidence_count, fact_id)",
    "self_report_and_suitability": f"'{SELF_REPORTED_TAG}<value>' from the newest promoted {RISK_LEVEL_KEY} "
    f"fact; '{SUITABILITY_CONFLICT_TAG}' when two of questionnaire, self-report and 90-day buys disagree",
    "customers_field": "copied from the customers row",
    "customers_mobile_masked": "customers.mobile without whitespace/dashes: first 3 and last 4 characters "
    "kept, the rest starred (7 characters or fewer: all starred)",
}

# Why a unit of a profile key is not a fact, in the basis (the full detail is in memory_promotions).
_HELD_BACK = {
    "below_threshold": "is a one-off statement (below threshold)",
    "awaiting_adjudication": "waits for adjudication (conflicting evidence)",
    "stale": "was demoted: stale (no new evidence within MEMORY_STALE_DAYS)",
    "expired": "expired (valid_until passed)",
    "not_yet_valid": "is not valid yet",
}

FACT_PREFIXES = {RISK_LEVEL_KEY: "rl", ASSET_CLASS_KEY: "ac", HORIZON_KEY: "hz"}

# Unicode White_Space (what Polars' and Rust's ``\s`` match) as an RE2 class body: DuckDB's ``\s``
# is ASCII only.
_WHITESPACE = r"\t\n\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"


def normalize_self_report(value: pl.Expr) -> pl.Expr:
    """Lower-case, trim, and fold '_'/'-'/repeated spaces, so 'Moderately_Conservative' matches."""
    return value.str.strip_chars().str.to_lowercase().str.replace_all(r"[_\-\s]+", " ")


def self_report_class(value: pl.Expr) -> pl.Expr:
    """The investor class a self-reported risk preference claims (null when not in the mapping)."""
    return normalize_self_report(value).replace_strict(
        SELF_REPORT_CLASSES, default=None, return_dtype=pl.String
    )


def self_reports(values: pl.Series) -> pl.DataFrame:
    """Per distinct self-reported value: its class and its tag (a lookup of a few rows, joined in SQL)."""
    return pl.DataFrame({"rl_value": values.cast(pl.String).unique()}).select(
        "rl_value",
        self_report_class(pl.col("rl_value")).alias("self_class"),
        (pl.lit(SELF_REPORTED_TAG) + pl.col("rl_value").str.strip_chars()).alias("self_tag"),
    )


# --- canonical JSON in SQL -----------------------------------------------------------------------


def _q(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _json_number(expr: str) -> str:
    """A DOUBLE as canonical JSON: shortest round-trip digits, plain between 1e-5 and 1e16."""
    return (
        f"CASE WHEN {expr} IS NULL OR isnan({expr}) OR isinf({expr}) THEN 'null' "
        f"WHEN {expr} = 0 OR (abs({expr}) >= 1e-5 AND abs({expr}) < 1e16) THEN to_json({expr})::VARCHAR "
        f"ELSE replace({expr}::VARCHAR, 'e-0', 'e-') END"
    )


def _json_timestamp(expr: str) -> str:
    """A UTC timestamp as canonical JSON: ISO-8601, fraction only when set (3 or 6 digits)."""
    micros = f"(microsecond({expr}) % 1000000)"
    return (
        f"coalesce('\"' || strftime({expr}, '%Y-%m-%dT%H:%M:%S') || CASE WHEN {micros} = 0 THEN '' "
        f"WHEN {micros} % 1000 = 0 THEN '.' || lpad(({micros} // 1000)::VARCHAR, 3, '0') "
        f"ELSE '.' || lpad({micros}::VARCHAR, 6, '0') END || '+00:00\"', 'null')"
    )


def _json_value(expr: str) -> str:
    """A string, date, integer or list as JSON (DuckDB's encoding; null as ``null``)."""
    return f"coalesce(to_json({expr})::VARCHAR, 'null')"


class _Text(str):
    """Constant JSON text inside a document being assembled (merged with constant neighbours)."""


def _json_object(members: dict[str, str | list[str]]) -> list[str]:
    """The parts of a JSON object, keys in the given order; a value is SQL giving JSON text, or the
    parts of a nested object."""
    parts: list[str] = [_Text("{")]
    for i, (name, value) in enumerate(members.items()):
        parts.append(_Text(("," if i else "") + json.dumps(name) + ":"))
        parts.extend(value if isinstance(value, list) else [value])
    parts.append(_Text("}"))
    return parts


def _json_document(parts: list[str]) -> str:
    """One variadic concat (a chain of ``||`` copies the growing text at every step); every part
    is non-null by construction."""
    merged: list[str] = []
    for part in parts:
        if isinstance(part, _Text) and merged and isinstance(merged[-1], _Text):
            merged[-1] = _Text(merged[-1] + part)
        else:
            merged.append(part)
    return "concat(" + ", ".join(_q(p) if isinstance(p, _Text) else p for p in merged) + ")"


def _lower_hex_escapes(expr: str) -> str:
    r"""DuckDB writes ``\u001F``, the canonical form is ``\u001f``: lower the hex of the control
    characters whose escape has letters (escaped backslashes are set aside first)."""
    out = f"replace({expr}, '\\\\', chr(1))"
    for code in (0x0B, 0x0E, 0x0F, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F):
        escape = f"\\u{code:04X}"
        out = f"replace({out}, '{escape}', '{escape.lower()}')"
    return f"CASE WHEN contains({expr}, '\\u00') THEN replace({out}, chr(1), '\\\\') ELSE {expr} END"


# --- generation_basis --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ids:
    """The row ids of one table in a basis entry: as a VARCHAR[] (the struct validation checks) and
    as the JSON text written to generation_basis."""

    as_list: str
    as_json: str


def _one_id(column: str) -> _Ids:
    """One id as a one-element list, empty when null."""
    return _Ids(
        f"CASE WHEN {column} IS NULL THEN []::VARCHAR[] ELSE [{column}] END",
        f"CASE WHEN {column} IS NULL THEN '[]' ELSE '[' || to_json({column})::VARCHAR || ']' END",
    )


def _id_list(column: str) -> _Ids:
    """A list column of ids, empty when null."""
    return _Ids(f"coalesce({column}, []::VARCHAR[])", f"coalesce(to_json({column})::VARCHAR, '[]')")


def _ids_when(condition: str, then: _Ids, otherwise: _Ids) -> _Ids:
    return _Ids(
        f"CASE WHEN {condition} THEN {then.as_list} ELSE {otherwise.as_list} END",
        f"CASE WHEN {condition} THEN {then.as_json} ELSE {otherwise.as_json} END",
    )


_NO_IDS = _Ids("[]::VARCHAR[]", "'[]'")


def _fact_ids(prefix: str) -> dict[str, _Ids]:
    return {"user_facts": _one_id(f"{prefix}_fact_id"), "memory_unit": _one_id(f"{prefix}_unit_id")}


def _basis_row_ids() -> dict[str, dict[str, _Ids]]:
    """Per profile field (canonical order): the ids of the rows its value was computed from, per table."""
    customer_ids = {"customers": _one_id("customer_id")}
    row_ids = {
        "investor_type": {"questionnaire_results": _one_id("assessment_id")},
        "total_asset": {"customer_transactions": _one_id("balance_txn_id")},
        "trading_frequency": {"customer_transactions": _id_list("recent_ids")},
        "behavior_score": {"customer_transactions": _id_list("buy_ids")},
        "preferred_asset_class": _fact_ids("ac"),
        "investment_horizon": _fact_ids("hz"),
        "risk_tags": {
            **_fact_ids("rl"),
            "questionnaire_results": _ids_when("conflict", _one_id("assessment_id"), _NO_IDS),
            "customer_transactions": _ids_when(
                "n_above_self > 0", _id_list("above_self_ids"), _id_list("above_inv_ids")
            ),
        },
    }
    for field in ("real_name", "birth_date", "occupation", "mobile_masked", "opened_at"):
        row_ids[field] = customer_ids
    return {field: row_ids[field] for field in PROFILE_FIELDS}


def _when(condition: str, text: str) -> str:
    return f"CASE WHEN {condition} THEN {_q(text)} END"


def _fact_reason(prefix: str, key: str) -> str:
    """Null when a fact was used and no other unit of the key was held back; else why not."""
    others = f"'not facts: ' || {prefix}_others"
    absent = _q(f"no promoted user_fact for {key}")
    return f"CASE WHEN {prefix}_value IS NOT NULL THEN {others} ELSE concat_ws('; ', {absent}, {others}) END"


def _risk_tags_reason() -> str:
    """Always says how the three sources compare (the tags are a risk signal, so say why)."""
    self_part = (
        "CASE WHEN rl_value IS NULL THEN 'no self-report' "
        "WHEN self_class IS NULL THEN 'self-report ''' || rl_value || ''' not in the class mapping' "
        "ELSE 'self-report ''' || rl_value || ''' = ' || self_class END"
    )
    inv_part = "'questionnaire ' || coalesce(investor_type, 'none')"
    conflicts = (
        "concat_ws(', ', "
        f"{_when('c_differs', 'self-report differs from investor_type')}, "
        "CASE WHEN n_above_inv > 0 THEN n_above_inv::VARCHAR || ' buy(s) above R' "
        "|| substr(investor_type, 2) || ' in 90d' END, "
        "CASE WHEN n_above_self > 0 THEN n_above_self::VARCHAR "
        "|| ' buy(s) above the self-reported class in 90d' END)"
    )
    verdict = f"CASE WHEN conflict THEN '{SUITABILITY_CONFLICT_TAG}: ' || {conflicts} ELSE 'no conflict' END"
    return f"concat_ws('; ', {self_part}, {inv_part}, {verdict}, 'not facts: ' || rl_others)"


def _basis_reasons() -> dict[str, str]:
    """Per profile field: why (SQL), computed once as the column ``<field>_reason``.

    ``reason`` is always set when the value is null (why) and for risk_tags and behavior_score;
    for other present values the rule and row ids say it all, so it is null (keeps rows small).
    """
    reasons = {
        "investor_type": _when("investor_type IS NULL", "no questionnaire result at or before as_of"),
        "total_asset": _when("total_asset IS NULL", "no transaction with a balance_after at or before as_of"),
        "trading_frequency": _when("trading_frequency = 0", "no transaction in the last 30 days"),
        "behavior_score": "CASE WHEN investor_type IS NULL "
        "THEN 'no questionnaire: the suitable risk level is unknown' "
        "WHEN n_buys = 0 THEN 'no buys in the last 90 days' "
        "ELSE n_within::VARCHAR || ' of ' || n_buys::VARCHAR || ' buys within R' "
        "|| substr(investor_type, 2) END",
        "preferred_asset_class": _fact_reason("ac", ASSET_CLASS_KEY),
        "investment_horizon": _fact_reason("hz", HORIZON_KEY),
        "risk_tags": _risk_tags_reason(),
    }
    for field, column in (
        ("real_name", "real_name"),
        ("birth_date", "birth_date"),
        ("occupation", "occupation"),
        ("mobile_masked", "mobile"),
        ("opened_at", "opened_at"),
    ):
        reasons[field] = _when(f"{column} IS NULL", f"customers.{column} is null")
    return {field: reasons[field] for field in PROFILE_FIELDS}


def generation_basis_sql() -> str:
    """generation_basis over the columns of a ``create_profiles`` table: per field {source, row_ids,
    rule, reason}, as DuckDB's to_json writes it."""
    return _json_document(
        _json_object(
            {
                field: _json_object(
                    {
                        "source": _Text(json.dumps(FIELD_OWNERS[field])),
                        "row_ids": _json_object({table: ids.as_json for table, ids in row_ids.items()}),
                        "rule": _Text(json.dumps(RULES[field])),
                        "reason": _json_value(f"{field}_reason"),
                    }
                )
                for field, row_ids in _basis_row_ids().items()
            }
        )
    )


def basis_struct_sql() -> str:
    """generation_basis as a struct over the columns of a ``create_profiles`` table: the same ids and
    reasons the JSON is written from, for validation."""
    entries = []
    for field, row_ids in _basis_row_ids().items():
        ids = ", ".join(f"{_q(table)}: {i.as_list}" for table, i in row_ids.items())
        entries.append(
            f"{_q(field)}: {{'source': {_q(FIELD_OWNERS[field])}, 'row_ids': {{{ids}}}, "
            f"'rule': {_q(RULES[field])}, 'reason': {field}_reason}}"
        )
    return "{" + ", ".join(entries) + "}"


def _profile_json() -> str:
    """The canonical profile JSON (before the escapes are lowered)."""
    kinds = {"behavior_score": _json_number, "total_asset": _json_number, "opened_at": _json_timestamp}
    members = {f: kinds.get(f, _json_value)(f) for f in sorted(("customer_id", *PROFILE_FIELDS))}
    return _json_document(_json_object(members))


# --- the profile statements ------------------------------------------------------------------------


def _per_key(aggregate: str, alias: str) -> str:
    """One FILTERed aggregate per profile fact key, named ``<prefix>_<alias>``."""
    return ",\n           ".join(
        f"{aggregate} FILTER (WHERE fact_key = {_q(key)}) AS {prefix}_{alias}"
        for key, prefix in FACT_PREFIXES.items()
    )


_FACT_KEYS = ", ".join(_q(k) for k in FACT_PREFIXES)
# per key: the newest promoted fact (promoted_at, confidence, evidence_count, fact_id)
_CHOSEN_FACTS = _per_key(
    "arg_max({'value': fact_value, 'fact_id': fact_id, 'unit_id': source_unit_id}, "
    "(promoted_at, confidence, evidence_count, fact_id))",
    "fact",
)
_HELD_BACK_TEXT = (
    "CASE status "
    + " ".join(f"WHEN {_q(status)} THEN {_q(text)}" for status, text in _HELD_BACK.items())
    + " ELSE 'held back' END"
)
# per key: why the other units are not facts, by unit_id
_HELD_BACK_UNITS = _per_key(
    f"string_agg('unit ' || unit_id || ' ' || {_HELD_BACK_TEXT}, '; ' ORDER BY unit_id)", "others"
)
_FACT_FIELDS = ", ".join(  # the chosen fact of each key unpacked (rl_value, rl_fact_id, ...), and the others
    [f"{p}_fact.{c} AS {p}_{c}" for p in FACT_PREFIXES.values() for c in ("value", "fact_id", "unit_id")]
    + [f"{p}_others" for p in FACT_PREFIXES.values()]
)
_REASONS = ",\n       ".join(f"{reason} AS {field}_reason" for field, reason in _basis_reasons().items())
SELF_REPORTS_VIEW = "_profile_self_reports"

# Per customer opened at or before $as_of: every value of the profile, and the row ids and reasons
# of its basis. Reads raw.customers, raw.questionnaire_results, raw.customer_transactions,
# main.user_facts, main.memory_promotions and the self-report lookup.
PROFILE_INPUTS_SQL = f"""
WITH base AS (
    SELECT customer_id, real_name, birth_date, occupation, mobile, opened_at
    FROM raw.customers
    WHERE opened_at IS NULL OR opened_at <= $as_of
),
latest_questionnaire AS (
    SELECT customer_id, arg_max({{'investor_type': investor_type, 'assessment_id': assessment_id}},
                                (assessed_at, assessment_id)) AS latest
    FROM raw.questionnaire_results
    WHERE assessed_at <= $as_of
    GROUP BY customer_id
),
balance AS (  -- the latest instant, then the highest txn_id among same-instant rows
    SELECT customer_id, arg_max({{'total_asset': balance_after, 'txn_id': txn_id}}, (ts, txn_id)) AS latest
    FROM raw.customer_transactions
    WHERE ts <= $as_of AND balance_after IS NOT NULL
    GROUP BY customer_id
),
window_tx AS (  -- the longest window a field reads
    SELECT customer_id, txn_id, ts, side, product_risk_level
    FROM raw.customer_transactions
    WHERE ts <= $as_of AND ts > $as_of - INTERVAL {max(FREQUENCY_WINDOW, BEHAVIOR_WINDOW).days} DAY
),
recent AS (
    SELECT customer_id, count(*) AS trading_frequency, list(txn_id ORDER BY txn_id) AS recent_ids
    FROM window_tx
    WHERE ts > $as_of - INTERVAL {FREQUENCY_WINDOW.days} DAY
    GROUP BY customer_id
),
chosen_facts AS (
    SELECT customer_id,
           {_CHOSEN_FACTS}
    FROM main.user_facts
    WHERE fact_key IN ({_FACT_KEYS})
    GROUP BY customer_id
),
held_back AS (
    SELECT customer_id,
           {_HELD_BACK_UNITS}
    FROM main.memory_promotions
    WHERE fact_key IN ({_FACT_KEYS}) AND status <> 'promoted'
    GROUP BY customer_id
),
subject AS (
    SELECT base.*, latest.investor_type, latest.assessment_id, {_FACT_FIELDS},
           s.self_class, s.self_tag,
           substr(latest.investor_type, 2)::TINYINT AS inv_level,
           substr(s.self_class, 2)::TINYINT AS self_level
    FROM base
    LEFT JOIN latest_questionnaire USING (customer_id)
    LEFT JOIN chosen_facts USING (customer_id)
    LEFT JOIN held_back USING (customer_id)
    LEFT JOIN {SELF_REPORTS_VIEW} s ON s.rl_value = chosen_facts.rl_fact.value
),
buys AS (
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
          FROM window_tx
          WHERE side = 'buy' AND ts > $as_of - INTERVAL {BEHAVIOR_WINDOW.days} DAY) t
    JOIN subject s USING (customer_id)
    GROUP BY t.customer_id
),
joined AS (
    SELECT subject.*, balance.latest.total_asset, balance.latest.txn_id AS balance_txn_id,
           coalesce(recent.trading_frequency, 0) AS trading_frequency, recent.recent_ids,
           coalesce(buys.n_buys, 0) AS n_buys, buys.n_within, buys.buy_ids,
           coalesce(buys.n_above_inv, 0) AS n_above_inv, buys.above_inv_ids,
           coalesce(buys.n_above_self, 0) AS n_above_self, buys.above_self_ids,
           coalesce(subject.self_class <> subject.investor_type, false) AS c_differs
    FROM subject
    LEFT JOIN balance USING (customer_id)
    LEFT JOIN recent USING (customer_id)
    LEFT JOIN buys USING (customer_id)
)
SELECT * EXCLUDE (m, inv_level, self_level, self_tag),
       -- 2 decimals, half to even on the scaled value: the rounding the stored profiles were hashed with
       CASE WHEN investor_type IS NOT NULL AND n_buys > 0
            THEN round_even(100.0::DOUBLE * n_within / n_buys * 100, 0) / 100 END AS behavior_score,
       ac_value AS preferred_asset_class,
       hz_value AS investment_horizon,
       -- "self_reported:..." sorts before "suitability_conflict": the list is already in order
       list_filter([self_tag, CASE WHEN conflict THEN {_q(SUITABILITY_CONFLICT_TAG)} END],
                   lambda t: t IS NOT NULL) AS risk_tags,
       CASE WHEN length(m) >= 8 THEN left(m, 3) || repeat('*', length(m) - 7) || right(m, 4)
            ELSE repeat('*', length(m)) END AS mobile_masked
FROM (SELECT *, c_differs OR n_above_inv > 0 OR n_above_self > 0 AS conflict,
             regexp_replace(mobile, '[{_WHITESPACE}\\-]', '', 'g') AS m
      FROM joined)
"""


def _with_profile_sql(inputs: str) -> str:
    """The inputs plus the basis reasons, ``profile`` and ``snapshot_hash``: projections only, so
    the rows keep the inputs' order."""
    return f"""
SELECT * EXCLUDE (profile_text), sha256(profile) AS snapshot_hash
FROM (SELECT *, {_lower_hex_escapes("profile_text")} AS profile
      FROM (SELECT *, {_REASONS}, {_profile_json()} AS profile_text FROM {inputs}))
"""


def create_profiles(con: duckdb.DuckDBPyConnection, as_of: datetime, table: str) -> None:
    """Build every profile into the temp table ``table``, ordered by customer_id.

    Columns: PROFILE_SCHEMA's values (without generation_basis and profile_version),
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
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {inputs} AS {PROFILE_INPUTS_SQL} ORDER BY customer_id",
            {"as_of": as_of},
        )
    finally:
        con.unregister(SELF_REPORTS_VIEW)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {_with_profile_sql(inputs)}")
    con.execute(f"DROP TABLE {inputs}")


def profile_rows_sql(source: str, also: tuple[str, ...] = ()) -> str:
    """PROFILE_SCHEMA's columns plus ``profile`` (and the ``also`` columns) from ``source``: rows of
    a ``create_profiles`` table with their ``profile_version``, kept in ``source``'s order.
    generation_basis, the widest column, is written only here, once the rows are sorted and filtered."""
    columns = [*PROFILE_SCHEMA.names()[:-3], f"{generation_basis_sql()} AS generation_basis"]
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
    Returns PROFILE_SCHEMA columns (``profile_version`` null) plus ``profile`` and ``basis``
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
    return built.cast({**PROFILE_SCHEMA, "profile": pl.String()})  # type: ignore[arg-type]


CUSTOMER_KB_SCHEMA = pl.Schema(
    {"doc_id": pl.String(), "title": pl.String(), "body": pl.String(), "visibility": pl.String()}
)


def customer_kb(documents: pl.DataFrame) -> pl.DataFrame:
    """The customer-facing knowledge base: public documents only (internal ones never reach it)."""
    return (
        documents.filter(pl.col("visibility") == "public")
        .select(CUSTOMER_KB_SCHEMA.names())
        .cast(CUSTOMER_KB_SCHEMA)  # type: ignore[arg-type]
        .sort("doc_id")
    )


def latest_investor_types_sql() -> str:
    """Independent SQL for the red-line check: the latest questionnaire value per customer at $1."""
    return (
        "SELECT customer_id, investor_type AS expected_investor_type FROM raw.questionnaire_results "
        "WHERE assessed_at <= $1 QUALIFY row_number() OVER "
        "(PARTITION BY customer_id ORDER BY assessed_at DESC, assessment_id DESC) = 1"
    )
