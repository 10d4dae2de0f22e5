"""The README's main command end to end: demo world, trading_memory_job, contract names, determinism."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from tradingmem_assets.definitions import defs
from tradingmem_assets.defs.operations.runs import run_main_job
from tradingmem_assets.demo import DEMO_AS_OF

REPO = Path(__file__).resolve().parents[2]
SHARED_CHECKER = REPO.parent / "shared" / "contract" / "check_contract.py"
# Tables that record runs rather than derive from inputs (SPEC section 13 excepts them).
RUN_RECORDS = {
    "warehouse_runs",
    "run_inputs",
    "run_table_states",
    "evaluation_basis",
    "role_cases_basis",
    "profile_basis",
    "memory_promotion_basis",
    "validated_contents",
    "methodology_cron_runs",
    "methodology_audit_reports",
    "llm_usage",
}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    env = {
        **os.environ,
        "TRADINGMEM_DB": str(root / "data" / "tradingmem.duckdb"),
        "TRADINGMEM_LANDING_DIR": str(root / "data" / "landing"),
        "DAGSTER_HOME": str(root / "dagster_home"),
    }
    env.pop("TRADINGMEM_AS_OF", None)
    (root / "dagster_home").mkdir()
    # a warehouse that already learned past the demo's anchor (the UI ran on the wall clock)
    (root / "data").mkdir()
    ahead = duckdb.connect(str(root / "data" / "tradingmem.duckdb"))
    try:
        ahead.execute(
            "CREATE TABLE main.warehouse_runs AS SELECT 'r0' AS run_id, 'trading_memory_job' AS job_name, "
            "'learning' AS kind, TIMESTAMPTZ '2030-01-01 00:00:00+00' AS as_of, "
            "TIMESTAMPTZ '2030-01-01 00:00:00+00' AS started_at, TIMESTAMPTZ '2030-01-01 00:01:00+00' AS finished_at, "
            "'ok' AS status"
        )
    finally:
        ahead.close()
    proc = subprocess.run(
        # one day: the warehouse is compared with one run at the same as_of below (record times,
        # created_at / updated_at / reflected_at and the profile snapshots, are the writing runs')
        [
            sys.executable,
            "-m",
            "tradingmem_assets.cli",
            "demo",
            "--run",
            "--scale",
            "0.005",
            "--days",
            "1",
            "--json",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, json.loads(proc.stdout)


def test_code_location_loads_and_the_main_job_excludes_audit_and_migration():
    definitions = defs()
    dg.Definitions.validate_loadable(definitions)
    job = definitions.resolve_job_def("trading_memory_job")
    keys = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
    assert {"raw/trading_decisions", "evaluation_runs", "evaluation_components"} <= keys
    assert not any(k.startswith(("legacy_role_memory_backup", "methodology_audit_reports")) for k in keys)


def test_demo_run_command_builds_the_warehouse_and_reports_it(demo_run):
    root, document = demo_run
    assert document["as_of"].startswith("2024-07-01")
    # the warehouse had learned up to 2030: the demo rebuilt its own file instead of being refused
    assert document["rebuilt"] and "2030-01-01" in document["rebuilt"]
    tables = document["tables"]
    assert tables["evaluation_runs"] > 0 and tables["raw_rejects"] > 0
    # the run is recorded in the Dagster instance the CLI used
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        record = instance.get_run_record_by_id(document["run_id"])
        assert record is not None and record.dagster_run.job_name == "trading_memory_job"
        assert record.dagster_run.is_success


def test_warehouse_matches_the_contract_names(demo_run):
    root, _ = demo_run
    db = root / "data" / "tradingmem.duckdb"
    from tests.contract import missing_contract_columns

    con = duckdb.connect(str(db), read_only=True)
    try:
        problems = missing_contract_columns(con)
    finally:
        con.close()
    assert problems == {}
    if SHARED_CHECKER.exists():  # the project's shared checker, when this checkout has it beside it
        # --due: the names new this round (known_at, warehouse_runs, memory_efficacy ...) are present
        proc = subprocess.run(
            [sys.executable, str(SHARED_CHECKER), str(db), "--due"], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stdout
        assert " 0 with names due" in proc.stdout, proc.stdout
        assert "with missing columns" in proc.stdout and " 0 with missing columns" in proc.stdout


def test_every_declared_column_compression_is_how_the_main_job_stored_the_column(demo_run):
    root, _ = demo_run
    from tradingmem_assets.lib.tables import COLUMN_COMPRESSION

    con = duckdb.connect(str(root / "data" / "tradingmem.duckdb"), read_only=True)
    try:
        for qualified, columns in COLUMN_COMPRESSION.items():
            name = qualified.rpartition(".")[2]
            (declared,) = con.execute(
                "SELECT sql FROM duckdb_tables() WHERE table_name = ?", [name]
            ).fetchone()
            stored = dict(
                con.execute(
                    "SELECT column_name, string_agg(DISTINCT lower(compression), ',') "
                    f"FROM pragma_storage_info('{name}') "
                    "WHERE segment_type <> 'VALIDITY' AND compression <> 'Constant' GROUP BY 1"
                ).fetchall()
            )
            for column, compression in columns.items():
                assert re.search(rf"\b{column} \w+ USING COMPRESSION {compression}\b", declared, re.I), (
                    qualified,
                    column,
                )
                assert stored[column] == compression, (qualified, column, stored[column])
    finally:
        con.close()


def test_same_inputs_and_as_of_give_identical_derived_rows(demo_run, tmp_path):
    root, _ = demo_run
    with dg.instance_for_test() as instance:
        report = run_main_job(
            instance,
            database=str(tmp_path / "again.duckdb"),
            landing_dir=str(root / "data" / "landing"),
            as_of=DEMO_AS_OF.isoformat(),
        )
    assert report.success, report.error
    a = duckdb.connect(str(root / "data" / "tradingmem.duckdb"), read_only=True)
    b = duckdb.connect(str(tmp_path / "again.duckdb"), read_only=True)
    try:
        tables = [
            (s, t)
            for s, t in a.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema IN ('main', 'raw') ORDER BY ALL"
            ).fetchall()
            if t not in RUN_RECORDS
        ]
        assert len(tables) > 30
        for schema, table in tables:
            q = f"SELECT * FROM {schema}.{table} ORDER BY ALL"
            assert a.sql(q).fetchall() == b.sql(q).fetchall(), f"{schema}.{table} differs between runs"
    finally:
        a.close()
        b.close()


def test_explain_walks_a_lesson_back_to_decision_execution_fills_and_run(demo_run):
    root, _ = demo_run
    db = str(root / "data" / "tradingmem.duckdb")
    env = {**os.environ, "TRADINGMEM_DB": db}
    con = duckdb.connect(db, read_only=True)
    try:
        [(case_id,)] = con.execute(
            "SELECT case_id FROM role_reflections WHERE lesson IS NOT NULL ORDER BY case_id LIMIT 1"
        ).fetchall()
    finally:
        con.close()
    proc = subprocess.run(
        [sys.executable, "-m", "tradingmem_assets.cli", "explain", "lesson", case_id, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["reflections"][0]["lesson"]
    assert doc["decision"]["decision_id"] == doc["case"]["decision_id"] == doc["execution"]["decision_id"]
    assert doc["fills"] and all(f["execution_id"] == doc["case"]["execution_id"] for f in doc["fills"])
    primary = [r for r in doc["evaluation_runs"] if r["is_primary"]]
    assert [r["run_id"] for r in primary] == [doc["case"]["primary_run_id"]]
    assert {c["component"] for c in primary[0]["components"]} >= {"raw_return", "excess_return", "volatility"}
    # and whether the role's lessons of that class changed its later results (SPEC 17)
    classes = {r["classification"] for r in doc["reflections"]}
    assert doc["efficacy"] and all(
        e["subject_kind"] == "lesson"
        and e["role_id"] == doc["case"]["role_id"]
        and e["subject_id"] in classes
        for e in doc["efficacy"]
    )

    missing = subprocess.run(
        [sys.executable, "-m", "tradingmem_assets.cli", "explain", "case", "rc_does_not_exist"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode != 0 and "no role case rc_does_not_exist" in missing.stderr
