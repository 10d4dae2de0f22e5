"""The profile's pure logic and its red-line schemas, tested directly (no Dagster)."""

from __future__ import annotations

import json
from datetime import timedelta

import polars as pl
import pytest

from tests.profile.world import AS_OF_TS, customer, frame, txn, unit
from tradingmem_assets.defs.memory import promotion
from tradingmem_assets.defs.profile import fields, snapshots
from tradingmem_assets.defs.profile import invariants as schemas
from tradingmem_assets.defs.profile import kb as knowledge_base
from tradingmem_assets.defs.profile.build import build_profiles
from tradingmem_assets.lib.validation import validate

AS_OF = AS_OF_TS


def q(aid: str, cid: str, level: str, when: str) -> dict:
    from tests.profile.world import ts

    return {"assessment_id": aid, "customer_id": cid, "investor_type": level, "assessed_at": ts(when)}


def build(
    customers: list[dict] | None = None,
    questionnaires: list[dict] | None = None,
    transactions: list[dict] | None = None,
    units: list[dict] | None = None,
) -> dict[str, dict]:
    promotions = promotion.classify_units(frame("memory_unit", units or []), AS_OF, 365)
    facts = promotion.user_facts(promotions)
    built = build_profiles(
        frame("customers", customers or [customer("c1")]),
        frame("questionnaire_results", questionnaires or []),
        frame("customer_transactions", transactions or []),
        facts,
        AS_OF,
        promotions,
    )
    out = {}
    for row in built.to_dicts():
        row["generation_basis"] = json.loads(row["generation_basis"])
        out[row["customer_id"]] = row
    return out


def risk_unit(value: str, cid: str = "c1", uid: str = "u1") -> dict:
    return unit(uid, cid, "preference:risk_level", value, confidence=0.99, evidence=1)


# --- field ownership ------------------------------------------------------------------------------


def test_investor_type_is_the_latest_questionnaire_at_as_of_and_never_the_self_report():
    got = build(
        questionnaires=[
            q("qa", "c1", "C1", "2023-01-01"),
            q("qb", "c1", "C3", "2024-06-30"),
            q("qc", "c1", "C5", "2024-07-02"),
        ],
        units=[risk_unit("激进型")],
    )["c1"]
    assert got["investor_type"] == "C3"
    assert got["risk_tags"] == ["self_reported:激进型", "suitability_conflict"]


def test_same_instant_questionnaires_resolve_to_the_highest_assessment_id():
    got = build(questionnaires=[q("qa", "c1", "C4", "2024-01-01"), q("qb", "c1", "C2", "2024-01-01")])["c1"]
    assert got["investor_type"] == "C2"
    assert got["generation_basis"]["investor_type"]["row_ids"] == {"questionnaire_results": ["qb"]}


@pytest.mark.parametrize(
    ("said", "klass"),
    [
        ("保守型", "C1"),
        ("conservative", "C1"),
        ("稳健型", "C2"),
        ("moderately conservative", "C2"),
        ("Moderately_Conservative", "C2"),
        ("平衡型", "C3"),
        ("balanced", "C3"),
        ("成长型", "C4"),
        ("growth", "C4"),
        ("进取型", "C5"),
        ("激进型", "C5"),
        ("Aggressive ", "C5"),
    ],
)
def test_self_reports_map_to_investor_classes(said, klass):
    got = pl.select(fields.self_report_class(pl.lit(said))).item()
    assert got == klass
    # agreeing with the questionnaire is no conflict; disagreeing is
    same = build(questionnaires=[q("qa", "c1", klass, "2024-01-01")], units=[risk_unit(said)])["c1"]
    assert same["risk_tags"] == [f"self_reported:{said.strip()}"]
    other = "C1" if klass != "C1" else "C2"
    differs = build(questionnaires=[q("qa", "c1", other, "2024-01-01")], units=[risk_unit(said)])["c1"]
    assert "suitability_conflict" in differs["risk_tags"]


