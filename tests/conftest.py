import os
import tempfile

import dagster as dg
import pytest

# keep tests from picking up a developer's instance, time anchor or landing folder (the migration
# partitions are bounded by the landing file found when the code location loads)
os.environ.pop("DAGSTER_HOME", None)
os.environ.pop("TRADINGMEM_AS_OF", None)
os.environ.pop("TRADINGMEM_MIGRATION_END", None)
os.environ["TRADINGMEM_LANDING_DIR"] = tempfile.mkdtemp(prefix="tradingmem-no-landing-")

from tests.world import World  # noqa: E402


@pytest.fixture(scope="session")
def instance():
    # in-memory run/event storage: materializations stay fast however many tests have run
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture
def world(tmp_path, instance) -> World:
    return World(tmp_path, instance)
