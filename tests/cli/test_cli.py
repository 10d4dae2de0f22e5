"""The `tradingmem` command line end to end: a real demo run, human output for people, clear errors.

`demo --run` runs in a subprocess (stdout is a pipe, not a terminal) against a small warehouse in a
temp folder, with its own Dagster instance; the read commands run through click's CliRunner on the
warehouse it built.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from click.testing import CliRunner

from tradingmem_assets.cli import main
from tradingmem_assets.lib import warehouse as warehouse_module

REPO = Path(__file__).resolve().parents[2]
SCALE = "0.002"
AS_OF = "2024-07-01T00:00:00Z"
MAX_PLAIN_LINES = 60
# a number with 4+ decimals that is not the fraction of a timestamp's seconds
LONG_DECIMAL = re.compile(r"(?<![\w:.])\d+\.\d{4,}(?![\w])")
TIMING = re.compile(r"\d+\.\d{2}s\b")


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRADINGMEM_", "DAGSTER_HOME"))}
    env.update(
        TRADINGMEM_DB=str(root / "data" / "tradingmem.duckdb"),
        TRADINGMEM_LANDING_DIR=str(root / "data" / "landing"),
        DAGSTER_HOME=str(root / "dagster_home"),
        PYTHONPATH=str(REPO),
        # Dagster 1.13 orders two blocking checks of one asset (role_cases has two) by the hash
        # seed, so a job snapshot is only comparable between processes with the same seed
        PYTHONHASHSEED="0",
    )
    return env


def _tradingmem(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tradingmem_assets.cli", *args],
        cwd=root,
        env=env or _env(root),
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`tradingmem demo --run` off a terminal, then the same with --json on the same warehouse."""
    root = tmp_path_factory.mktemp("cli_demo")
    home = root / "dagster_home"
    home.mkdir()
    # the project's instance settings: no first-run telemetry banner in the output
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    human = _tradingmem(root, "demo", "--run", "--scale", SCALE)
    assert human.returncode == 0, human.stderr[-3000:]
    as_json = _tradingmem(root, "demo", "--run", "--scale", SCALE, "--json")
    assert as_json.returncode == 0, as_json.stderr[-3000:]
    audit = _tradingmem(root, "audit", "run", "--json", env={**_env(root), "TRADINGMEM_AS_OF": AS_OF})
    assert audit.returncode == 0, audit.stderr[-3000:]
    return {"root": root, "env": _env(root), "human": human, "json": as_json, "audit": audit}


@pytest.fixture
def cli_env(demo, monkeypatch):
    for key, value in demo["env"].items():
        if key.startswith(("TRADINGMEM_", "DAGSTER_HOME")):
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("TRADINGMEM_AS_OF", AS_OF)
    return demo["env"]


def cli(*args: str, ok: bool = True):
    result = CliRunner().invoke(main, list(args))
    if ok:
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def _job_assets_by_group() -> dict[str, set[str]]:
    from tradingmem_assets.definitions import defs

    job = defs().resolve_job_def("trading_memory_job")
    graph = job.asset_layer.asset_graph
    groups: dict[str, set[str]] = {}
    for key in job.asset_layer.executable_asset_keys:
        groups.setdefault(graph.get(key).group_name, set()).add(key.to_user_string())
    return groups


# --- demo --run ------------------------------------------------------------------------------------


def test_demo_run_off_a_terminal_prints_a_short_summary_naming_every_asset_with_its_time(demo):
    out, err = demo["human"].stdout, demo["human"].stderr
    assert len(out.splitlines()) + len(err.splitlines()) <= MAX_PLAIN_LINES, out + err
    assert "DEBUG" not in out + err and "RUN_START" not in out + err  # not the Dagster event log
    assert "Traceback" not in err
    for group, assets in _job_assets_by_group().items():
        assert re.search(rf"^{group}\s+{len(assets)}\s", out, re.MULTILINE), (group, out)
        for asset in assets:
            # "raw/trade_fills 0.12s", or a multi-asset step "evaluation (…, evaluation_runs, …) 0.22s"
            timed = rf"{re.escape(asset)}(\)|,[^)]*\))?\s+{TIMING.pattern}"
            assert re.search(timed, out), (asset, out)
    assert "trading_memory_job succeeded in" in out
    assert f"warehouse {demo['env']['TRADINGMEM_DB']}" in out and "evaluation_runs" in out
    assert all(line == line.rstrip() for line in out.splitlines())  # plain text, no padding