def test_a_buy_above_the_investor_types_risk_level_is_a_conflict_without_any_self_report():
    got = build(
        questionnaires=[q("qa", "c1", "C3", "2024-01-01")],
        transactions=[txn("t1", "c1", "2024-06-01", "R4"), txn("t2", "c1", "2024-06-02", "R3")],
    )["c1"]
    assert got["risk_tags"] == ["suitability_conflict"]
    assert got["behavior_score"] == 50.0
    assert got["generation_basis"]["risk_tags"]["row_ids"]["customer_transactions"] == ["t1"]


def test_buys_within_the_investor_type_and_an_agreeing_self_report_raise_no_conflict():
    got = build(
        questionnaires=[q("qa", "c1", "C4", "2024-01-01")],
        transactions=[txn("t1", "c1", "2024-06-01", "R4"), txn("t2", "c1", "2024-06-02", "R1", side="sell")],
        units=[risk_unit("growth")],
    )["c1"]
    assert got["risk_tags"] == ["self_reported:growth"]
    assert got["behavior_score"] == 100.0


def test_without_a_questionnaire_a_buy_above_the_self_reported_class_is_the_disagreement():
    got = build(transactions=[txn("t1", "c1", "2024-06-01", "R4")], units=[risk_unit("稳健型")])["c1"]
    assert got["investor_type"] is None and got["behavior_score"] is None
    assert got["risk_tags"] == ["self_reported:稳健型", "suitability_conflict"]
    calm = build(transactions=[txn("t1", "c1", "2024-06-01", "R2")], units=[risk_unit("稳健型")])["c1"]
    assert calm["risk_tags"] == ["self_reported:稳健型"]


def test_an_unmapped_self_report_is_tagged_but_not_compared():
    got = build(questionnaires=[q("qa", "c1", "C1", "2024-01-01")], units=[risk_unit("yolo")])["c1"]
    assert got["risk_tags"] == ["self_reported:yolo"]
    assert "not in the class mapping" in got["generation_basis"]["risk_tags"]["reason"]


def test_transaction_windows_are_30_and_90_days_before_as_of():
    day = timedelta(days=1)
    stamp = lambda d: (AS_OF - d).strftime("%Y-%m-%d %H:%M:%S")  # noqa: E731
    got = build(
        questionnaires=[q("qa", "c1", "C1", "2024-01-01")],
        transactions=[
            txn("in30", "c1", stamp(30 * day - timedelta(seconds=1)), "R1", balance=10.0),
            txn("at30", "c1", stamp(30 * day), "R1", balance=20.0),
            txn("at90", "c1", stamp(90 * day), "R5", balance=30.0),
            txn("in90", "c1", stamp(89 * day), "R2", balance=None),
            txn("future", "c1", "2024-07-02", "R5", balance=99.0),
        ],
    )["c1"]
    assert got["trading_frequency"] == 1  # (as_of - 30 d, as_of]
    assert got["behavior_score"] == pytest.approx(100 * 2 / 3, abs=0.01)  # in30, at30, in90; at90 is out
    assert got["total_asset"] == 10.0  # the latest transaction that has a balance, never the future one
    assert got["generation_basis"]["total_asset"]["row_ids"] == {"customer_transactions": ["in30"]}


def test_total_asset_is_the_latest_balance_then_the_highest_txn_id_of_that_instant():
    got = build(
        transactions=[
            txn("t9", "c1", "2024-06-01", "R1", balance=1.0),  # highest id, earlier instant
            txn("t2", "c1", "2024-06-02", "R1", balance=2.0),
            txn("t3", "c1", "2024-06-02", "R1", balance=3.0),  # same instant as t2, higher id
            txn("t4", "c1", "2024-06-02", "R1", balance=None),  # no balance: never the basis
        ],
    )["c1"]
    assert got["total_asset"] == 3.0
    assert got["generation_basis"]["total_asset"]["row_ids"] == {"customer_transactions": ["t3"]}


