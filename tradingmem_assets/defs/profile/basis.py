"""The generation basis of a profile (SPEC section 10): per field {source, row_ids, rule, reason}.

No Dagster here. SQL over the columns of a ``build.create_profiles`` table. Every field has a
``generation_basis`` entry; ``row_ids`` are ``<table>:<id>`` so a reader can walk back; ``reason``
says why, also (above all) when the value is null. ``generation_basis_sql`` writes it as DuckDB's
``to_json`` of that struct; ``basis_struct_sql`` gives the same entry as a struct, for validation.
The reasons are computed once per row, as the columns ``<field>_reason`` (``reason_columns_sql``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tradingmem_assets.defs.memory.facts import ASSET_CLASS_KEY, HORIZON_KEY
from tradingmem_assets.defs.profile.fields import (
    FIELD_OWNERS,
    PROFILE_FIELDS,
    RULES,
    SUITABILITY_CONFLICT_TAG,
    risk_ceiling_sql,
)
from tradingmem_assets.lib.sql_json import Text, json_document, json_object, json_value, sql_literal

# Why a unit of a profile key is not a fact, in the basis (the full detail is in memory_promotions).
_HELD_BACK = {
    "below_threshold": "is a one-off statement (below threshold)",
    "awaiting_adjudication": "waits for adjudication (conflicting evidence)",
    "stale": "was demoted: stale (no new evidence within MEMORY_STALE_DAYS)",
    "expired": "expired (valid_until passed)",
    "not_yet_valid": "is not valid yet",
}
# SQL over memory_promotions rows: why a unit is held back, in words.
HELD_BACK_TEXT = (
    "CASE status "
    + " ".join(f"WHEN {sql_literal(status)} THEN {sql_literal(text)}" for status, text in _HELD_BACK.items())
    + " ELSE 'held back' END"
)


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
    return f"CASE WHEN {condition} THEN {sql_literal(text)} END"


def _fact_reason(prefix: str, key: str) -> str:
    """Null when a fact was used and no other unit of the key was held back; else why not."""
    others = f"'not facts: ' || {prefix}_others"
    absent = sql_literal(f"no promoted user_fact for {key}")
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
        "CASE WHEN n_above_inv > 0 THEN n_above_inv::VARCHAR || ' buy(s) above ' "
        f"|| {risk_ceiling_sql('investor_type')} || ' in 90d' END, "
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
        "ELSE n_within::VARCHAR || ' of ' || n_buys::VARCHAR || ' buys within ' "
        f"|| {risk_ceiling_sql('investor_type')} END",
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
    return json_document(
        json_object(
            {
                field: json_object(
                    {
                        "source": Text(json.dumps(FIELD_OWNERS[field])),
                        "row_ids": json_object({table: ids.as_json for table, ids in row_ids.items()}),
                        "rule": Text(json.dumps(RULES[field])),
                        "reason": json_value(f"{field}_reason"),
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
        ids = ", ".join(f"{sql_literal(table)}: {i.as_list}" for table, i in row_ids.items())
        entries.append(
            f"{sql_literal(field)}: {{'source': {sql_literal(FIELD_OWNERS[field])}, 'row_ids': {{{ids}}}, "
            f"'rule': {sql_literal(RULES[field])}, 'reason': {field}_reason}}"
        )
    return "{" + ", ".join(entries) + "}"


def reason_columns_sql() -> str:
    """The projection ``<reason> AS <field>_reason`` of every field (canonical order)."""
    return ",\n       ".join(f"{reason} AS {field}_reason" for field, reason in _basis_reasons().items())
