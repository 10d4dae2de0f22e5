"""ROLE_MEMORY_MODE is fixed when the code location loads: each test starts a fresh process with the
variable set (off / illegal / shadow / active), and the active one also drives the LLM reflector,
the CLI (recall, reflect, budget) and the budget cap against a fake endpoint on 127.0.0.1."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.role_memory.test_reflection import FakeLLM

ROOT = Path(__file__).resolve().parents[2]

MATERIALIZE = """
import json, pathlib, sys
import dagster as dg
import duckdb
from tests.role_memory.test_admission import PIPELINE
from tests.role_memory.world import Chain, band, fill_price_for
from tests.world import World
from tradingmem_assets.defs.role_memory import assets

with dg.instance_for_test() as inst:
    world = World(pathlib.Path(sys.argv[1]), inst)
    Chain().add("d", fill_price=fill_price_for(-2 * band())).write_world(world)
    result = world.materialize(PIPELINE)
    con = duckdb.connect(str(world.db), read_only=True)
    tables = sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
    con.close()
    print(json.dumps({
        "mode": assets.ROLE_MEMORY_MODE,
        "success": result.success,
        "materialized": sorted(
            e.asset_key.to_user_string() for e in result.get_asset_materialization_events()
        ),
        "observations": {e.asset_key.to_user_string(): {k: str(v.value) for k, v in
                         e.event_specific_data.asset_observation.metadata.items()}
                         for e in result.get_asset_observation_events()},
        "tables": tables,
    }))
"""


def env_with(**values: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROLE_MEMORY_MODE", "TRADINGMEM_"))}
    env.pop("DAGSTER_HOME", None)
    env["PYTHONPATH"] = str(ROOT)
    env.update({k: v for k, v in values.items() if v is not None})
    return env


def python(code: str, *args: str, **env: str | None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env_with(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def cli(*args: str, **env: str | None) -> subprocess.CompletedProcess:
    return python("from tradingmem_assets.cli import main; main()", *args, **env)


def last_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cli_json(proc: subprocess.CompletedProcess) -> dict:
    """Every CLI command with --json prints exactly one JSON document on stdout."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_off_mode_materializes_nothing_and_says_so(tmp_path):
    proc = python(MATERIALIZE, str(tmp_path), ROLE_MEMORY_MODE="off")
    got = last_json(proc)
    assert got["mode"] == "off" and got["success"] is True
    assert "evaluation_runs" in got["materialized"]
    assert not {"role_cases", "role_reflections", "role_stats"} & set(got["materialized"])
    assert not {"role_cases", "role_reflections", "role_stats", "llm_usage"} & set(got["tables"])
    assert got["observations"]["role_cases"]["role_memory_mode"] == "off"
    assert "ROLE_MEMORY_MODE=off" in got["observations"]["role_cases"]["note"]
    assert "ROLE_MEMORY_MODE=off for this process" in proc.stderr  # the run log says so too


def test_an_illegal_mode_warns_at_load_and_falls_back_to_shadow():
    code = (
        "from tradingmem_assets.definitions import defs; defs().resolve_job_def('trading_memory_job')\n"
        "from tradingmem_assets.defs.role_memory import assets\n"
        "from tradingmem_assets.defs.role_memory.recall import recall, RoleMemoryUnavailableError\n"
        "try:\n    recall('valuation', 'x')\n"
        "except RoleMemoryUnavailableError as e:\n    print('refused:', e)\n"
        "print(assets.ROLE_MEMORY_MODE)\n"
    )
    proc = python(code, ROLE_MEMORY_MODE="loud")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ROLE_MEMORY_MODE='loud' is not one of off/shadow/active; falling back to 'shadow'" in proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "shadow" and lines[0].startswith("refused:") and "'shadow'" in lines[0]


@pytest.mark.parametrize("mode", ["shadow", "off"])
def test_recall_and_reflect_are_refused_unless_active(mode, tmp_path):
    for args in (["recall", "anything", "--role", "valuation"], ["reflect", "rc_0000"]):
        proc = cli(*args, "--json", ROLE_MEMORY_MODE=mode, TRADINGMEM_DB=str(tmp_path / "w.duckdb"))
        assert proc.returncode == 2 and proc.stdout == ""
        assert f"ROLE_MEMORY_MODE is '{mode}'" in proc.stderr and "not available" in proc.stderr
    assert not (tmp_path / "w.duckdb").exists()


def test_active_mode_with_llm_reflects_recalls_and_stops_at_the_budget_cap(tmp_path):
    db = str(tmp_path / "tradingmem.duckdb")
    with FakeLLM(answer="Size AAA smaller until guidance settles.") as fake:
        llm = {
            "ROLE_MEMORY_MODE": "active",
            "TRADINGMEM_LLM_BASE_URL": fake.url,
            "TRADINGMEM_LLM_MODEL": "fake-1",
            "TRADINGMEM_LLM_API_KEY": "sk-test",
        }
        got = last_json(python(MATERIALIZE, str(tmp_path), **llm))
        assert got["mode"] == "active" and "role_reflections" in got["materialized"]
        assert len(fake.requests) == 1 and "tools" not in fake.requests[0]["body"]

        run = {**llm, "TRADINGMEM_DB": db, "TRADINGMEM_AS_OF": "2024-07-02T00:00:00Z"}
        recalled = cli_json(
            cli("recall", "guidance", "--role", "valuation", "--symbol", "AAA", "--json", **run)
        )
        (hit,) = recalled["results"]
        assert (
            hit["lesson"] == "Size AAA smaller until guidance settles." and hit["reflector"] == "llm:fake-1"
        )
        assert "advisory" in recalled

        reflected = cli_json(cli("reflect", hit["case_id"], "--json", **run))
        assert reflected["recorded"] is True and reflected["reflector"] == "llm:fake-1"
        assert reflected["reflected_at"].startswith("2024-07-02") and len(fake.requests) == 2

        budget = cli_json(cli("budget", "--json", **run))
        spend = {r["category"]: r for r in budget["categories"]}
        assert spend["reflection"]["today_usd"] > 0 and spend["review"]["today_usd"] == 0

        capped = cli(
            "reflect",
            hit["case_id"],
            "--json",
            **{**run, "TRADINGMEM_AS_OF": "2024-07-03T00:00:00Z"},
            TRADINGMEM_BUDGET_REFLECTION_DAILY_USD="0.0000001",
        )
        assert capped.returncode != 0 and "LLM budget exceeded for 'reflection'" in capped.stderr
        assert "nothing was recorded" in capped.stderr
        assert len(fake.requests) == 2  # the refused call never reached the endpoint

    import duckdb

    con = duckdb.connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM role_reflections").fetchall() == [(2,)]
    assert con.execute("SELECT count(*), min(category) FROM llm_usage").fetchall() == [(2, "reflection")]
    con.close()