def test_preferred_asset_class_is_the_newest_promoted_fact_and_ignores_other_keys():
    got = build(
        units=[
            unit(
                "ua",
                "c1",
                "preference:asset_class",
                "bonds",
                confidence=0.95,
                evidence=1,
                updated="2024-03-01",
            ),
            unit(
                "ub",
                "c1",
                "preference:asset_class",
                "equity",
                confidence=0.95,
                evidence=1,
                updated="2024-05-01",
            ),
            unit("uc", "c1", "family:pets", "cat", confidence=0.99, evidence=5),
        ]
    )["c1"]
    assert got["preferred_asset_class"] == "equity"
    assert got["generation_basis"]["preferred_asset_class"]["row_ids"]["memory_unit"] == ["ub"]
    assert "cat" not in json.dumps({k: v for k, v in got.items() if k != "generation_basis"}, default=str)


@pytest.mark.parametrize(
    ("mobile", "masked"),
    [
        ("13812345678", "138****5678"),
        ("138-1234-5678", "138****5678"),
        ("+8613812345678", "+86*******5678"),
        ("12345678", "123*5678"),
        ("1234567", "*******"),
        (None, None),
    ],
)
def test_mobile_keeps_the_first_three_and_last_four_characters(mobile, masked):
    assert build(customers=[customer("c1", mobile=mobile)])["c1"]["mobile_masked"] == masked


def test_every_field_has_a_basis_entry_with_a_reason_even_for_an_empty_customer():
    got = build(
        customers=[
            customer("c9", real_name=None, birth_date=None, occupation=None, mobile=None, opened_at=None)
        ]
    )["c9"]
    assert set(got["generation_basis"]) == set(fields.PROFILE_FIELDS)
    for field, entry in got["generation_basis"].items():
        assert entry["source"] == fields.FIELD_OWNERS[field]
        assert entry["rule"] and entry["reason"], field


def test_customers_opened_after_as_of_have_no_profile_yet():
    got = build(customers=[customer("c1"), customer("later", opened_at=AS_OF + timedelta(days=1))])
    assert set(got) == {"c1"}


# --- snapshots -----------------------------------------------------------------------------------

LATEST_EMPTY = pl.DataFrame(
    schema={"customer_id": pl.String, "version": pl.Int64, "snapshot_hash": pl.String}
)


def profiles_frame(**kw) -> pl.DataFrame:
    promotions = promotion.classify_units(frame("memory_unit", kw.get("units", [])), AS_OF, 365)
    return build_profiles(
        frame("customers", kw.get("customers", [customer("c1"), customer("c2")])),
        frame("questionnaire_results", kw.get("questionnaires", [])),
        frame("customer_transactions", []),
        promotion.user_facts(promotions),
        AS_OF,
        promotions,
    )


def test_snapshot_hash_is_sha256_of_the_canonical_profile_and_deterministic():
    first, second = profiles_frame(), profiles_frame()
    assert first.select("snapshot_hash", "profile", "generation_basis").equals(
        second.select("snapshot_hash", "profile", "generation_basis")
    )
    import hashlib

    row = first.row(0, named=True)
    assert row["snapshot_hash"] == hashlib.sha256(row["profile"].encode()).hexdigest()
    keys = list(json.loads(row["profile"]))
    assert keys == sorted(keys) and "customer_id" in keys


def test_plan_appends_only_changed_profiles_with_the_next_version():
    built = profiles_frame()
    first = snapshots.plan_snapshots(built, LATEST_EMPTY, AS_OF)
    assert first.appended.select("customer_id", "version", "is_current").rows() == [
        ("c1", 1, True),
        ("c2", 1, True),
    ]
    assert first.superseded.height == 0
    latest = first.appended.select("customer_id", "version", "snapshot_hash")
    assert snapshots.plan_snapshots(built, latest, AS_OF).appended.height == 0

    changed = profiles_frame(questionnaires=[q("qa", "c2", "C3", "2024-01-01")])
    plan = snapshots.plan_snapshots(changed, latest, AS_OF + timedelta(days=1))
    assert plan.appended.select("customer_id", "version").rows() == [("c2", 2)]
    assert plan.superseded.get_column("customer_id").to_list() == ["c2"]
    assert (
        plan.appended.get_column("snapshot_id")[0]
        == snapshots.snapshot_id_for(pl.Series(["c2"]), pl.Series([2]))[0]
    )
    assert plan.appended.get_column("created_at")[0] == AS_OF + timedelta(days=1)
    assert dict(plan.versions.rows()) == {"c1": 1, "c2": 2}


