"""`tradingmem audit run|show|trend|findings` against a temp warehouse and a temp Dagster home."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import dagster as dg
import duckdb
import pytest
from click.testing import CliRunner

from tests.audit.world import EXPECTED_COMPOSITE, healthy_learning_state, write_learning_state
from tradingmem_assets.cli import main
from tradingmem_assets.cli.audit import sparkline
from tradingmem_assets.defs.audit.checks import AUDIT_ASSET_KEY
from tradingmem_assets.defs.audit.jobs import IsolationViolation, record_violation


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit_cli")
    db = root / "tradingmem.duckdb"
    write_learning_state(db, healthy_learning_state())
    home = root / "dagster_home"
    home.mkdir()
    env = {"TRADINGMEM_DB": str(db), "DAGSTER_HOME": str(home), "TRADINGMEM_AS_OF": "2024-07-01T00:00:00Z"}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        yield {"db": db, "home": home}


def cli(*args: str, ok: bool = True):
    result = CliRunner().invoke(main, list(args))
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr, result.exception)
    return result


@pytest.fixture(scope="module")
def first_pass(cli_env):
    result = cli("audit", "run", "--json")
    return json.loads(result.stdout)


def test_audit_run_prints_one_json_report_of_a_recorded_materialization(cli_env, first_pass):
    assert first_pass["tier"] == "healthy"
    assert first_pass["composite"] == pytest.approx(EXPECTED_COMPOSITE)
    assert first_pass["isolation_ok"] is True
    assert first_pass["pass_id"].startswith("ap_")
    # the pass is a run of methodology_audit_job in the instance the UI reads (DAGSTER_HOME)
    with dg.DagsterInstance.get() as instance:
        run = instance.get_run_by_id(first_pass["run_id"])
        assert run.job_name == "methodology_audit_job"
        records = instance.fetch_materializations(AUDIT_ASSET_KEY, limit=5).records
        assert [r.run_id for r in records] == [first_pass["run_id"]]
        assert records[0].asset_materialization.metadata["pass_id"].value == first_pass["pass_id"]


def test_audit_show_returns_the_latest_or_the_named_pass(first_pass):
    latest = json.loads(cli("audit", "show", "--latest", "--json").stdout)
    assert latest["pass_id"] == first_pass["pass_id"]
    assert isinstance(latest["dimension_scores"], dict) and isinstance(latest["findings"], list)
    named = json.loads(cli("audit", "show", "--pass", first_pass["pass_id"], "--json").stdout)
    assert named == latest
    text = cli("audit", "show").stdout
    assert first_pass["pass_id"] in text and "healthy" in text


def test_audit_show_of_an_unknown_pass_is_an_error_on_stderr(first_pass):
    result = cli("audit", "show", "--pass", "ap_nope", "--json", ok=False)
    assert result.exit_code != 0
    assert result.stdout == ""
    assert "ap_nope" in result.stderr


def test_audit_findings_filters_by_severity(first_pass):
    doc = json.loads(cli("audit", "findings", "--severity", "medium", "--json").stdout)
    assert doc["pass_id"] == first_pass["pass_id"]
    assert doc["findings"] and {f["severity"] for f in doc["findings"]} == {"medium"}
    bad = cli("audit", "findings", "--severity", "urgent", ok=False)
    assert bad.exit_code != 0


def test_audit_trend_excludes_passes_that_changed_learning_tables(cli_env, first_pass):
    second = json.loads(cli("audit", "run", "--window-days", "7", "--json").stdout)
    assert second["window_days"] == 7
    con = duckdb.connect(str(cli_env["db"]))
    try:
        record_violation(
            con,
            IsolationViolation(
                pass_id="ap_violated",
                sha256_before="a" * 64,
                sha256_after="b" * 64,
                storage_id=1,
                materialization_run_id="r",
                materialization_timestamp=datetime.now(UTC).timestamp(),
                tier="alarm",
                composite=10.0,
            ),
        )
    finally:
        con.close()
    doc = json.loads(cli("audit", "trend", "--days", "30", "--json").stdout)
    assert [p["pass_id"] for p in doc["passes"]] == [first_pass["pass_id"], second["pass_id"]]
    assert doc["excluded_isolation_violations"] == 1
    assert len(doc["sparkline"]) == 2
    assert doc["latest"]["pass_id"] == second["pass_id"]
    assert "excluded" in cli("audit", "trend").stdout


def test_the_sparkline_is_on_an_absolute_scale_with_gaps_for_unscored_passes():
    assert sparkline([0.0, 50.0, 100.0, None]) == "▁▅█·"


def test_audit_commands_on_a_warehouse_without_reports_fail_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv("TRADINGMEM_DB", str(tmp_path / "empty.duckdb"))
    result = cli("audit", "show", "--json", ok=False)
    assert result.exit_code != 0 and "does not exist" in result.stderr
    duckdb.connect(str(tmp_path / "empty.duckdb")).close()
    result = cli("audit", "trend", "--json", ok=False)
    assert result.exit_code != 0 and "not materialized" in result.stderr
