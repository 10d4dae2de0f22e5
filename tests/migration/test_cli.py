"""The README's migration commands, run for real by the `dagster` CLI against a temp warehouse."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb

from tests.world import World, ts

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).parent / "dagster")
SELECT = "legacy_role_memory_backup,migrated_role_cases,migration_conservation_report"

ROWS = [
    {
        "legacy_id": "c1",
        "role": "valuation",
        "content": "kept as is  ",
        "created_at": ts("2024-01-10"),
        "provenance": "legacy:c1",
        "score": 0.4,
    },
    {
        "legacy_id": "c2",
        "role": "oracle",
        "content": "unknown role",
        "created_at": ts("2024-01-11"),
        "provenance": "legacy:c2",
    },
    {
        "legacy_id": "c3",
        "role": "trend_follower",
        "content": "",
        "created_at": ts("2020-02-03"),
        "provenance": "legacy:c3",
    },
    {
        "legacy_id": "c4",
        "role": "trend_follower",
        "content": "range row",
        "created_at": ts("2020-03-31 23:00"),
        "provenance": "legacy:c4",
    },
]


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [DAGSTER, "asset", "materialize", "-m", "tradingmem_assets.definitions", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_readme_commands_materialize_one_partition_and_a_range_into_the_configured_warehouse(tmp_path):
    # the landing step (`--select raw/legacy_role_memory` in the README) runs in process: same asset,
    # same warehouse file, and it saves one slow CLI start
    with dg.DagsterInstance.ephemeral() as instance:
        world = World(tmp_path / "warehouse", instance)
        world.write("legacy_role_memory", ROWS)
        world.materialize(["raw/legacy_role_memory"])
    home = tmp_path / "dagster_home"
    home.mkdir()
    db = world.db
    env = {
        **os.environ,
        "TRADINGMEM_DB": str(db),
        "TRADINGMEM_LANDING_DIR": str(world.landing),
        "TRADINGMEM_AS_OF": "2024-07-01T00:00:00Z",
        "DAGSTER_HOME": str(home),  # never the repo's instance under data/
        "PYTHONWARNINGS": "ignore",
    }

    run(["--select", SELECT, "--partition", "2024-01-01"], env)
    run(["--select", SELECT, "--partition-range", "2020-01-01...2020-03-01"], env)

    # backups resolve next to the warehouse that TRADINGMEM_DB names, not under the repo's data/
    backups = tmp_path / "warehouse" / "backups" / "legacy_role_memory"
    assert sorted(p.name for p in backups.iterdir()) == [
        "2020-01-01.parquet",
        "2020-02-01.parquet",
        "2020-03-01.parquet",
        "2024-01-01.parquet",
    ]
    con = duckdb.connect(str(db), read_only=True)
    try:
        report = con.execute(
            "SELECT partition_key, rows_in, migrated, quarantined, rejected, checksum_ok, conserved "
            "FROM migration_conservation_report ORDER BY 1"
        ).fetchall()
        cases = con.execute(
            "SELECT legacy_id, status, content FROM migrated_role_cases ORDER BY 1"
        ).fetchall()
        paths = con.execute("SELECT path FROM migration_backups ORDER BY 1").fetchall()
    finally:
        con.close()
    assert report == [
        ("2020-01-01", 0, 0, 0, 0, True, True),
        ("2020-02-01", 1, 0, 0, 1, True, True),
        ("2020-03-01", 1, 1, 0, 0, True, True),
        ("2024-01-01", 2, 1, 1, 0, True, True),
    ]
    assert cases == [
        ("c1", "migrated", "kept as is  "),
        ("c2", "quarantined", "unknown role"),
        ("c4", "migrated", "range row"),
    ]
    assert all(Path(p).parent == backups.resolve() for (p,) in paths)