# --- the red-line schemas fail when a rule is broken -----------------------------------------------


def checked_profile() -> pl.DataFrame:
    built = profiles_frame(questionnaires=[q("qa", "c1", "C2", "2024-01-01")])
    return built.with_columns(pl.col("investor_type").alias("expected_investor_type"))


def failed_checks(schema, data: pl.DataFrame) -> set[str]:
    validation = validate(schema, data)
    return set(validation.failure_cases.get_column("check").to_list())


def test_profile_schema_passes_a_built_profile():
    assert validate(schemas.FIN_CUSTOMER_PROFILE_INVARIANTS, checked_profile()).passed


def test_investor_type_red_line_fails_when_it_is_not_the_latest_questionnaire():
    bad = checked_profile().with_columns(
        pl.when(pl.col("customer_id") == "c1")
        .then(pl.lit("C5"))
        .otherwise("investor_type")
        .alias("investor_type")
    )
    assert schemas.INVESTOR_TYPE_CHECK in failed_checks(schemas.FIN_CUSTOMER_PROFILE_INVARIANTS, bad)


def test_basis_red_line_fails_when_a_null_field_does_not_say_why():
    good = checked_profile()
    basis = good.get_column("basis").struct.unnest()
    broken_entry = (
        basis.get_column("total_asset")
        .struct.unnest()
        .with_columns(pl.lit(None, dtype=pl.String).alias("reason"))
    )
    basis = basis.with_columns(broken_entry.to_struct("total_asset"))
    bad = good.with_columns(basis.to_struct("basis"))
    assert schemas.BASIS_CHECK in failed_checks(schemas.FIN_CUSTOMER_PROFILE_INVARIANTS, bad)


def snapshot_meta(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "snapshot_id": pl.String,
            "customer_id": pl.String,
            "version": pl.Int64,
            "snapshot_hash": pl.String,
            "is_current": pl.Boolean,
            "profile_hash": pl.String,
        },
        orient="row",
    )


def test_snapshot_red_lines_fail_on_two_currents_a_gap_or_a_stale_current():
    h1, h2 = "a" * 64, "b" * 64
    good = snapshot_meta([("s1", "c1", 1, h1, False, h2), ("s2", "c1", 2, h2, True, h2)])
    assert validate(schemas.PROFILE_SNAPSHOTS_INVARIANTS, good).passed
    two = snapshot_meta([("s1", "c1", 1, h1, True, h2), ("s2", "c1", 2, h2, True, h2)])
    assert schemas.ONE_CURRENT_CHECK in failed_checks(schemas.PROFILE_SNAPSHOTS_INVARIANTS, two)
    none = snapshot_meta([("s1", "c1", 1, h1, False, h2)])
    assert schemas.ONE_CURRENT_CHECK in failed_checks(schemas.PROFILE_SNAPSHOTS_INVARIANTS, none)
    gap = snapshot_meta([("s1", "c1", 1, h1, False, h2), ("s3", "c1", 3, h2, True, h2)])
    assert "versions_1_to_n_without_gaps" in failed_checks(schemas.PROFILE_SNAPSHOTS_INVARIANTS, gap)
    stale = snapshot_meta([("s1", "c1", 1, h1, True, h2)])
    assert "current_snapshot_matches_the_profile" in failed_checks(
        schemas.PROFILE_SNAPSHOTS_INVARIANTS, stale
    )


def test_kb_red_line_fails_on_an_internal_document():
    docs = frame(
        "kb_documents",
        [
            {"doc_id": "k1", "title": "public", "visibility": "public", "body": "b"},
            {"doc_id": "k2", "title": "AML manual", "visibility": "internal", "body": "b"},
        ],
    )
    kb = knowledge_base.customer_kb(docs)
    assert kb.get_column("doc_id").to_list() == ["k1"]
    source = docs.select("doc_id", pl.col("visibility").alias("source_visibility"))
    assert validate(schemas.CUSTOMER_KB_INVARIANTS, kb.join(source, on="doc_id")).passed
    leaked = docs.select(knowledge_base.CUSTOMER_KB_DTYPES.names()).join(source, on="doc_id")
    assert schemas.KB_CHECK in failed_checks(schemas.CUSTOMER_KB_INVARIANTS, leaked)


