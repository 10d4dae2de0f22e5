"""The customer profile (SPEC section 10): field ownership, generation basis, versioned snapshots.

Pure Polars over plain frames. Each field has exactly one writer:

- ``investor_type``: the latest questionnaire result (assessed_at <= as_of; ties: highest
  assessment_id). Nothing said in a conversation can reach it.
- ``total_asset``: balance_after of the latest transaction (ts, txn_id) at or before as_of that
  carries a balance. ``trading_frequency``: transactions with ts in (as_of - 30 days, as_of].
  ``behavior_score``: 100 x share of buys with ts in (as_of - 90 days, as_of] whose product risk
  level is <= the investor type's (C1->R1 ... C5->R5), rounded to 2 decimals; null without a
  questionnaire or without buys.
- ``preferred_asset_class``, ``investment_horizon``, ``risk_tags``: promoted user_facts only (the
  newest by promoted_at, then confidence, evidence_count, fact_id). A self-reported risk level
  becomes the tag ``self_reported:<value>``; ``suitability_conflict`` is added when two of the
  three sources disagree (self-report class != investor_type; a buy above the investor type's
  level; without a questionnaire, a buy above the self-report's level).
- identity: the customers row; ``mobile_masked`` keeps the first 3 and last 4 characters of the
  number (spaces and dashes removed) and stars the rest; 7 characters or fewer are fully starred.

Every field has a ``generation_basis`` entry {source, row_ids, rule, reason}; ``row_ids`` are
``<table>:<id>`` so a reader can walk back; ``reason`` says why, also (above all) when the value
is null. ``snapshot_hash`` = sha256 of the canonical profile JSON (keys sorted, customer_id
included); a snapshot is appended only when it differs from the customer's latest snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import polars as pl

from tradingmem_assets.core.memory import (
    ASSET_CLASS_KEY,
    HORIZON_KEY,
    RISK_LEVEL_KEY,
    as_utc,
    hashed_ids,
)

TS = pl.Datetime("us", "UTC")
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
        "opened_at": TS,
        "generation_basis": pl.String(),
        "snapshot_hash": pl.String(),
        "profile_version": pl.Int64(),
    }
)
SNAPSHOTS_SCHEMA = pl.Schema(
    {
        "snapshot_id": pl.String(),
        "customer_id": pl.String(),
        "version": pl.Int64(),
        "profile": pl.String(),
        "generation_basis": pl.String(),
        "snapshot_hash": pl.String(),
        "is_current": pl.Boolean(),
        "created_at": TS,
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
    "customers_mobile_masked": "customers.mobile without spaces/dashes: first 3 and last 4 characters kept, "
    "the rest starred (7 characters or fewer: all starred)",
}

_EMPTY_IDS = pl.lit([], dtype=pl.List(pl.String))
_SEP = "\x1f"  # a separator no id or tag contains: concat_str + split beats concat_list by far


def normalize_self_report(value: pl.Expr) -> pl.Expr:
    """Lower-case, trim, and fold '_'/'-'/repeated spaces, so 'Moderately_Conservative' matches."""
    return value.str.strip_chars().str.to_lowercase().str.replace_all(r"[_\-\s]+", " ")


def self_report_class(value: pl.Expr) -> pl.Expr:
    """The investor class a self-reported risk preference claims (null when not in the mapping)."""
    return normalize_self_report(value).replace_strict(
        SELF_REPORT_CLASSES, default=None, return_dtype=pl.String
    )


def mask_mobile(mobile: pl.Expr) -> pl.Expr:
    """Keep the first 3 and last 4 characters (spaces/dashes removed); 7 or fewer: all starred."""
    m = mobile.str.replace_all(r"[\s\-]", "")
    n = m.str.len_chars()
    middle = m.str.slice(3, n - 7).str.replace_all(r"(?s).", "*")
    return (
        pl.when(n >= 8)
        .then(m.str.slice(0, 3) + middle + m.str.slice(-4))
        .otherwise(m.str.replace_all(r"(?s).", "*"))
    )


def _ids(column: str) -> pl.Expr:
    """A list column of row ids (empty when the customer has none)."""
    return pl.col(column).fill_null(_EMPTY_IDS)


def _one_id(column: str) -> pl.Expr:
    """One id as a one-element list (splitting on a separator no id contains is the fast way)."""
    return pl.col(column).str.split(_SEP).fill_null(_EMPTY_IDS)


def _entry(field: str, row_ids: dict[str, pl.Expr], reason: pl.Expr) -> pl.Expr:
    """One basis entry; ``row_ids`` maps each table the value was computed from to its row ids."""
    return pl.struct(
        pl.lit(FIELD_OWNERS[field]).alias("source"),
        pl.struct(**row_ids).alias("row_ids"),
        pl.lit(RULES[field]).alias("rule"),
        reason.alias("reason"),
    ).alias(field)


# Why a unit of a profile key is not a fact, in the basis (the full detail is in memory_promotions).
_HELD_BACK = {
    "below_threshold": "is a one-off statement (below threshold)",
    "awaiting_adjudication": "waits for adjudication (conflicting evidence)",
    "stale": "was demoted: stale (no new evidence within MEMORY_STALE_DAYS)",
    "expired": "expired (valid_until passed)",
    "not_yet_valid": "is not valid yet",
}

FACT_PREFIXES = {RISK_LEVEL_KEY: "rl", ASSET_CLASS_KEY: "ac", HORIZON_KEY: "hz"}


def _facts_by_key(facts: pl.LazyFrame, promotions: pl.LazyFrame | None) -> dict[str, pl.LazyFrame]:
    """Per profile key: per customer the chosen fact and why other units of the key are not facts."""
    keys = list(FACT_PREFIXES)
    chosen = (
        facts.filter(pl.col("fact_key").is_in(keys))
        .group_by("customer_id", "fact_key")
        .agg(
            pl.col("fact_value", "fact_id", "source_unit_id")
            .sort_by(["promoted_at", "confidence", "evidence_count", "fact_id"])
            .last()
        )
        .rename({"fact_value": "value", "source_unit_id": "unit_id"})
    )
    others = pl.LazyFrame(schema={"customer_id": pl.String, "fact_key": pl.String, "others": pl.String})
    if promotions is not None:
        others = (
            promotions.filter(pl.col("fact_key").is_in(keys) & (pl.col("status") != "promoted"))
            .with_columns(pl.col("status").replace_strict(_HELD_BACK, default="held back"))
            .group_by("customer_id", "fact_key")
            .agg(
                pl.format("unit {} {}", "unit_id", "status").sort_by("unit_id").str.join("; ").alias("others")
            )
        )
    both = chosen.join(others, on=["customer_id", "fact_key"], how="full", coalesce=True)
    out = {}
    for key, prefix in FACT_PREFIXES.items():
        out[key] = both.filter(pl.col("fact_key") == key).select(
            "customer_id",
            *[pl.col(c).alias(f"{prefix}_{c}") for c in ("value", "fact_id", "unit_id", "others")],
        )
    return out


def _fact_reason(prefix: str, key: str) -> pl.Expr:
    """Null when a fact was used and no other unit of the key was held back; else why not."""
    others = pl.lit("not facts: ") + pl.col(f"{prefix}_others")
    absent = pl.lit(f"no promoted user_fact for {key}")
    return (
        pl.when(pl.col(f"{prefix}_value").is_not_null())
        .then(others)
        .otherwise(pl.concat_str([absent, others], separator="; ", ignore_nulls=True))
    )


def _fact_ids(prefix: str) -> dict[str, pl.Expr]:
    return {"user_facts": _one_id(f"{prefix}_fact_id"), "memory_unit": _one_id(f"{prefix}_unit_id")}


def build_profiles(
    customers: pl.DataFrame,
    questionnaires: pl.DataFrame,
    transactions: pl.DataFrame,
    facts: pl.DataFrame,
    as_of: datetime,
    promotions: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One profile row per customer opened at or before ``as_of``, with its generation basis.

    ``customers``/``questionnaires``/``transactions``: the raw landing columns. ``facts``: user_facts.
    ``promotions`` (optional): memory_promotions, only used to explain why a unit is not a fact.
    Returns PROFILE_SCHEMA columns (``profile_version`` null) plus ``profile`` (the canonical JSON
    the hash covers), ``basis`` (generation_basis as a struct, for validation before writing) and
    ``basis_md5`` (md5 of generation_basis, for change detection).
    """
    # one lazy plan, collected once: Polars runs the independent aggregations side by side
    customers, questionnaires, transactions, facts = (
        as_utc(f).lazy() for f in (customers, questionnaires, transactions, facts)
    )
    held_back = as_utc(promotions).lazy() if promotions is not None and promotions.height else None
    base = customers.filter(pl.col("opened_at").is_null() | (pl.col("opened_at") <= as_of))

    order_q = ["assessed_at", "assessment_id"]
    latest_q = (
        questionnaires.filter(pl.col("assessed_at") <= as_of)
        .group_by("customer_id")
        .agg(pl.col("investor_type", "assessment_id").sort_by(order_q).last())
    )
    tx = transactions.filter(pl.col("ts") <= as_of)
    # the latest instant first (a window max), then the highest txn_id among same-instant rows:
    # far cheaper than sorting every customer's history
    balance = (
        tx.filter(pl.col("balance_after").is_not_null())
        .filter(pl.col("ts") == pl.col("ts").max().over("customer_id"))
        .group_by("customer_id")
        .agg(
            pl.col("balance_after").sort_by("txn_id").last().alias("total_asset"),
            pl.col("txn_id").max().alias("balance_txn_id"),
        )
    )
    recent = (
        tx.filter(pl.col("ts") > as_of - FREQUENCY_WINDOW)
        .group_by("customer_id")
        .agg(
            pl.len().cast(pl.Int64).alias("trading_frequency"),
            pl.col("txn_id").sort().alias("recent_ids"),
        )
    )
    by_key = _facts_by_key(facts, held_back)
    rl, ac, hz = by_key[RISK_LEVEL_KEY], by_key[ASSET_CLASS_KEY], by_key[HORIZON_KEY]

    levels = (
        base.select("customer_id")
        .join(latest_q.select("customer_id", "investor_type"), on="customer_id", how="left")
        .join(rl.select("customer_id", "rl_value"), on="customer_id", how="left")
        .select(
            "customer_id",
            pl.col("investor_type").str.slice(1).cast(pl.Int8).alias("inv_level"),
            self_report_class(pl.col("rl_value")).str.slice(1).cast(pl.Int8).alias("self_level"),
        )
    )
    level = pl.col("level")
    above_inv = level > pl.col("inv_level")
    above_self = pl.col("inv_level").is_null() & (level > pl.col("self_level"))
    buys = (
        tx.filter((pl.col("side") == "buy") & (pl.col("ts") > as_of - BEHAVIOR_WINDOW))
        .join(levels, on="customer_id", how="inner")
        .with_columns(pl.col("product_risk_level").str.slice(1).cast(pl.Int8).alias("level"))
        .group_by("customer_id")
        .agg(
            pl.len().cast(pl.Int64).alias("n_buys"),
            (level <= pl.col("inv_level")).sum().cast(pl.Int64).alias("n_within"),
            pl.col("txn_id").sort().alias("buy_ids"),
            above_inv.sum().cast(pl.Int64).alias("n_above_inv"),
            pl.col("txn_id").filter(above_inv).sort().alias("above_inv_ids"),
            above_self.sum().cast(pl.Int64).alias("n_above_self"),
            pl.col("txn_id").filter(above_self).sort().alias("above_self_ids"),
        )
    )

    frame = (
        base.join(latest_q, on="customer_id", how="left")
        .join(balance, on="customer_id", how="left")
        .join(recent, on="customer_id", how="left")
        .join(buys, on="customer_id", how="left")
        .join(rl, on="customer_id", how="left")
        .join(ac, on="customer_id", how="left")
        .join(hz, on="customer_id", how="left")
        .with_columns(
            pl.col("trading_frequency", "n_buys", "n_above_inv", "n_above_self").fill_null(0),
            self_report_class(pl.col("rl_value")).alias("self_class"),
        )
        .with_columns(
            (
                pl.col("self_class").is_not_null()
                & pl.col("investor_type").is_not_null()
                & (pl.col("self_class") != pl.col("investor_type"))
            ).alias("c_differs"),
        )
        .with_columns(
            (pl.col("c_differs") | (pl.col("n_above_inv") > 0) | (pl.col("n_above_self") > 0)).alias(
                "conflict"
            )
        )
    )
    tags = pl.concat_str(
        [
            pl.lit(SELF_REPORTED_TAG) + pl.col("rl_value").str.strip_chars(),
            pl.when(pl.col("conflict")).then(pl.lit(SUITABILITY_CONFLICT_TAG)),
        ],
        separator=_SEP,
        ignore_nulls=True,
    )
    values = frame.with_columns(
        pl.when(pl.col("investor_type").is_not_null() & (pl.col("n_buys") > 0))
        .then((100.0 * pl.col("n_within") / pl.col("n_buys")).round(2))
        .otherwise(None)
        .alias("behavior_score"),
        pl.col("ac_value").alias("preferred_asset_class"),
        pl.col("hz_value").alias("investment_horizon"),
        # "self_reported:..." sorts before "suitability_conflict": the list is already in order
        pl.when(tags == "").then(_EMPTY_IDS).otherwise(tags.str.split(_SEP)).alias("risk_tags"),
        mask_mobile(pl.col("mobile")).alias("mobile_masked"),
    )
    values = values.with_columns(_basis().alias("basis"))
    profile_json = pl.struct(
        *[pl.col(f) for f in sorted(("customer_id", *PROFILE_FIELDS))]
    ).struct.json_encode()
    values = (
        values.select(*PROFILE_SCHEMA.names()[:-3], profile_json.alias("profile"), "basis")
        .sort("customer_id")
        .collect()
    )
    encoded = _encode(values.select("profile", "basis"))
    return (
        values.with_columns(
            encoded.get_column("generation_basis"),
            encoded.get_column("snapshot_hash"),
            encoded.get_column("basis_md5"),
            pl.lit(None, dtype=pl.Int64).alias("profile_version"),
        )
        .select(*PROFILE_SCHEMA.names(), "profile", "basis", "basis_md5")
        .cast({**PROFILE_SCHEMA, "profile": pl.String()})  # type: ignore[arg-type]
    )


