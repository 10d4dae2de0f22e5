import pytest

from tests.world import World
from tradingmem_assets.demo import write_demo_world

BUILT_AS_OF = "2024-07-01T00:00:00Z"


@pytest.fixture
def built(tmp_path, instance) -> World:
    """A small demo warehouse built once at BUILT_AS_OF, for tests that edit or replay it."""
    world = World(tmp_path, instance, as_of=BUILT_AS_OF)
    write_demo_world(world.landing, scale=0.002, seed=3)
    assert world.materialize().success
    return world