def test_user_facts_red_line_fails_on_a_one_off_statement():
    units = frame("memory_unit", [unit("u1", "c1", "k", "v", confidence=0.8, evidence=1)])
    forced = promotion.classify_units(units, AS_OF, 365).with_columns(pl.lit("promoted").alias("status"))
    facts = promotion.user_facts(forced).join(
        forced.select(
            pl.col("unit_id").alias("source_unit_id"),
            "conflict_count",
            "valid_from",
            "valid_until",
            "updated_at",
        ),
        on="source_unit_id",
    )
    assert schemas.FACTS_CHECK in failed_checks(schemas.user_facts_schema(AS_OF, 365), facts)


# --- reading less gives the same profile ----------------------------------------------------------


def test_building_in_chunks_gives_the_same_rows_as_one_pass():
    customers = frame("customers", [customer(f"c{i}") for i in range(7)])
    questionnaires = frame(
        "questionnaire_results", [q(f"q{i}", f"c{i}", f"C{1 + i % 5}", "2024-01-01") for i in range(7)]
    )
    transactions = frame(
        "customer_transactions", [txn(f"t{i}", f"c{i % 7}", "2024-06-01", f"R{1 + i % 5}") for i in range(20)]
    )
    promotions = promotion.classify_units(
        frame("memory_unit", [risk_unit("aggressive", cid=f"c{i}", uid=f"u{i}") for i in range(0, 7, 2)]),
        AS_OF,
        365,
    )
    facts = promotion.user_facts(promotions)
    whole = build_profiles(customers, questionnaires, transactions, facts, AS_OF, promotions)
    parts = []
    ordered = customers.sort("customer_id")
    for start in range(0, ordered.height, 3):  # profiles are per customer: any split gives the same rows
        chunk = ordered.slice(start, 3)
        mine = pl.col("customer_id").is_in(chunk.get_column("customer_id").implode())
        parts.append(
            build_profiles(
                chunk,
                questionnaires.filter(mine),
                transactions.filter(mine),
                facts.filter(mine),
                AS_OF,
                promotions.filter(mine),
            )
        )
    assert [p.height for p in parts] == [3, 3, 1]
    assert pl.concat(parts).drop("basis").equals(whole.drop("basis"))


def test_the_latest_balance_may_be_older_than_the_windows_and_future_rows_do_not_count():
    rows = [
        txn("old_balance", "c1", "2023-01-01", "R1", balance=111.0),
        txn("old_no_balance", "c1", "2023-02-01", "R5", balance=None),
        txn("recent_no_balance", "c1", "2024-06-01", "R4", balance=None),
        txn("c2_old", "c2", "2022-01-01", "R1", balance=5.0),
        txn("c2_recent", "c2", "2024-06-20", "R2", balance=6.0),
        txn("c2_future", "c2", "2024-07-05", "R5", balance=7.0),
    ]
    customers = frame("customers", [customer("c1"), customer("c2")])
    questionnaires = frame("questionnaire_results", [q("qa", "c1", "C2", "2024-01-01")])
    empty_facts = promotion.user_facts(promotion.classify_units(frame("memory_unit", []), AS_OF, 365))
    built = build_profiles(
        customers, questionnaires, frame("customer_transactions", rows), empty_facts, AS_OF
    )
    c1, c2 = built.to_dicts()
    assert c1["total_asset"] == 111.0  # a year-old balance: nothing later carries one
    basis = json.loads(c1["generation_basis"])
    assert basis["total_asset"]["row_ids"] == {"customer_transactions": ["old_balance"]}
    # its buy is exactly 30 days old: outside (as_of - 30 d, as_of], inside 90 d, and above C2
    assert (c1["trading_frequency"], c1["behavior_score"]) == (0, 0.0)
    assert c2["total_asset"] == 6.0 and c2["trading_frequency"] == 1  # the future row does not exist yet
