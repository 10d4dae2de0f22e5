"""The crafted efficacy world, materialized once through Dagster (tests/efficacy/world.py)."""

import dagster as dg
import pytest

from tests.efficacy import world as crafted
from tests.world import World

EFFICACY_UPSTREAM = dg.AssetSelection.assets("memory_efficacy").upstream().required_multi_asset_neighbors()


@pytest.fixture(scope="session")
def efficacy_world(tmp_path_factory, instance) -> tuple[World, dg.ExecuteInProcessResult]:
    world = World(tmp_path_factory.mktemp("efficacy"), instance)
    crafted.write(world)
    result = world.materialize(EFFICACY_UPSTREAM)
    return world, result