def test_demo_run_json_is_exactly_one_document(demo):
    document = json.loads(demo["json"].stdout)
    assert document["as_of"].startswith("2024-07-01")
    assert document["tables"]["evaluation_runs"] > 0
    assert {"landing_dir", "scale", "seed", "landing_rows", "warehouse", "run_id", "seconds"} <= set(document)
    assert "RUN_START" not in demo["json"].stderr and "DEBUG" not in demo["json"].stderr


def test_demo_run_runs_once_a_day_up_to_the_anchor_and_the_first_audit_scores_their_heartbeats(demo):
    out = demo["human"].stdout
    days = re.findall(r"^day (\d) of 3: trading_memory_job \(as_of (\S+)\)", out, re.MULTILINE)
    assert days == [("1", "2024-06-29T00:00:00Z"), ("2", "2024-06-30T00:00:00Z"), ("3", AS_OF)], out
    # the second invocation found the days already learned: only the anchor ran again
    assert [r["as_of"] for r in json.loads(demo["json"].stdout)["runs"]] == [AS_OF]
    con = duckdb.connect(demo["env"]["TRADINGMEM_DB"], read_only=True)
    try:
        beats = con.execute(
            "SELECT status, strftime(as_of, '%Y-%m-%d') FROM methodology_cron_runs ORDER BY as_of, ts"
        ).fetchall()
    finally:
        con.close()
    assert [day for _, day in beats][:3] == ["2024-06-29", "2024-06-30", "2024-07-01"], beats
    assert {status for status, _ in beats} == {"ok"}
    audit = json.loads(demo["audit"].stdout)
    assert audit["dimension_scores"]["cron_health"] == 100.0  # 4 ok beats where 2 days were expected


def test_demo_run_is_a_native_run_of_the_code_location_tagged_demo(demo):
    document = json.loads(demo["json"].stdout)
    env = demo["env"]
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"tradingmem/trigger": "demo"}))
        assert {r.run_id for r in runs} >= {document["run_id"]} and len(runs) == 4
        run = instance.get_run_by_id(document["run_id"])
        assert run.is_success and run.job_name == "trading_memory_job"
        assert run.tags["tradingmem/trigger"] == "demo"
        # the run is the location's own job (its origin below); its snapshot id is not compared with a
        # fresh load's: Dagster 1.13 orders an asset's several blocking checks by hash seed
        assert instance.has_job_snapshot(run.job_snapshot_id)
        origin = run.remote_job_origin
        assert origin is not None and origin.location_name == "tradingmem_assets"
        assert origin.repository_origin.repository_name == "__repository__"
        assert "resources" not in run.run_config  # the location's own resource, nothing overridden
        assert run.run_config["loggers"]["console"]["config"]["log_level"] == "CRITICAL"
        # the event log stays in the run's record
        assert instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS)


# --- human output ----------------------------------------------------------------------------------


def _lesson_case(env) -> str:
    con = duckdb.connect(env["TRADINGMEM_DB"], read_only=True)
    try:
        [(case_id,)] = con.execute(
            "SELECT case_id FROM role_reflections WHERE lesson IS NOT NULL ORDER BY case_id LIMIT 1"
        ).fetchall()
    finally:
        con.close()
    return case_id


def test_explain_prints_a_tree_and_json_prints_the_same_document(cli_env):
    case_id = _lesson_case(cli_env)
    text = cli("explain", "lesson", case_id).stdout
    assert not text.lstrip().startswith("{")
    assert text.splitlines()[0] == f"lesson {case_id}"
    assert "├── " in text and "└── " in text
    for branch in ("reflections (1)", "case", "decision", "execution", "fills (", "evaluation_runs ("):
        assert f"── {branch}" in text, branch
    document = json.loads(cli("explain", "lesson", case_id, "--json").stdout)
    assert document["case"]["case_id"] == case_id and document["kind"] == "lesson"
    assert document["case"]["decision_id"] in text and document["fills"][0]["fill_id"] in text


@pytest.mark.parametrize(
    "args",
    [
        ("doctor",),
        ("budget",),
        ("learnings", "top"),
        ("learnings", "recent"),
        ("learnings", "suggest", "find support levels for BTC"),
        ("methodologies", "list"),
        ("audit", "show"),
        ("audit", "trend"),
        ("audit", "findings"),
    ],
)
def test_human_output_rounds_numbers_for_people(cli_env, args):
    result = cli(*args, ok=False)
    assert result.exit_code in (0, 1), (result.stdout, result.stderr)  # doctor: 1 = needs action
    assert result.stdout.strip() and not result.stdout.lstrip().startswith("{")
    assert LONG_DECIMAL.findall(result.stdout) == [], result.stdout
    assert all(line == line.rstrip() for line in result.stdout.splitlines())


