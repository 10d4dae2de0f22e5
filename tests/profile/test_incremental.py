"""Profiles after the last run on an unchanged past are built only for the customers the new
instants (or their changed facts) can change, and the tables equal a full build's (SPEC section 14)."""

import shutil

import duckdb
import polars as pl
import pytest

from tests.incremental import at, forget_state, materialization_metadata, rows, run, touched_count
from tradingmem_assets.benchmark.days import landing_until
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import tables

# from the world's anchor back: customers open, trade, answer questionnaires and talk all along
STEPS = ("2024-05-20T00:00:00Z", "2024-05-27T00:00:00Z", "2024-06-10T00:00:00Z")
ASSET = "fin_customer_profile"
COMPARED = (tables.FIN_CUSTOMER_PROFILE, tables.PROFILE_SNAPSHOTS, "main.advisor_customer_view")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("profile_world")
    write_demo_world(root, scale=0.004, seed=29)
    return root


def test_incremental_profiles_equal_a_full_build(tmp_path, world, instance):
    """The same landing files at later instants: transactions arrive and leave the windows, facts
    are promoted and go stale; every profile and snapshot equals the full build's."""
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    run(instance, incremental, world, STEPS[0])
    shutil.copy(incremental, full)
    for as_of in STEPS[1:]:
        metadata = materialization_metadata(instance, run(instance, incremental, world, as_of).run_id, ASSET)
        touched = touched_count(metadata, "built")
        forget_state(full, tables.FIN_CUSTOMER_PROFILE)
        full_metadata = materialization_metadata(instance, run(instance, full, world, as_of).run_id, ASSET)
        assert full_metadata["built"].startswith("every customer")
        assert full_metadata["rows_rewritten"] == metadata["rows_rewritten"]
        assert rows(incremental, COMPARED) == rows(full, COMPARED)
        assert 0 < metadata["rows_rewritten"] <= touched < full_metadata["dagster/row_count"]


def test_a_week_of_new_landing_rows_is_built_incrementally_as_a_full_build_would(tmp_path, world, instance):
    """Landing files that grew by a week keep the basis; a corrected transaction from before the
    last build does not."""
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    landing = tmp_path / "landing"
    landing_until(world, landing, at(STEPS[0]))
    run(instance, incremental, landing, STEPS[0])
    shutil.copy(incremental, full)
    landing_until(world, landing, at(STEPS[1]))
    metadata = materialization_metadata(instance, run(instance, incremental, landing, STEPS[1]).run_id, ASSET)
    assert touched_count(metadata, "built") > 0 and metadata["rows_rewritten"] > 0
    forget_state(full, tables.FIN_CUSTOMER_PROFILE)
    run(instance, full, landing, STEPS[1])
    assert rows(incremental, COMPARED) == rows(full, COMPARED)
    # a transaction before the last build corrected: the past changed, every customer is built
    path = landing / "customer_transactions.parquet"
    frame = pl.read_parquet(path)
    frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.col("balance_after") + 1)
        .otherwise(pl.col("balance_after"))
        .alias("balance_after")
    ).write_parquet(path)
    metadata = materialization_metadata(instance, run(instance, incremental, landing, STEPS[2]).run_id, ASSET)
    assert metadata["built"].startswith("every customer")


def test_a_hand_edited_profile_is_built_in_full(tmp_path, world, instance):
    db = tmp_path / "w.duckdb"
    run(instance, db, world, STEPS[0])
    with duckdb.connect(str(db)) as con:
        (customer_id,) = con.execute(
            f"SELECT customer_id FROM {tables.FIN_CUSTOMER_PROFILE} ORDER BY customer_id LIMIT 1"
        ).fetchone()
        con.execute(
            f"UPDATE {tables.FIN_CUSTOMER_PROFILE} SET trading_frequency = trading_frequency + 7 "
            "WHERE customer_id = ?",
            [customer_id],
        )
    metadata = materialization_metadata(instance, run(instance, db, world, STEPS[1]).run_id, ASSET)
    assert metadata["built"].startswith("every customer")
