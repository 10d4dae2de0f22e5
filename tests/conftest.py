import atexit
import os
import shutil
import tempfile

import dagster as dg
import pytest

# keep tests from picking up a developer's instance, time anchor or landing folder (the migration
# partitions are bounded by the landing file found when the code location loads)
os.environ.pop("DAGSTER_HOME", None)
os.environ.pop("TRADINGMEM_AS_OF", None)
os.environ.pop("TRADINGMEM_MIGRATION_END", None)
os.environ["TRADINGMEM_LANDING_DIR"] = tempfile.mkdtemp(prefix="tradingmem-no-landing-")
atexit.register(shutil.rmtree, os.environ["TRADINGMEM_LANDING_DIR"], ignore_errors=True)
# nor the width of a developer's terminal: off a terminal the CLI prints at its own width unless
# COLUMNS says otherwise, and a parallel test worker gets COLUMNS=80 from pytest-xdist
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

from tests.world import World  # noqa: E402


@pytest.fixture(scope="session")
def instance():
    # in-memory run/event storage: materializations stay fast however many tests have run
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture
def world(tmp_path, instance) -> World:
    return World(tmp_path, instance)


# The longest modules (each a few minutes of subprocesses, servers or demo runs) start first, so
# parallel workers (pytest-xdist, one module per worker at a time) finish together rather than one
# of them starting a long module last. Order only: every module's own order is kept.
LONGEST_FIRST = (
    "tests/operations/test_run_queue.py",
    "tests/operations/test_postgres_instance.py",
    "tests/cli/test_cli.py",
    "tests/audit/test_demo_audit.py",
    "tests/evaluation/test_incremental.py",
    "tests/operations/test_replay.py",
    "tests/benchmark/test_benchmark.py",
    "tests/operations/test_main_job.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