def _encode(frame: pl.DataFrame) -> pl.DataFrame:
    """generation_basis as JSON text, sha256(profile), md5(generation_basis) (to tell a changed row
    without re-reading the stored one), by DuckDB over Arrow: faster than Polars for nested structs;
    keys keep the struct's canonical order, the text is the same as Polars writes."""
    con = duckdb.connect()
    try:
        con.register("_profiles", frame)
        return con.sql(
            "SELECT json AS generation_basis, sha256(profile) AS snapshot_hash, md5(json) AS basis_md5 "
            "FROM (SELECT to_json(basis)::VARCHAR AS json, profile FROM _profiles)"
        ).pl()
    finally:
        con.close()


def _risk_tags_reason() -> pl.Expr:
    """Always says how the three sources compare (the tags are a risk signal, so say why)."""
    self_part = (
        pl.when(pl.col("rl_value").is_null())
        .then(pl.lit("no self-report"))
        .when(pl.col("self_class").is_null())
        .then(pl.format("self-report '{}' not in the class mapping", pl.col("rl_value")))
        .otherwise(pl.format("self-report '{}' = {}", pl.col("rl_value"), pl.col("self_class")))
    )
    inv_part = pl.concat_str([pl.lit("questionnaire "), pl.col("investor_type").fill_null("none")])
    conflicts = pl.concat_str(
        [
            pl.when(pl.col("c_differs")).then(pl.lit("self-report differs from investor_type")),
            pl.when(pl.col("n_above_inv") > 0).then(
                pl.format("{} buy(s) above R{} in 90d", "n_above_inv", pl.col("investor_type").str.slice(1))
            ),
            pl.when(pl.col("n_above_self") > 0).then(
                pl.format("{} buy(s) above the self-reported class in 90d", "n_above_self")
            ),
        ],
        separator=", ",
        ignore_nulls=True,
    )
    verdict = (
        pl.when(pl.col("conflict"))
        .then(pl.lit(f"{SUITABILITY_CONFLICT_TAG}: ") + conflicts)
        .otherwise(pl.lit("no conflict"))
    )
    others = pl.lit("not facts: ") + pl.col("rl_others")
    return pl.concat_str([self_part, inv_part, verdict, others], separator="; ", ignore_nulls=True)


