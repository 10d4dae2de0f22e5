import os

import dagster as dg
import pytest

os.environ.setdefault("DAGSTER_HOME", "")  # keep the CLI from picking up a developer's instance
os.environ.pop("DAGSTER_HOME", None)

from tests.world import World  # noqa: E402


@pytest.fixture(scope="session")
def instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def world(tmp_path, instance) -> World:
    return World(tmp_path, instance)