def test_recall_rounds_its_scores(cli_env, monkeypatch):
    from tradingmem_assets.defs.role_memory import recall

    monkeypatch.setattr(recall, "SETTINGS", dataclasses.replace(recall.SETTINGS, role_memory_mode="active"))
    con = duckdb.connect(cli_env["TRADINGMEM_DB"], read_only=True)
    try:
        [(role, lesson)] = con.execute(
            "SELECT role_id, lesson FROM role_reflections WHERE lesson IS NOT NULL ORDER BY case_id LIMIT 1"
        ).fetchall()
    finally:
        con.close()
    query = " ".join(lesson.split()[1:12])  # words of a stored lesson: recall finds it
    result = cli("recall", query, "--role", role)
    assert "advisory only" in result.stdout and LONG_DECIMAL.findall(result.stdout) == []
    doc = json.loads(cli("recall", query, "--role", role, "--json").stdout)
    assert doc["results"] and isinstance(doc["results"][0]["score"], float)
    assert f"{doc['results'][0]['score']:.3f}" in result.stdout


# --- errors ----------------------------------------------------------------------------------------

READS = [
    ("recall", "anything", "--role", "valuation"),
    ("learnings", "top"),
    ("learnings", "recent"),
    ("learnings", "suggest", "anything"),
    ("learnings", "delete", "l_0000000000000000"),
    ("audit", "show"),
    ("audit", "trend"),
    ("audit", "findings"),
    ("methodologies", "list"),
    ("explain", "case", "rc_0000"),
    ("budget",),
    ("doctor",),
]


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
def test_a_missing_warehouse_is_one_line_naming_it_and_no_file_is_created(
    args, as_json, tmp_path, monkeypatch
):
    from tradingmem_assets.defs.role_memory import recall

    monkeypatch.setattr(recall, "SETTINGS", dataclasses.replace(recall.SETTINGS, role_memory_mode="active"))
    missing = tmp_path / "nowhere" / "tradingmem.duckdb"
    monkeypatch.setenv("TRADINGMEM_DB", str(missing))
    result = CliRunner().invoke(main, [*args, *(["--json"] if as_json else [])])
    assert result.exit_code != 0 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tradingmem: ") and str(missing) in lines[0] and "does not exist" in lines[0]
    assert "Traceback" not in result.stderr
    assert not missing.exists() and not missing.parent.exists()


def test_a_locked_warehouse_is_one_clear_line(cli_env, monkeypatch):
    db = cli_env["TRADINGMEM_DB"]
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, duckdb\ncon = duckdb.connect(sys.argv[1])\nprint('locked', flush=True)\n"
            "time.sleep(120)",
            db,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        # the CLI waits for a lock before giving up; the test does not wait 30 s
        monkeypatch.setattr(
            warehouse_module.open_warehouse,
            "__kwdefaults__",
            {**warehouse_module.open_warehouse.__kwdefaults__, "wait_s": 0.5},
        )
        for args in (
            ("learnings", "top"),
            ("learnings", "delete", "l_0000000000000000"),
            ("doctor", "--json"),
        ):
            result = cli(*args, ok=False)
            assert result.exit_code != 0 and result.stdout == ""
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and "locked by another process" in lines[0] and db in lines[0], lines
    finally:
        holder.kill()
        holder.wait()


def test_a_dagster_home_that_is_no_folder_is_one_line_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("TRADINGMEM_DB", str(tmp_path / "w.duckdb"))
    monkeypatch.setenv("TRADINGMEM_LANDING_DIR", str(tmp_path / "landing"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "no_such_home"))
    result = CliRunner().invoke(main, ["demo", "--run"])
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "DAGSTER_HOME" in lines[0] and "not a folder" in lines[0], lines
    assert not (tmp_path / "landing").exists() and not (tmp_path / "w.duckdb").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("explain", "nonsense", "x"),
        ("explain", "case"),
        ("learnings", "top", "-n", "0"),
        ("audit", "trend", "--days", "soon"),
        ("recall", "anything"),
        ("methodologies", "list", "--as-of", "last tuesday"),
        ("demo", "--scale", "-1"),
        ("learnings", "nonsense"),
    ],
)
def test_a_bad_argument_is_a_usage_error_not_a_traceback(args, tmp_path, monkeypatch):
    monkeypatch.setenv("TRADINGMEM_DB", str(tmp_path / "w.duckdb"))
    monkeypatch.setenv("TRADINGMEM_LANDING_DIR", str(tmp_path / "landing"))
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2 and result.stdout == ""
    assert "Usage:" in result.stderr and "Error:" in result.stderr
    assert "Traceback" not in result.stderr and isinstance(result.exception, SystemExit)
    assert not (tmp_path / "w.duckdb").exists() and not (tmp_path / "landing").exists()
