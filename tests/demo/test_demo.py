"""The demo world: every landing table, deterministic, and holding every case the pipeline must handle."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from tests.contract import RAW
from tradingmem_assets import demo
from tradingmem_assets.defs.learning.role_outputs import ROLE_OUTPUT_SCHEMA_NAMES
from tradingmem_assets.demo import (
    BAD_ROWS,
    CSV_TABLES,
    DEMO_AS_OF,
    KIND_REASONS,
    MISSING_BARS,
    DemoSummary,
    demo_bad_row_counts,
    demo_decision_kinds,
    learning_id_for,
    methodology_id_for,
    write_demo_world,
)
from tradingmem_assets.lib.vocabulary import CASE_REASONS, METHODOLOGY_PROPOSAL_FIELDS

SCALE = 0.002
ROOT = Path(__file__).resolve().parents[2]
# SPEC section 2, written out in tests/contract.py independently of the module under test
SPEC_COLUMNS = RAW
LINK_FIELDS = ("decision_id", "symbol", "direction", "account_id", "market")
AUTOMATED = ("autopilot", "strategy_studio", "xstrategy", "workflow")
AS_OF_S = int(DEMO_AS_OF.timestamp())


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> tuple[Path, DemoSummary]:
    landing = tmp_path_factory.mktemp("demo_landing")
    return landing, write_demo_world(landing, scale=SCALE)


@pytest.fixture(scope="module")
def landing(world) -> Path:
    return world[0]


def read(landing: Path, table: str, *, good_only: bool = True) -> pl.DataFrame:
    """A landing file as written (CSV as text), without its trailing deliberately bad rows."""
    path = landing / f"{table}.{'csv' if table in CSV_TABLES else 'parquet'}"
    df = pl.read_csv(path, infer_schema=False) if path.suffix == ".csv" else pl.read_parquet(path)
    return df.head(df.height - len(BAD_ROWS.get(table, []))) if good_only else df


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------------ shape


def test_every_spec_table_has_exactly_one_file_with_exactly_the_spec_columns(landing):
    assert set(SPEC_COLUMNS) == set(demo.TABLE_COLUMNS)
    for table, columns in SPEC_COLUMNS.items():
        csv, parquet = landing / f"{table}.csv", landing / f"{table}.parquet"
        assert csv.exists() != parquet.exists(), table
        assert read(landing, table, good_only=False).columns == columns.split(), table
    assert {"customers", "kb_documents", "benchmark_profiles", "legacy_role_memory"} <= CSV_TABLES


def test_summary_counts_every_row_written_bad_rows_included(world):
    landing, summary = world
    assert summary.scale == SCALE and summary.seed == demo.DEMO_SEED and summary.landing_dir == landing
    for table in SPEC_COLUMNS:
        assert summary.rows[table] == read(landing, table, good_only=False).height, table
    assert summary.rows["trading_decisions"] == max(80, round(SCALE * 100_000)) + 3


def test_same_scale_and_seed_write_byte_identical_files(landing, tmp_path):
    again = tmp_path / "again"
    write_demo_world(again, scale=SCALE)
    first = {p.name: sha256(p) for p in landing.iterdir()}
    second = {p.name: sha256(p) for p in again.iterdir()}
    assert first == second


def test_another_seed_writes_another_world(landing, tmp_path):
    other = tmp_path / "other"
    write_demo_world(other, scale=SCALE, seed=8)
    assert sha256(other / "trading_decisions.parquet") != sha256(landing / "trading_decisions.parquet")
    # prices of the real series do not depend on the seed
    real = pl.col("symbol").is_in(["GOOG", "EURUSD"])
    assert read(other, "price_bars").filter(real).equals(read(landing, "price_bars").filter(real))


def test_parquet_timestamps_are_utc_microseconds_and_flags_are_booleans(landing):
    for table in set(SPEC_COLUMNS) - CSV_TABLES:
        schema = pl.read_parquet_schema(landing / f"{table}.parquet")
        for name, dtype in schema.items():
            if name in ("ts", "decided_at", "executed_at") or name.endswith(
                ("_at", "valid_from", "valid_until")
            ):
                assert dtype == pl.Datetime("us", "UTC"), (table, name, dtype)
    executions = read(landing, "trade_executions")
    assert executions.schema["source_verified"] == pl.Boolean
    assert executions.schema["automation_flag"] == pl.Boolean
    assert read(landing, "market_events").schema["exogenous"] == pl.Boolean


def test_csv_timestamps_are_iso_8601_utc(landing):
    for table, column in (
        ("customers", "opened_at"),
        ("questionnaire_results", "assessed_at"),
        ("legacy_role_memory", "created_at"),
    ):
        values = read(landing, table)[column]
        assert values.str.contains(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").all(), table
        assert values.str.to_datetime("%Y-%m-%dT%H:%M:%SZ", strict=True).null_count() == 0
    assert read(landing, "customers")["birth_date"].str.to_date("%Y-%m-%d", strict=True).null_count() == 0


# ------------------------------------------------------------------------------------------ bad rows


@pytest.mark.parametrize("scale", [SCALE, 0.0001])
def test_bad_rows_are_exactly_what_landing_ingestion_rejects(scale, tmp_path):
    ingest = pytest.importorskip("tradingmem_assets.defs.landing.ingest")
    write_demo_world(tmp_path, scale=scale)
    expected = demo_bad_row_counts()
    for table in SPEC_COLUMNS:
        result = ingest.ingest_table(tmp_path, table)
        assert result.rejected == expected[table], (table, result.rejects.select("row_key", "reason").rows())
        # the bad rows are the last rows of the file
        assert result.rejects["row_number"].to_list() == list(
            range(result.rows_read - expected[table] + 1, result.rows_read + 1)
        )


def test_bad_row_counts_do_not_depend_on_scale():
    counts = demo_bad_row_counts()
    assert counts == {t: len(BAD_ROWS.get(t, [])) for t in SPEC_COLUMNS}
    assert sum(1 for n in counts.values() if n) >= 10
    assert counts["trading_decisions"] == 3 and counts["institution_role_outputs"] == 0


# ------------------------------------------------------------------------------------------ trading chain


def reference_reasons(landing: Path) -> dict[str, list[str]]:
    """SPEC section 5 rules 1-4 plus settlement, evaluated straight from the landing files."""
    registry = yaml.safe_load((ROOT / "tradingmem_assets" / "roles.yaml").read_text())
    skill_of = {r["role_id"]: s["skill_id"] for s in registry["skills"] for r in s["roles"]}
    decisions = read(landing, "trading_decisions").filter(pl.col("role_id").is_not_null())
    links = (
        read(landing, "preview_consumptions")
        .join(read(landing, "trade_executions"), on="execution_id", suffix="_x")
        .join(read(landing, "position_lifecycles").select("execution_id", "status"), on="execution_id")
    )
    by_preview: dict[str, list[dict]] = {}
    for row in links.iter_rows(named=True):
        by_preview.setdefault(row["preview_id"], []).append(row)
    out: dict[str, list[str]] = {}
    for d in decisions.iter_rows(named=True):
        reasons: list[str] = []
        if d["role_id"] not in skill_of:
            reasons.append("unknown_role")
        elif skill_of[d["role_id"]] != d["skill_id"]:
            reasons.append("role_not_declared_by_skill")
        linked = by_preview.get(d["preview_id"], []) if d["preview_id"] else []
        if d["preview_id"] is None:
            reasons += ["no_preview", "no_execution"]
        elif not linked:
            reasons += ["preview_not_consumed", "no_execution"]
        elif len(linked) > 1:
            reasons.append("preview_consumed_multiple")
        for x in linked:
            reasons += [f"link_mismatch:{f}" for f in LINK_FIELDS if x[f] != d[f]]
            if x["source"] in (None, "unknown"):
                reasons.append("unknown_source")
            elif x["source"] in AUTOMATED or x["automation_flag"]:
                reasons.append("automated_source")
            elif x["source"] == "manual_external" and not x["source_verified"]:
                reasons.append("unverified_external")
            if x["status"] == "open":
                reasons.append("not_settled")
        out[d["decision_id"]] = sorted(set(reasons))
    return out


def test_each_decision_kind_produces_exactly_its_admission_reasons(landing):
    kinds = demo_decision_kinds(SCALE)
    assert kinds["decision_id"].to_list() == read(landing, "trading_decisions")["decision_id"].to_list()
    got = reference_reasons(landing)
    for row in kinds.iter_rows(named=True):
        if row["kind"] == "no_role":
            assert row["decision_id"] not in got
            continue
        expected = sorted(r for r in row["expected_reasons"] if r != "insufficient_evaluation")
        assert got[row["decision_id"]] == expected, row


def test_every_admission_reason_code_is_represented(landing):
    codes = {r for reasons in reference_reasons(landing).values() for r in reasons}
    # every code the execution chain decides (link_mismatch once per field); the evaluation ones follow
    chain_codes = set(CASE_REASONS) - {"link_mismatch", "no_primary_run", "insufficient_evaluation"}
    chain_codes |= {f"link_mismatch:{f}" for f in LINK_FIELDS}
    assert chain_codes <= codes
    kinds = demo_decision_kinds(SCALE)
    counts = dict(kinds.group_by("kind").len().iter_rows())
    assert set(counts) == set(demo.DECISION_KINDS)
    assert all(n >= 2 for n in counts.values())
    assert counts["clean"] > sum(n for k, n in counts.items() if k != "clean")
    assert {"insufficient_evaluation"} == {r for r in KIND_REASONS["gap_insufficient"]}


def test_the_named_minorities_are_in_the_files(landing):
    decisions = read(landing, "trading_decisions")
    executions = read(landing, "trade_executions")
    positions = read(landing, "position_lifecycles")
    assert decisions.filter(pl.col("preview_id").is_null()).height >= 2
    assert decisions.filter(pl.col("role_id").is_null()).height >= 2
    assert (
        decisions.filter(pl.col("role_id") == "generic_trader").height
        + decisions.filter(pl.col("role_id") == "old_scalper").height
        >= 2
    )
    assert set(AUTOMATED) <= set(executions["source"].drop_nulls())
    # automation flag on a manual-looking source
    assert executions.filter((pl.col("source") == "manual_agent") & pl.col("automation_flag")).height >= 2
    external = executions.filter(pl.col("source") == "manual_external")
    assert set(external["source_verified"]) == {True, False}
    perps_unknown = executions.filter(
        (pl.col("market") == "perp") & (pl.col("source").is_null() | (pl.col("source") == "unknown"))
    )
    assert perps_unknown.filter(pl.col("source").is_null()).height >= 2 and perps_unknown.height >= 4
    assert set(positions["status"]) == {"open", "closed", "liquidated"}
    settled = positions.filter(pl.col("status") != "open")
    assert settled["closed_at"].null_count() == 0 and settled["realized_pnl"].null_count() == 0
    assert (
        positions.filter(pl.col("status") == "open")["closed_at"].null_count()
        == positions.filter(pl.col("status") == "open").height
    )
    assert positions.filter(pl.col("status") == "liquidated")["realized_pnl"].max() < 0
    assert (positions["opened_at"] <= DEMO_AS_OF).all()
    assert (settled["closed_at"] <= DEMO_AS_OF).all()


def test_decision_text_and_evidence_are_varied_json(landing):
    decisions = read(landing, "trading_decisions")
    assert decisions["decision_text"].n_unique() > 0.9 * decisions.height
    for row in decisions.head(20).iter_rows(named=True):
        assert row["symbol"] in row["decision_text"]
        assert ("long" if row["direction"] == "long" else "short") in row["decision_text"]
    kinds = set(demo.EVIDENCE_KINDS)
    parsed = [json.loads(e) for e in decisions["evidence"]]
    assert all(isinstance(e, list) and set(e) <= kinds for e in parsed)
    flags = demo_decision_kinds(SCALE)
    assert flags["missing_evidence"].any() and not flags["missing_evidence"].all()
    required = {r.role_id: set(r.required_evidence) for r in demo._ROLES}
    skill_of = {r.role_id: r.skill_id for r in demo._ROLES}
    for row, flag in zip(decisions.iter_rows(named=True), flags["missing_evidence"], strict=True):
        if row["role_id"] in required and row["skill_id"] == skill_of[row["role_id"]]:
            assert flag == (not required[row["role_id"]] <= set(json.loads(row["evidence"]))), row


def test_fills_are_positive_and_priced_near_the_last_close(landing):
    fills = read(landing, "trade_fills")
    assert (fills["qty"] > 0).all() and (fills["fee"] > 0).all()
    counts = fills.group_by("execution_id").len()["len"]
    assert counts.min() >= 1 and counts.max() <= 3
    executions = read(landing, "trade_executions").select("execution_id", "symbol", "executed_at")
    bars = read(landing, "price_bars").select("symbol", "ts", "close").sort("ts")
    joined = (
        fills.join(executions, on="execution_id")
        .sort("executed_at")
        .join_asof(bars, left_on="executed_at", right_on="ts", by="symbol", check_sortedness=False)
    )
    assert (abs(joined["price"] / joined["close"] - 1) < 0.02).all()
    assert (joined["filled_at"] >= joined["executed_at"]).all()
    assert ((joined["filled_at"] - joined["executed_at"]) < timedelta(minutes=10)).all()


def coverage(bars: dict[str, np.ndarray], symbol: str, start: int, days: int) -> float:
    """Bars found / bars expected in [start, start + days], on the symbol's calendar (21:00 UTC stamps)."""
    end = start + days * 86_400
    stamps = np.arange(start // 86_400 - 1, end // 86_400 + 2) * 86_400 + 21 * 3_600
    stamps = stamps[(stamps >= start) & (stamps <= end)]
    if symbol not in ("BTCUSD", "ETHUSD", "SOLUSD"):
        stamps = stamps[(stamps // 86_400 + 3) % 7 < 5]
    return float(((bars[symbol] >= start) & (bars[symbol] <= end)).sum() / len(stamps))


def test_only_gap_kinds_lack_bars_and_only_recent_windows_are_open(landing):
    price = read(landing, "price_bars")
    bars = {s: g["ts"].dt.epoch("s").to_numpy() for (s,), g in price.group_by("symbol")}
    linked = (
        read(landing, "preview_consumptions")
        .join(
            read(landing, "trade_executions").select("execution_id", "decision_id", "symbol", "executed_at"),
            on="execution_id",
        )
        .join(demo_decision_kinds(SCALE).select("decision_id", "kind"), on="decision_id", how="left")
    )
    seen_partial = seen_insufficient = 0
    for row in linked.iter_rows(named=True):
        start = int(row["executed_at"].timestamp())
        cov7 = coverage(bars, row["symbol"], start, 7)
        if row["kind"] == "gap_insufficient":
            assert cov7 < 0.8
            seen_insufficient += 1
        elif row["kind"] == "gap_partial":
            assert 0.8 <= cov7 < 1
            seen_partial += 1
        elif row["kind"] not in (
            None,
            "recent",
            "mismatch_symbol",
        ):  # days are safe for the decision's symbol
            assert cov7 == 1.0 and coverage(bars, row["symbol"], start, 30) >= 0.85, row
        if row["kind"] == "recent":
            assert start + 7 * 86_400 > AS_OF_S, row  # every window of a recent decision is still open
        else:
            assert start + 30 * 86_400 <= AS_OF_S, row  # every other window has elapsed
    assert seen_partial >= 2 and seen_insufficient >= 2


def test_exogenous_events_are_rare_and_flagged_exactly(landing):
    flags = demo_decision_kinds(SCALE)
    assert 3 <= flags["exogenous_event"].sum() < 0.25 * flags.height
    assert flags.filter(pl.col("exogenous_event") & (pl.col("kind") == "clean")).height >= 3
    events = read(landing, "market_events")
    assert set(events.filter(~pl.col("exogenous"))["kind"]) >= {"earnings"}
    assert set(events.filter(pl.col("exogenous"))["kind"]) <= {
        "exchange_outage",
        "regulatory_ban",
        "flash_crash",
    }
    assert events.filter(pl.col("exogenous")).height == demo._EXOGENOUS_EVENTS
    horizon = {r.role_id: r.maturity_days for r in demo._ROLES}
    first = (
        read(landing, "trade_executions")
        .sort("execution_id")
        .group_by("decision_id", maintain_order=True)
        .first()
        .select("decision_id", "executed_at")
    )
    decisions = read(landing, "trading_decisions").join(first, on="decision_id", how="left")
    exogenous = events.filter(pl.col("exogenous"))
    for row, flag in zip(decisions.iter_rows(named=True), flags["exogenous_event"], strict=True):
        if row["executed_at"] is None or row["role_id"] not in horizon:
            continue
        end = row["executed_at"] + timedelta(days=horizon[row["role_id"]])
        inside = exogenous.filter(
            (pl.col("symbol") == row["symbol"]) & pl.col("ts").is_between(row["executed_at"], end)
        ).height
        assert flag == (inside > 0), row


def test_profiles_and_promotions(landing):
    profiles = read(landing, "benchmark_profiles")
    assert profiles.rows() == [
        ("abs_7d", "7", None, "0.8"),
        ("abs_30d", "30", None, "0.8"),
        ("rel_mktidx_7d", "7", "MKTIDX", "0.8"),
    ]
    promotions = read(landing, "evaluation_promotions")
    assert promotions.height >= 4
    assert set(promotions["run_version"]) == {1} and set(promotions["promoted_by"]) == {"risk_ops"}
    primary = {r.role_id: r.primary_profile for r in demo._ROLES}
    decisions = read(landing, "trading_decisions").select("decision_id", "role_id")
    for row in promotions.join(decisions, on="decision_id").iter_rows(named=True):
        assert row["profile_id"] != primary[row["role_id"]]
        assert row["promoted_at"] <= DEMO_AS_OF


# ------------------------------------------------------------------------------------------ prices


def test_goog_and_eurusd_are_the_real_package_bars(landing):
    bars = read(landing, "price_bars")
    goog = bars.filter(pl.col("symbol") == "GOOG")
    assert goog.row(0, named=True)["ts"] == datetime(2004, 8, 19, 21, tzinfo=UTC)
    assert goog.row(0, named=True)["close"] == 100.34
    assert goog.row(-1, named=True)["ts"] == datetime(2013, 3, 1, 21, tzinfo=UTC)
    hourly = pl.read_csv(io.BytesIO((files("backtesting") / "test" / "EURUSD.csv").read_bytes()))
    last_of_day = hourly.filter(pl.col("").str.starts_with("2017-04-19")).row(-1, named=True)
    eurusd = bars.filter(pl.col("symbol") == "EURUSD")
    first = eurusd.row(0, named=True)
    assert first["ts"] == datetime(2017, 4, 19, 21, tzinfo=UTC)
    assert first["close"] == last_of_day["Close"]
    assert first["open"] == hourly.row(0, named=True)["Open"]
    assert eurusd["ts"].dt.weekday().max() <= 5  # Sunday hours open Monday's bar
    assert eurusd.height < 250  # daily, not hourly


def test_every_bar_is_stamped_when_its_close_is_known(landing):
    bars = read(landing, "price_bars")
    assert set(bars["ts"].dt.hour()) == {21} and set(bars["ts"].dt.minute()) == {0}
    assert (bars["high"] >= bars[["open", "close"]].max_horizontal()).all()
    assert (bars["low"] <= bars[["open", "close"]].min_horizontal()).all()
    assert (bars["low"] > 0).all()
    spans = {
        s: (str(a), str(b))
        for s, a, b in bars.group_by("symbol")
        .agg(pl.col("ts").min().dt.date().alias("a"), pl.col("ts").max().dt.date().alias("b"))
        .rows()
    }
    assert spans["MKTIDX"] == ("2004-01-01", "2024-06-28")  # 2024-06-29/30 is a weekend
    for sym in ("AAPLX", "MSFTX", "BTCUSD", "ETHUSD", "SOLUSD"):
        assert spans[sym][0] == "2019-01-01" and spans[sym][1] >= "2024-06-28", sym
    for sym in ("MKTIDX", "AAPLX", "MSFTX", "GOOG"):
        assert bars.filter(pl.col("symbol") == sym)["ts"].dt.weekday().max() <= 5, sym
    for sym in ("BTCUSD", "ETHUSD", "SOLUSD"):
        days = bars.filter(pl.col("symbol") == sym)["ts"].dt.date()
        expected = pl.date_range(days.min(), days.max(), eager=True)
        missing = set(expected) - set(days)
        assert {str(d) for d in missing} == set(MISSING_BARS.get(sym, ())), sym


# ------------------------------------------------------------------------------------------ learning


def test_agent_turns_mix_learnable_turns_secrets_and_noise(landing):
    turns = read(landing, "agent_turns")
    calls = [json.loads(c) for c in turns["tool_calls"]]
    assert all(isinstance(c, list) and all({"tool_name", "args", "ok"} <= set(x) for x in c) for c in calls)
    text = "\n".join(turns["tool_calls"])
    for marker in ("sk-live-", "ghp_", '"password"', "Bearer eyJ", '"private_key": "0x', "backup words: "):
        assert marker in text, marker
    known = set(yaml.safe_load((ROOT / "tradingmem_assets" / "tools.yaml").read_text())["tools"])
    names = {x["tool_name"] for c in calls for x in c}
    assert names - known == {"fetch_social_sentiment"}
    assert set(turns["explicit_learn"]) == {True, False} and set(turns["completed"]) == {True, False}
    assert any(not x["ok"] for c in calls for x in c)
    assert any(len(c) < 3 for c in calls)
    normalized = turns["user_message"].str.strip_chars().str.to_lowercase()
    assert normalized.n_unique() < turns.height  # near-paraphrases and repeats, so dedup has work


def test_feedback_names_learning_ids_of_learnable_turns(landing):
    turns = read(landing, "agent_turns")
    ids: dict[str, datetime] = {}
    for t in turns.iter_rows(named=True):
        calls = json.loads(t["tool_calls"])
        if t["explicit_learn"] and t["completed"] and all(c["ok"] for c in calls) and len(calls) >= 3:
            lid = learning_id_for(t["user_message"], [c["tool_name"] for c in calls])
            ids.setdefault(lid, t["started_at"])
    feedback = read(landing, "learning_feedback")
    unknown = feedback.filter(~pl.col("learning_id").is_in(list(ids)))
    assert sorted(unknown["learning_id"]) == sorted(demo.UNKNOWN_LEARNING_IDS)
    known = feedback.filter(pl.col("learning_id").is_in(list(ids)))
    assert known.height >= 10
    for row in known.iter_rows(named=True):
        assert row["ts"] > ids[row["learning_id"]]
    assert set(feedback["adopted"]) == {True, False}
    assert not feedback.filter(~pl.col("adopted") & pl.col("success")).height
    assert set(feedback["turn_id"]) <= set(turns["turn_id"])


def test_learning_id_scheme():
    raw = "check btc funding then size a long|get_funding_rate,get_quote"
    expected = "l_" + hashlib.sha256(raw.encode()).hexdigest()[:16]
    assert (
        learning_id_for("  Check BTC funding then size a long ", ["get_funding_rate", "get_quote"])
        == expected
    )


# ------------------------------------------------------------------------------------------ institution


def test_methodology_id_scheme_follows_the_spec():
    key = "long|support_resistance|4h|rsi,volume_profile|crypto_major"
    expected = "m_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    assert (
        methodology_id_for(" Long", "support_resistance ", "4H", ["Volume_Profile", " rsi"], "crypto_major")
        == expected
    )


def test_institution_outputs_cite_and_propose_methodologies(landing):
    runs = read(landing, "institution_runs")
    outputs = read(landing, "institution_role_outputs")
    assert set(runs["kind"]) == {"scheduled", "lazy", "manual"}
    assert outputs.group_by("run_id").len()["len"].unique().to_list() == [6]
    roles = dict(outputs.select("role", "schema").unique().rows())
    assert roles == ROLE_OUTPUT_SCHEMA_NAMES  # every role writes its declared schema
    assert (outputs["confidence"] == 1.7).sum() >= 2 and (outputs["action"] == "yolo").sum() >= 2
    proposals = [json.loads(p) for p in outputs["proposed_methodology"].drop_nulls()]
    shape = set(METHODOLOGY_PROPOSAL_FIELDS)
    assert all(set(p) == shape for p in proposals)
    ids = {
        methodology_id_for(
            p["direction"], p["primary_signal"], p["timeframe"], p["indicators"], p["asset_class"]
        )
        for p in proposals
    }
    template_ids = {t.methodology_id for t in (*demo.METHODOLOGY_TEMPLATES, demo.JUNE_TEMPLATE)}
    assert template_ids <= ids
    names = {p["name"]: p["direction"] for p in proposals}
    assert names["Buy BTC at support"] == "long" and names["Sell BTC at support"] == "short"
    descriptions = "\n".join(p["description"] for p in proposals)
    for marker in ("Ignore previous instructions", "<system>", "\u200b", "```tool_call"):
        assert marker in descriptions, marker
    assert any(p["primary_signal"] == "astrology" for p in proposals)
    phase_names = [[ph["name"] for ph in p["phases"]] for p in proposals]
    assert any(
        any(d not in names_ for ph in p["phases"] for d in ph["depends_on"])
        for p, names_ in zip(proposals, phase_names, strict=True)
    )
    # citations: template ids, the odd never-proposed id, and popular templates cited consistently
    cited = (
        outputs.join(runs, on="run_id")
        .filter(pl.col("kind") == "scheduled")
        .select("run_id", pl.col("cited_methodology_ids").str.json_decode(pl.List(pl.String)).alias("m"))
        .explode("m")
        .drop_nulls()
        .unique()
    )
    assert set(cited["m"]) - template_ids == set(demo.BOGUS_METHODOLOGY_IDS) & set(cited["m"])
    assert set(cited["m"]) & set(demo.BOGUS_METHODOLOGY_IDS)
    per_template = cited.group_by("m").len()
    assert per_template.filter(pl.col("len") >= 10).height >= 3


def test_templates_are_proposed_before_any_run_cites_them(landing):
    runs = read(landing, "institution_runs").select("run_id", "started_at")
    outputs = read(landing, "institution_role_outputs").join(runs, on="run_id")
    first_proposed: dict[str, datetime] = {}
    for row in (
        outputs.filter(pl.col("proposed_methodology").is_not_null()).sort("started_at").iter_rows(named=True)
    ):
        p = json.loads(row["proposed_methodology"])
        mid = methodology_id_for(
            p["direction"], p["primary_signal"], p["timeframe"], p["indicators"], p["asset_class"]
        )
        first_proposed.setdefault(mid, row["started_at"])
    cites = outputs.select(
        "started_at", pl.col("cited_methodology_ids").str.json_decode(pl.List(pl.String)).alias("m")
    )
    for row in cites.explode("m").drop_nulls().iter_rows(named=True):
        if row["m"] not in demo.BOGUS_METHODOLOGY_IDS:
            assert first_proposed[row["m"]] <= row["started_at"]


def test_injections_name_runs_near_their_start(landing):
    injections = read(landing, "methodology_injections").join(
        read(landing, "institution_runs").select("run_id", "started_at"), on="run_id"
    )
    assert injections.height >= 4
    assert ((injections["injected_at"] - injections["started_at"]) < timedelta(minutes=1)).all()
    assert (injections["injected_at"] >= injections["started_at"]).all()


# ------------------------------------------------------------------------------------------ customers


def test_c000001_is_c2_on_paper_and_aggressive_in_memory(landing):
    q = read(landing, "questionnaire_results").filter(pl.col("customer_id") == "c_000001")
    assert q.sort("assessed_at").row(-1, named=True)["investor_type"] == "C2"
    unit = read(landing, "memory_unit").filter(
        (pl.col("customer_id") == "c_000001") & (pl.col("fact_key") == "preference:risk_level")
    )
    assert unit.height == 1
    row = unit.row(0, named=True)
    assert (row["fact_value"], row["confidence"], row["evidence_count"], row["conflict_count"]) == (
        "aggressive",
        0.99,
        3,
        0,
    )
    assert row["valid_until"] is None and row["updated_at"] > DEMO_AS_OF - timedelta(days=365)


def test_memory_units_cover_promotion_edges_and_cite_real_messages(landing):
    units = read(landing, "memory_unit")
    assert 2.5 <= units.height / read(landing, "customers").height <= 3.5
    assert set(units["fact_key"]) >= {
        "preference:risk_level",
        "preference:asset_class",
        "profile:investment_horizon",
    }
    assert set(units["fact_value"]) >= {"稳健型", "aggressive", "3-5 years"}
    assert units["confidence"].is_between(0.5, 0.99).all()
    assert units["evidence_count"].is_between(1, 5).all()
    assert (units["conflict_count"] > 0).any() and (units["conflict_count"] == 0).mean() > 0.8
    assert (units["valid_until"] < DEMO_AS_OF).any() and (units["valid_until"] > DEMO_AS_OF).any()
    assert (units["updated_at"] < DEMO_AS_OF - timedelta(days=365)).sum() >= 2
    assert (units["updated_at"] >= units["created_at"]).all() and (units["updated_at"] <= DEMO_AS_OF).all()
    evidence = read(landing, "memory_evidence")
    assert evidence.group_by("unit_id").len()["len"].is_between(1, 3).all()
    assert set(evidence["unit_id"]) == set(units["unit_id"])
    messages = read(landing, "conversation_message")
    joined = evidence.join(units.select("unit_id", "customer_id"), on="unit_id").join(
        messages.select("message_id", "customer_id", "content", "role"), on="message_id", suffix="_m"
    )
    assert joined.height == evidence.height
    assert (joined["customer_id"] == joined["customer_id_m"]).all() and set(joined["role"]) == {"user"}
    assert (joined["excerpt"] == joined["content"]).all()


def test_conversations_have_active_and_old_sessions(landing):
    messages = read(landing, "conversation_message")
    assert 4 <= messages.height / read(landing, "customers").height <= 7
    sessions = messages.group_by("session_id").agg(
        pl.col("created_at").min().alias("a"), pl.col("created_at").max().alias("b")
    )
    recent = sessions.filter(pl.col("b") >= DEMO_AS_OF - timedelta(minutes=30))
    assert (sessions["b"] < DEMO_AS_OF).all()
    assert recent.filter(pl.col("a") >= DEMO_AS_OF - timedelta(hours=24)).height >= 3
    assert recent.filter(pl.col("a") < DEMO_AS_OF - timedelta(hours=24)).height >= 1  # too old to be active
    assert sessions.filter(pl.col("b") < DEMO_AS_OF - timedelta(days=30)).height > sessions.height / 2


def test_transactions_fill_the_recent_windows_and_break_suitability(landing):
    txns = read(landing, "customer_transactions")
    assert (txns["amount"] > 0).all() and (txns["balance_after"] >= 0).all()
    assert txns.filter(pl.col("ts") >= DEMO_AS_OF - timedelta(days=30)).height > 0
    assert txns.filter(pl.col("ts") >= DEMO_AS_OF - timedelta(days=90)).height > txns.height / 8
    latest = (
        read(landing, "questionnaire_results")
        .sort("assessed_at")
        .group_by("customer_id")
        .agg(pl.col("investor_type").last())
    )
    buys = txns.filter(pl.col("side") == "buy").join(latest, on="customer_id")
    above = buys.filter(
        pl.col("product_risk_level").str.slice(1).cast(pl.Int64)
        > pl.col("investor_type").str.slice(1).cast(pl.Int64)
    )
    assert 0 < above.height < buys.height / 3
    q = read(landing, "questionnaire_results").group_by("customer_id").len()["len"]
    assert q.min() >= 1 and q.max() <= 3


def test_customers_and_kb(landing):
    customers = read(landing, "customers")
    assert customers["customer_id"].str.contains(r"^c_\d{6}$").all()
    assert customers["mobile"].str.contains(r"^1\d{10}$").all()
    assert customers["real_name"].str.contains(r"[\u4e00-\u9fff]").any()
    assert customers["real_name"].str.contains(r"^[A-Za-z]+ [A-Za-z]+$").any()
    kb = read(landing, "kb_documents")
    assert 15 <= kb.height <= 25 and set(kb["visibility"]) == {"public", "internal"}


def test_legacy_rows_cover_every_month_and_keep_their_text(landing):
    legacy = read(landing, "legacy_role_memory")
    months = set(legacy["created_at"].str.slice(0, 7))
    assert months == {f"{y}-{m:02d}" for y in (2020, 2021) for m in range(1, 13)}
    roles = set(legacy["role"])
    assert {"generic", "old_scalper"} <= roles and {r.role_id for r in demo._ROLES} <= roles
    assert legacy["content"].str.contains(r"[ \t]$").any()  # trailing whitespace survives the CSV
    assert legacy["content"].str.contains(r"[^\x00-\x7f]").any()
    assert legacy["score"].null_count() > 0 and legacy["symbol"].null_count() > 0
    assert legacy["decision_id"].null_count() > 0


# ------------------------------------------------------------------------------------------ module


def test_demo_roles_mirror_roles_yaml():
    registry = yaml.safe_load((ROOT / "tradingmem_assets" / "roles.yaml").read_text())
    declared = {
        r["role_id"]: (s["skill_id"], r["maturity_days"], r["primary_profile"], tuple(r["required_evidence"]))
        for s in registry["skills"]
        for r in s["roles"]
    }
    ours = {
        r.role_id: (r.skill_id, r.maturity_days, r.primary_profile, r.required_evidence) for r in demo._ROLES
    }
    assert ours == declared
    profiles = {p[0] for p in demo.PROFILES}
    assert {v[2] for v in declared.values()} <= profiles


def test_demo_module_does_not_import_dagster():
    code = "import sys, tradingmem_assets.demo; sys.exit(1 if 'dagster' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_scale_must_be_positive(tmp_path):
    with pytest.raises(ValueError):
        write_demo_world(tmp_path, scale=0)