def _basis() -> pl.Expr:
    """The generation_basis struct: one entry per profile field, in canonical order.

    ``reason`` is always set when the value is null (why) and for risk_tags and behavior_score;
    for other present values the rule and row ids say it all, so it is null (keeps rows small).
    """
    null = {f: pl.col(f).is_null() for f in PROFILE_FIELDS}
    customer_ids = {"customers": _one_id("customer_id")}
    entries = {
        "investor_type": _entry(
            "investor_type",
            {"questionnaire_results": _one_id("assessment_id")},
            pl.when(null["investor_type"]).then(pl.lit("no questionnaire result at or before as_of")),
        ),
        "total_asset": _entry(
            "total_asset",
            {"customer_transactions": _one_id("balance_txn_id")},
            pl.when(null["total_asset"]).then(
                pl.lit("no transaction with a balance_after at or before as_of")
            ),
        ),
        "trading_frequency": _entry(
            "trading_frequency",
            {"customer_transactions": _ids("recent_ids")},
            pl.when(pl.col("trading_frequency") == 0).then(pl.lit("no transaction in the last 30 days")),
        ),
        "behavior_score": _entry(
            "behavior_score",
            {"customer_transactions": _ids("buy_ids")},
            pl.when(pl.col("investor_type").is_null())
            .then(pl.lit("no questionnaire: the suitable risk level is unknown"))
            .when(pl.col("n_buys") == 0)
            .then(pl.lit("no buys in the last 90 days"))
            .otherwise(
                pl.format(
                    "{} of {} buys within R{}",
                    pl.col("n_within"),
                    pl.col("n_buys"),
                    pl.col("investor_type").str.slice(1),
                )
            ),
        ),
        "preferred_asset_class": _entry(
            "preferred_asset_class", _fact_ids("ac"), _fact_reason("ac", ASSET_CLASS_KEY)
        ),
        "investment_horizon": _entry("investment_horizon", _fact_ids("hz"), _fact_reason("hz", HORIZON_KEY)),
        "risk_tags": _entry(
            "risk_tags",
            {
                **_fact_ids("rl"),
                "questionnaire_results": pl.when(pl.col("conflict"))
                .then(_one_id("assessment_id"))
                .otherwise(_EMPTY_IDS),
                "customer_transactions": pl.when(pl.col("n_above_self") > 0)
                .then(_ids("above_self_ids"))
                .otherwise(_ids("above_inv_ids")),
            },
            _risk_tags_reason(),
        ),
    }
    for field, column in (
        ("real_name", "real_name"),
        ("birth_date", "birth_date"),
        ("occupation", "occupation"),
        ("mobile_masked", "mobile"),
        ("opened_at", "opened_at"),
    ):
        entries[field] = _entry(
            field, customer_ids, pl.when(pl.col(column).is_null()).then(pl.lit(f"customers.{column} is null"))
        )
    return pl.struct(*[entries[f] for f in PROFILE_FIELDS])


