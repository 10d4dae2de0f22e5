"""The warehouse resource's DuckDB memory cap holds on every connection a step opens, set once per
run on the connection that keeps the run's database instance open (``resources._cap_memory``)."""

import dagster as dg
import duckdb

from tests.world import World
from tradingmem_assets.defs.resources import WarehouseResource


def _shown(limit: str) -> str:
    """How DuckDB shows ``limit`` once set."""
    with duckdb.connect() as con:
        con.execute("SET memory_limit = ?", [limit])
        return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def test_every_connection_of_a_run_and_outside_one_has_the_cap(tmp_path, instance):
    world = World(tmp_path, instance)
    seen: list[str] = []

    @dg.asset
    def probe(warehouse: WarehouseResource) -> None:
        for _ in range(2):  # the instance the run keeps open: capped once, for every connection
            with warehouse.connect() as con:
                seen.append(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])

    resource = world.resource(memory_limit="123MB")
    result = dg.materialize([probe], resources={"warehouse": resource}, instance=instance)
    assert result.success
    assert seen == [_shown("123MB")] * 2 and _shown("123MB") != _shown("1.5GB")

    with world.resource(memory_limit="321MB").connect() as con:  # no run: capped as it opens
        assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == _shown("321MB")
