"""A snapshot of the loaded code location, so an accidental change of the graph fails the suite.

After an intended change, regenerate it: ``python -m tests.test_definitions_snapshot``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import dagster as dg

from tradingmem_assets.definitions import defs

SNAPSHOT = Path(__file__).with_name("definitions_snapshot.json")


def describe(definitions: dg.Definitions) -> dict:
    """The graph as sorted names only: Dagster 1.13 orders an asset's several blocking checks (and
    so a job's check selection) by the hash seed, so nothing here may depend on iteration order."""
    graph = definitions.resolve_asset_graph()
    assets = {key.to_user_string(): graph.get(key).group_name for key in graph.get_all_asset_keys()}
    checks = {
        f"{key.asset_key.to_user_string()}:{key.name}": {"blocking": graph.get_check_spec(key).blocking}
        for key in graph.asset_check_keys
    }
    repo = definitions.get_repository_def()
    jobs = {}
    for job in repo.get_all_jobs():
        if job.name.startswith("__"):
            continue
        layer = job.asset_layer
        jobs[job.name] = {
            "assets": sorted(k.to_user_string() for k in layer.selected_asset_keys),
            "checks": sorted(
                f"{k.asset_key.to_user_string()}:{k.name}" for k in layer.asset_graph.asset_check_keys
            ),
        }
    return {
        "assets": dict(sorted(assets.items())),
        "checks": dict(sorted(checks.items())),
        "jobs": dict(sorted(jobs.items())),
        "schedules": sorted(s.name for s in repo.schedule_defs),
        "sensors": sorted(s.name for s in repo.sensor_defs),
    }


def test_code_location_loads():
    dg.Definitions.validate_loadable(defs())


def test_loaded_definitions_match_the_snapshot():
    current = describe(defs())
    expected = json.loads(SNAPSHOT.read_text())
    assert current == expected, (
        "the code location changed: if intended, run python -m tests.test_definitions_snapshot"
    )


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(describe(defs()), indent=2, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}", file=sys.stderr)


def test_landing_feeds_and_the_learning_heartbeat_declare_how_fresh_they_must_be():
    from datetime import timedelta

    graph = defs().resolve_asset_graph()
    fresh = {
        key.to_user_string(): graph.get(key).freshness_policy.fail_window.to_timedelta()
        for key in graph.get_all_asset_keys()
        if graph.get(key).freshness_policy is not None
    }
    landing = {k for k in fresh if k.startswith("raw/")}
    assert len(landing) == 23 and "methodology_cron_runs" in fresh
    assert set(fresh.values()) == {timedelta(hours=26)}