# The user_facts columns the profile reads.
FACT_COLUMNS = (
    "fact_id",
    "customer_id",
    "fact_key",
    "fact_value",
    "confidence",
    "evidence_count",
    "source_unit_id",
    "promoted_at",
)

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


# --- snapshots -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotPlan:
    appended: pl.DataFrame  # new snapshot rows (SNAPSHOTS_SCHEMA), each is_current
    superseded: pl.DataFrame  # customer_id of customers whose previous current snapshot flips to false
    versions: pl.DataFrame  # customer_id, profile_version: the current version of every profile


def snapshot_id_for(customer_ids: pl.Series, versions: pl.Series) -> pl.Series:
    """``ps_`` + sha256(customer_id|version)[:16]: the same version of a customer always has one id."""
    keys = pl.select(
        pl.concat_str([pl.lit(customer_ids), pl.lit(versions).cast(pl.String)], separator="|")
    ).to_series()
    return hashed_ids("ps_", keys)


def plan_snapshots(profiles: pl.DataFrame, latest: pl.DataFrame, as_of: datetime) -> SnapshotPlan:
    """Append a version only where the canonical profile's hash differs from the latest snapshot.

    ``profiles``: customer_id, profile, generation_basis, snapshot_hash. ``latest``: customer_id,
    version, snapshot_hash of each customer's newest snapshot (empty on the first run). Joins run
    on the slim key columns; only the changed rows' JSON is copied.
    """
    keys = profiles.select("customer_id", "snapshot_hash").join(
        latest.select(
            "customer_id",
            pl.col("version").alias("latest_version"),
            pl.col("snapshot_hash").alias("latest_hash"),
        ),
        on="customer_id",
        how="left",
        maintain_order="left",
    )
    changed_mask = keys.select(
        pl.col("latest_hash").is_null() | (pl.col("latest_hash") != pl.col("snapshot_hash"))
    ).to_series()
    changed = keys.filter(changed_mask).with_columns(
        (pl.col("latest_version").fill_null(0) + 1).cast(pl.Int64).alias("version")
    )
    appended = (
        profiles.filter(changed_mask)
        .select("customer_id", "profile", "generation_basis", "snapshot_hash")
        .with_columns(
            changed.get_column("version"),
            snapshot_id_for(changed.get_column("customer_id"), changed.get_column("version")).alias(
                "snapshot_id"
            ),
            pl.lit(True).alias("is_current"),
            pl.lit(as_of).cast(TS).alias("created_at"),
        )
        .select(SNAPSHOTS_SCHEMA.names())
        .cast(SNAPSHOTS_SCHEMA)  # type: ignore[arg-type]
    )
    superseded = changed.filter(pl.col("latest_version").is_not_null()).select("customer_id")
    versions = keys.select(
        "customer_id",
        pl.when(changed_mask)
        .then(pl.col("latest_version").fill_null(0) + 1)
        .otherwise(pl.col("latest_version"))
        .cast(pl.Int64)
        .alias("profile_version"),
    )
    return SnapshotPlan(appended=appended.sort("customer_id"), superseded=superseded, versions=versions)


def latest_investor_types_sql() -> str:
    """Independent SQL for the red-line check: the latest questionnaire value per customer at $1."""
    return (
        "SELECT customer_id, investor_type AS expected_investor_type FROM raw.questionnaire_results "
        "WHERE assessed_at <= $1 QUALIFY row_number() OVER "
        "(PARTITION BY customer_id ORDER BY assessed_at DESC, assessment_id DESC) = 1"
    )


# The transactions any field can read: the last 90 days, plus each customer's latest balance row.
# Reading only these (instead of every transaction) gives the same profile with far less memory.
TRANSACTIONS_NEEDED_SQL = f"""
SELECT txn_id, customer_id, ts, product_risk_level, side, balance_after
FROM raw.customer_transactions
WHERE ts <= $1
  AND (ts > $1 - INTERVAL {max(FREQUENCY_WINDOW, BEHAVIOR_WINDOW).days} DAY
       OR txn_id IN (SELECT arg_max(txn_id, (ts, txn_id)) FROM raw.customer_transactions
                     WHERE ts <= $1 AND balance_after IS NOT NULL GROUP BY customer_id))
"""


def customer_chunks(customers: pl.DataFrame, size: int) -> list[pl.DataFrame]:
    """Customers in customer_id order, cut into chunks of ``size`` (profiles are per customer, so
    building them chunk by chunk gives the same rows with a bounded working set)."""
    ordered = customers.sort("customer_id")
    return [ordered.slice(i, size) for i in range(0, max(ordered.height, 1), size)]


def rows_of(frame: pl.DataFrame, customer_ids: pl.Series) -> pl.DataFrame:
    """The rows of ``frame`` that belong to the given customers."""
    return frame.filter(pl.col("customer_id").is_in(customer_ids.implode()))
