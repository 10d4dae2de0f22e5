"""Evaluation runs: the arithmetic on the real GOOG series, versions, promotion, time anchor."""

import hashlib
import math
import random
from collections import Counter
from datetime import datetime, timedelta
from importlib.resources import files

import duckdb
import pandera.polars as pa
import polars as pl
import pytest

from tests.world import AS_OF, World, ts
from tradingmem_assets.defs.evaluation import invariants
from tradingmem_assets.defs.evaluation.scoring import run_id_for

EVAL = ["evaluation_runs", "evaluation_primaries", "evaluation_components"]
LANDING = [
    "raw/trading_decisions",
    "raw/trade_previews",
    "raw/preview_consumptions",
    "raw/trade_executions",
    "raw/trade_fills",
    "raw/price_bars",
    "raw/benchmark_profiles",
    "raw/evaluation_promotions",
]


def goog_bars() -> pl.DataFrame:
    """The real daily GOOG series shipped by `backtesting`, stamped at 21:00 UTC (close known)."""
    path = files("backtesting") / "test" / "GOOG.csv"
    frame = pl.read_csv(str(path)).rename({"": "date"})
    return frame.select(
        pl.lit("GOOG").alias("symbol"),
        (pl.col("date").str.to_date().cast(pl.Datetime("us")) + pl.duration(hours=21))
        .dt.replace_time_zone("UTC")
        .alias("ts"),
        pl.col("Open").alias("open"),
        pl.col("High").alias("high"),
        pl.col("Low").alias("low"),
        pl.col("Close").cast(pl.Float64).alias("close"),
        pl.col("Volume").cast(pl.Float64).alias("volume"),
    )


def bench_bars(start: str = "2011-01-01", days: int = 900) -> list[dict]:
    """A synthetic weekday benchmark rising 0.1 % per bar."""
    out, price, t = [], 100.0, ts(start + " 21:00")
    from datetime import timedelta

    for i in range(days):
        d = t + timedelta(days=i)
        if d.weekday() < 5:
            price *= 1.001
            out.append(
                {
                    "symbol": "MKTIDX",
                    "ts": d,
                    "open": price,
                    "high": price,
                    "low": price,
                    "close": price,
                    "volume": 1.0,
                }
            )
    return out


PROFILES = [
    {"profile_id": "abs_7d", "horizon_days": 7, "benchmark_symbol": None, "min_coverage": 0.8},
    {"profile_id": "abs_30d", "horizon_days": 30, "benchmark_symbol": None, "min_coverage": 0.8},
    {"profile_id": "rel_mktidx_7d", "horizon_days": 7, "benchmark_symbol": "MKTIDX", "min_coverage": 0.8},
]


def trade_world(world: World, *, direction: str = "long", decided: str = "2012-06-01 14:00") -> None:
    bars = goog_bars().to_dicts() + bench_bars()
    world.write("price_bars", bars)
    world.write("benchmark_profiles", PROFILES)
    world.write(
        "trading_decisions",
        [
            {
                "decision_id": "d1",
                "role_id": "valuation",
                "skill_id": "equity_research",
                "symbol": "GOOG",
                "direction": direction,
                "account_id": "a1",
                "market": "spot",
                "decision_text": "buy GOOG cheap",
                "evidence": '["fundamentals","price_history"]',
                "preview_id": "p1",
                "decided_at": ts(decided),
            }
        ],
    )
    world.write("trade_previews", [{"preview_id": "p1", "decision_id": "d1", "created_at": ts(decided)}])
    world.write(
        "preview_consumptions",
        [
            {
                "consumption_id": "c1",
                "preview_id": "p1",
                "execution_id": "e1",
                "consumed_at": ts("2012-06-01 14:30"),
            }
        ],
    )
    world.write(
        "trade_executions",
        [
            {
                "execution_id": "e1",
                "decision_id": "d1",
                "preview_id": "p1",
                "symbol": "GOOG",
                "direction": direction,
                "account_id": "a1",
                "market": "spot",
                "source": "manual_agent",
                "source_verified": True,
                "automation_flag": False,
                "executed_at": ts("2012-06-01 14:30"),
            }
        ],
    )
    world.write(
        "trade_fills",
        [
            {
                "fill_id": "f1",
                "execution_id": "e1",
                "qty": 10.0,
                "price": 570.0,
                "fee": 1.0,
                "filled_at": ts("2012-06-01 14:30"),
            },
            {
                "fill_id": "f2",
                "execution_id": "e1",
                "qty": 30.0,
                "price": 572.0,
                "fee": 1.0,
                "filled_at": ts("2012-06-01 14:31"),
            },
        ],
    )
    world.write("evaluation_promotions", [])


def components(world: World, run_id: str) -> dict[str, tuple[float | None, str]]:
    return {
        c: (v, f)
        for c, v, f in world.rows(
            "SELECT component, value, quality_flag FROM evaluation_components WHERE run_id = ?", [run_id]
        )
    }


def test_evaluation_math_matches_hand_computation_on_real_goog(world: World):
    trade_world(world)
    world.materialize(LANDING + EVAL)
    goog = goog_bars()
    entry = (10 * 570.0 + 30 * 572.0) / 40
    # window [2012-06-01 14:30, 2012-06-08 14:30]: last close inside is 2012-06-07's
    window = goog.filter((pl.col("ts") >= ts("2012-06-01 14:30")) & (pl.col("ts") <= ts("2012-06-08 14:30")))
    exit_close = window.get_column("close")[-1]
    assert window.get_column("ts")[-1] == ts("2012-06-07 21:00")
    raw = exit_close / entry - 1
    before = goog.filter(pl.col("ts") < ts("2012-06-01 14:00")).tail(30).get_column("close").to_list()
    rets = [math.log(b / a) for a, b in zip(before, before[1:], strict=False)]
    mean = sum(rets) / len(rets)
    vol = math.sqrt(sum((r - mean) ** 2 for r in rets) / (len(rets) - 1))

    run = run_id_for("d1", "abs_7d", 1)
    got = components(world, run)
    assert got["entry_price"][0] == pytest.approx(entry)
    assert got["exit_price"][0] == pytest.approx(exit_close)
    assert got["raw_return"][0] == pytest.approx(raw)
    assert got["benchmark_return"] == (0.0, "absolute")
    assert got["excess_return"][0] == pytest.approx(raw)
    assert got["volatility"][0] == pytest.approx(vol)
    # the 7 days after Friday 2012-06-01 hold 5 weekdays, and 5 closes are inside the window
    assert got["coverage"] == (1.0, "ok")
    assert got["missing_bars"] == (0.0, "ok")

    rel = components(world, run_id_for("d1", "rel_mktidx_7d", 1))
    bench = bench_bars()
    b_in = [b for b in bench if b["ts"] <= ts("2012-06-01 14:30")][-1]["close"]
    b_out = [b for b in bench if b["ts"] <= ts("2012-06-08 14:30")][-1]["close"]
    assert rel["benchmark_return"][0] == pytest.approx(b_out / b_in - 1)
    assert rel["excess_return"][0] == pytest.approx(raw - (b_out / b_in - 1))

    runs = world.query("SELECT * FROM evaluation_runs ORDER BY profile_id, run_version")
    # per profile: version 0 (the open window, pending) and version 1 (the settled window)
    assert runs.select("run_version", "status").unique().sort("run_version").rows() == [
        (0, "pending"),
        (1, "complete"),
    ]
    assert runs.height == 6
    # the valuation role's primary profile is abs_7d: version 1 of it is primary, nothing else
    primary = runs.filter(pl.col("is_primary"))
    assert primary.select("profile_id", "run_version").rows() == [("abs_7d", 1)]


def test_short_trades_flip_the_sign_of_returns(world: World):
    trade_world(world, direction="short")
    world.materialize(LANDING + EVAL)
    got = components(world, run_id_for("d1", "abs_7d", 1))
    goog = goog_bars()
    exit_close = goog.filter(pl.col("ts") <= ts("2012-06-08 14:30")).get_column("close")[-1]
    entry = (10 * 570.0 + 30 * 572.0) / 40
    assert got["raw_return"][0] == pytest.approx(-(exit_close / entry - 1))


def test_volatility_never_reads_bars_at_or_after_the_decision(world: World):
    trade_world(world)
    world.materialize(LANDING + EVAL)
    before = components(world, run_id_for("d1", "abs_7d", 1))["volatility"][0]
    # a wild price on the decision day itself (after decided_at) must not move the volatility
    bars = goog_bars().with_columns(
        pl.when(pl.col("ts") == ts("2012-06-01 21:00"))
        .then(pl.col("close") * 3)
        .otherwise(pl.col("close"))
        .alias("close")
    )
    world.write("price_bars", bars.to_dicts() + bench_bars())
    world.materialize(LANDING + EVAL)
    v2 = world.rows("SELECT run_id FROM evaluation_runs WHERE profile_id='abs_7d' AND run_version=2")
    assert v2, "the corrected bar is inside the window, so a new version is appended"
    assert components(world, v2[0][0])["volatility"][0] == pytest.approx(before)


def test_price_correction_appends_a_version_and_unchanged_inputs_append_nothing(world: World):
    trade_world(world)
    world.materialize(LANDING + EVAL)
    first = world.query("SELECT * FROM evaluation_runs ORDER BY run_id")
    first_components = world.query("SELECT * FROM evaluation_components ORDER BY run_id, component")

    world.materialize(LANDING + EVAL)  # same inputs, same as_of
    assert world.query("SELECT * FROM evaluation_runs ORDER BY run_id").equals(first)
    assert world.query("SELECT * FROM evaluation_components ORDER BY run_id, component").equals(
        first_components
    )

    # correct the 2012-06-07 close: every run whose window reads it gets version 2
    bars = goog_bars().with_columns(
        pl.when(pl.col("ts") == ts("2012-06-07 21:00"))
        .then(pl.col("close") + 1)
        .otherwise(pl.col("close"))
        .alias("close")
    )
    world.write("price_bars", bars.to_dicts() + bench_bars())
    world.materialize(LANDING + EVAL)
    runs = world.query("SELECT * FROM evaluation_runs ORDER BY profile_id, run_version")
    assert runs.filter(pl.col("run_version") == 2).get_column("profile_id").sort().to_list() == [
        "abs_30d",
        "abs_7d",
        "rel_mktidx_7d",
    ]
    # version 1 rows are untouched (append-only) and stay primary: a correction needs a promotion
    settled = runs.filter(pl.col("run_version") <= 1).sort("run_id")
    assert settled.drop("is_primary", "promoted_at").equals(
        first.sort("run_id").drop("is_primary", "promoted_at")
    )
    # the corrected window ended long before this run's as_of: it is knowable only now
    corrected = runs.filter(pl.col("run_version") == 2)
    assert set(corrected.get_column("known_at")) == {ts("2024-07-01")}
    assert runs.filter(pl.col("is_primary")).select("profile_id", "run_version").rows() == [("abs_7d", 1)]
    new_exit = components(world, run_id_for("d1", "abs_7d", 2))["exit_price"][0]
    old_exit = components(world, run_id_for("d1", "abs_7d", 1))["exit_price"][0]
    assert new_exit == pytest.approx(old_exit + 1)


def test_explicit_promotion_moves_primary_and_only_one_run_is_primary(world: World):
    trade_world(world)
    world.write(
        "evaluation_promotions",
        [
            {
                "decision_id": "d1",
                "profile_id": "rel_mktidx_7d",
                "run_version": 1,
                "promoted_at": ts("2013-01-01"),
                "promoted_by": "risk_ops",
            }
        ],
    )
    world.materialize(LANDING + EVAL)
    primary = world.rows("SELECT profile_id, run_version, promoted_at FROM evaluation_runs WHERE is_primary")
    assert primary == [("rel_mktidx_7d", 1, ts("2013-01-01"))]


def test_promotion_after_as_of_is_not_yet_visible(world: World):
    trade_world(world)
    world.write(
        "evaluation_promotions",
        [
            {
                "decision_id": "d1",
                "profile_id": "abs_30d",
                "run_version": 1,
                "promoted_at": ts("2030-01-01"),
                "promoted_by": "risk_ops",
            }
        ],
    )
    world.materialize(LANDING + EVAL)
    assert world.rows("SELECT profile_id FROM evaluation_runs WHERE is_primary") == [("abs_7d",)]


def test_open_window_is_pending_then_settles_as_a_new_primary_version(world: World):
    trade_world(world)
    world.materialize(LANDING + EVAL, as_of="2012-06-05T00:00:00Z")
    runs = world.query("SELECT profile_id, status, is_primary FROM evaluation_runs ORDER BY profile_id")
    assert set(runs.get_column("status")) == {"pending"}
    pending = components(world, run_id_for("d1", "abs_7d", 0))
    assert pending["raw_return"] == (None, "window_open")
    assert world.rows("SELECT count(*) FROM evaluation_runs WHERE known_at IS NOT NULL")[0][0] == 0

    world.materialize(LANDING + EVAL, as_of="2012-06-06T00:00:00Z")  # still open: nothing new
    assert world.rows("SELECT count(*) FROM evaluation_runs")[0][0] == 3

    world.materialize(LANDING + EVAL, as_of="2012-06-09T00:00:00Z")  # 7-day windows closed
    got = world.query(
        "SELECT profile_id, run_version, status, is_primary FROM evaluation_runs ORDER BY profile_id, run_version"
    )
    abs7 = got.filter(pl.col("profile_id") == "abs_7d")
    assert abs7.rows() == [("abs_7d", 0, "pending", False), ("abs_7d", 1, "complete", True)]
    # known at its window's end, not when the warehouse happened to run
    assert world.rows(
        "SELECT known_at FROM evaluation_runs WHERE profile_id = 'abs_7d' AND run_version = 1"
    ) == [(ts("2012-06-08 14:30"),)]
    assert got.filter(pl.col("profile_id") == "abs_30d").get_column("status").to_list() == ["pending"]


def landed(world: World, table: str) -> list[dict]:
    return pl.read_parquet(world.landing / f"{table}.parquet").to_dicts()


def test_a_fill_after_the_window_end_is_the_next_version_of_a_build_from_nothing(world: World):
    trade_world(world)
    late = {
        **landed(world, "trade_fills")[0],
        "fill_id": "f3",
        "price": 580.0,
        "filled_at": ts("2012-06-20 15:00"),
    }
    world.write("trade_fills", [*landed(world, "trade_fills"), late])
    world.materialize(LANDING + EVAL)  # one build, after everything: two settled states of the 7-day windows
    got = world.rows(
        "SELECT profile_id, run_version, known_at, entry_price FROM evaluation_runs "
        "WHERE run_version > 0 ORDER BY profile_id, run_version"
    )
    before, after = (10 * 570.0 + 30 * 572.0) / 40, (10 * 570.0 + 30 * 572.0 + 10 * 580.0) / 50
    assert [(p, v, k) for p, v, k, _ in got] == [
        ("abs_30d", 1, ts("2012-07-01 14:30")),  # the late fill is inside its window
        ("abs_7d", 1, ts("2012-06-08 14:30")),
        ("abs_7d", 2, ts("2012-06-20 15:00")),
        ("rel_mktidx_7d", 1, ts("2012-06-08 14:30")),
        ("rel_mktidx_7d", 2, ts("2012-06-20 15:00")),
    ]
    assert [e for *_, e in got] == [pytest.approx(x) for x in (after, before, after, before, after)]


def test_a_decision_landed_after_its_window_was_behind_the_last_run_is_known_only_now(world: World):
    trade_world(world)
    world.materialize(LANDING + EVAL, as_of="2020-01-01T00:00:00Z")
    # a decision of 2012 lands late (a backfilled file): its only state was settled long before
    # the last run, so a reader as of then could not have known it
    rename = {"d1": "d2", "p1": "p2", "c1": "c2", "e1": "e2", "f1": "f4", "f2": "f5"}
    for table in (
        "trading_decisions",
        "trade_previews",
        "preview_consumptions",
        "trade_executions",
        "trade_fills",
    ):
        rows = landed(world, table)
        twins = [{k: rename.get(v, v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
        world.write(table, rows + twins)
    world.materialize(LANDING + EVAL)
    got = world.rows(
        "SELECT decision_id, known_at FROM evaluation_runs WHERE profile_id = 'abs_7d' AND run_version = 1 "
        "ORDER BY decision_id"
    )
    assert got == [("d1", ts("2012-06-08 14:30")), ("d2", datetime.fromisoformat(AS_OF))]


def test_the_stored_check_of_a_run_that_wrote_the_runs_reads_their_digest_not_the_table(
    world: World, monkeypatch
):
    """Materialized from the UI, the evaluation and its stored check run together: the check reads
    the digest the write left (at SF 10 each hash of the runs is 0.6 s), and says so. The write
    hashes the runs once, and that digest is the stored table's."""
    from tradingmem_assets.lib import validation, warehouse

    hashed: Counter[str] = Counter()
    original = warehouse.rows_digest

    def counting(con, relation, params=None):
        hashed[relation] += 1
        return original(con, relation, params)

    for module in (warehouse, validation):
        monkeypatch.setattr(module, "rows_digest", counting)
    trade_world(world)
    result = world.materialize(LANDING + EVAL)
    stored = [
        e
        for e in result.get_asset_check_evaluations()
        if e.asset_key.to_user_string() == "evaluation_runs" and "stored" in e.check_name
    ]
    assert [e.passed for e in stored] == [True] and "validated_at_write_by_run" in stored[0].metadata
    assert hashed["main.evaluation_runs"] == 1
    # hashed afresh, the table is what the run recorded as validated: the digest was of these rows
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        assert validation.validated_by(con, "main.evaluation_runs") == result.run_id
    finally:
        con.close()


def test_low_coverage_is_insufficient_data(world: World):
    trade_world(world)
    bars = goog_bars().filter(~pl.col("ts").is_between(ts("2012-06-04 00:00"), ts("2012-06-06 23:00")))
    world.write("price_bars", bars.to_dicts() + bench_bars())
    world.materialize(LANDING + EVAL)
    run = run_id_for("d1", "abs_7d", 1)
    assert world.rows("SELECT status FROM evaluation_runs WHERE run_id = ?", [run]) == [
        ("insufficient_data",)
    ]
    got = components(world, run)
    assert got["coverage"] == (pytest.approx(2 / 5), "below_min_coverage")
    assert got["missing_bars"] == (3.0, "missing")


def test_missing_primary_profile_fails_the_evaluation_with_a_clear_message(world: World):
    trade_world(world)
    world.write("benchmark_profiles", PROFILES[:1])
    world.materialize(LANDING)
    result = world.materialize(EVAL, raise_on_error=False)
    assert not result.success
    failure = [e for e in result.all_events if e.is_step_failure][0]
    message = str(failure.step_failure_data.error.message) + str(failure.step_failure_data.user_failure_data)
    assert "earnings_momentum" in message and "rel_mktidx_7d" in message


def test_the_entry_price_sums_the_fills_in_their_order_whatever_the_threads_do(world: World):
    # 300,000 fills of one execution span several row groups, which DuckDB's threads sum apart and
    # add up in whichever order they finish: a plain sum() stored a price a last bit off from the
    # fills' own order, and not always the same one
    trade_world(world)
    rng = random.Random(16)
    count = 300_000
    start = ts("2012-06-01 14:30")
    fills = [
        {
            "fill_id": f"f{i:06d}",
            "execution_id": "e1",
            "qty": rng.randint(1, 40_000) / 1000,
            "price": 560 + rng.random() * 20,
            "fee": 0.0,
            # the time order is not the ids' order, and the file's order is neither
            "filled_at": start + timedelta(microseconds=(i * 7919) % count),
        }
        for i in range(count)
    ]
    rng.shuffle(fills)
    world.write("trade_fills", fills)
    world.materialize(LANDING + EVAL)
    notional = quantity = 0.0
    for fill in sorted(fills, key=lambda f: (f["filled_at"], f["fill_id"])):
        notional += fill["qty"] * fill["price"]
        quantity += fill["qty"]
    stored = world.rows(
        "SELECT DISTINCT entry_price FROM evaluation_runs WHERE status <> 'pending' AND decision_id = 'd1'"
    )
    assert stored == [(notional / quantity,)]


@pytest.mark.parametrize("prices", [(0.1, 0.2, 0.3), (0.1, 0.2, 0.3, 0.4), (0.3, 0.1), (0.7,)])
def test_the_entry_price_of_a_few_fills_is_their_sum_in_order(world: World, prices: tuple[float, ...]):
    # in time order 0.1 + 0.2 + 0.3 is 0.6000000000000001, in the file's order (reversed) 0.6: from
    # three fills on, only the fills' order gives their price (one or two add up alike in any order)
    trade_world(world)
    start = ts("2012-06-01 14:30")
    fills = [
        {
            "fill_id": f"f{i}",
            "execution_id": "e1",
            "qty": 1.0,
            "price": p,
            "fee": 0.0,
            "filled_at": start + timedelta(seconds=i),
        }
        for i, p in enumerate(prices)
    ]
    world.write("trade_fills", list(reversed(fills)))
    world.materialize(LANDING + EVAL)
    notional = 0.0
    for fill in fills:
        notional += fill["qty"] * fill["price"]
    if len(prices) == 3:
        assert notional != sum(reversed(prices))  # the order shows in the price
    stored = world.rows(
        "SELECT DISTINCT entry_price FROM evaluation_runs WHERE status <> 'pending' AND decision_id = 'd1'"
    )
    assert stored == [(notional / len(prices),)]


def test_the_runs_digests_and_ids_are_stored_uncompressed_through_a_full_and_an_incremental_run(world: World):
    trade_world(world)
    world.materialize(LANDING + EVAL, as_of="2012-06-05T00:00:00+00:00")  # the windows are open
    # a later as_of settles them: incremental, the settled runs are appended to the stored table
    world.materialize(LANDING + EVAL)
    assert world.rows("SELECT count(*) FROM evaluation_runs WHERE status <> 'pending'") == [(3,)]
    (declared,) = world.rows("SELECT sql FROM duckdb_tables() WHERE table_name = 'evaluation_runs'")[0]
    assert "run_id VARCHAR USING COMPRESSION Uncompressed" in declared
    assert "inputs_hash VARCHAR USING COMPRESSION Uncompressed" in declared
    assert "decision_id VARCHAR USING COMPRESSION Uncompressed" in declared
    assert "profile_id VARCHAR," in declared  # the others are left to DuckDB
    compressions = world.rows(
        "SELECT DISTINCT compression FROM pragma_storage_info('evaluation_runs') "
        "WHERE column_name = 'inputs_hash' AND segment_type = 'VARCHAR'"
    )
    assert compressions == [("Uncompressed",)]


def test_same_inputs_and_as_of_give_identical_rows_in_a_fresh_warehouse(world: World, tmp_path, instance):
    trade_world(world)
    world.materialize(LANDING + EVAL)
    other = World(tmp_path / "other", instance)
    other.landing = world.landing
    other.materialize(LANDING + EVAL)
    for table in ("evaluation_runs", "evaluation_components"):
        a = world.query(f"SELECT * FROM {table} ORDER BY ALL")
        b = other.query(f"SELECT * FROM {table} ORDER BY ALL")
        assert a.height > 0 and a.equals(b)


# The settled states' digests of ``trade_world`` (fills, window bars, volatility bars and benchmark
# prices, spelled as scoring's inputs hash spells them), pinned: a stored hash is compared with the
# next run's, so a new spelling of the same inputs would append a new version of every decision.
SETTLED_HASHES = {
    "abs_7d": "016e60202f9fc966127062c8e5df1a86b7acaebcb167e175b1ab669557d4570e",
    "rel_mktidx_7d": "a0b48459598d2de5ca173b3e0797c1b5d76661c7abb3e550cb7e2f4c573d4bdd",
}


def test_inputs_hash_is_stable_across_rewrites_of_the_pipeline(world: World):
    trade_world(world)
    world.materialize(LANDING + EVAL)
    stored = dict(world.rows("SELECT profile_id || ':' || run_version, inputs_hash FROM evaluation_runs"))
    executed_us = str(int(ts("2012-06-01 14:30").timestamp() * 1_000_000))
    # the open window's digest covers the profile and the execution, nothing measured
    for profile, benchmark in (("abs_7d", "-"), ("rel_mktidx_7d", "MKTIDX")):
        spelled = "|".join(["pending", profile, "7", benchmark, "0.8", "e1", "GOOG", "long", executed_us])
        assert stored[f"{profile}:0"] == hashlib.sha256(spelled.encode()).hexdigest()
        assert stored[f"{profile}:1"] == SETTLED_HASHES[profile]


def test_runs_breaking_an_invariant_are_validated_as_written_and_rolled_back(world: World, monkeypatch):
    """The runs are validated in the write's transaction: a failure reports the check failed and
    leaves all three evaluation tables as the previous run wrote them."""
    trade_world(world)
    world.materialize(LANDING + EVAL, as_of="2012-06-05T00:00:00Z")  # every window still open
    before = {t: world.query(f"SELECT * FROM {t} ORDER BY ALL") for t in EVAL}
    # a stricter red line that the settled runs of a later as_of break
    strict = invariants.EVALUATION_RUNS_INVARIANTS.update_column(
        "status", checks=[pa.Check.isin(["pending"])]
    )
    monkeypatch.setattr(invariants, "EVALUATION_RUNS_INVARIANTS", strict)
    result = world.materialize(LANDING + EVAL, as_of="2012-06-09T00:00:00Z", raise_on_error=False)
    assert not result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["evaluation_runs_invariants"] is False
    for table, rows in before.items():
        assert rows.height > 0 and world.query(f"SELECT * FROM {table} ORDER BY ALL").equals(rows), table


def test_the_components_are_a_view_of_the_runs_replacing_a_table_an_earlier_version_stored(world: World):
    trade_world(world)
    world.materialize(LANDING + EVAL)
    components = world.query("SELECT * FROM evaluation_components ORDER BY run_id, component")
    assert components.height == 8 * world.rows("SELECT count(*) FROM evaluation_runs")[0][0]
    # an earlier version's warehouse: the same rows in a table of that name
    con = duckdb.connect(str(world.db))
    try:
        con.execute("CREATE TABLE _held AS SELECT * FROM main.evaluation_components")
        con.execute("DROP VIEW main.evaluation_components")
        con.execute("CREATE TABLE main.evaluation_components AS SELECT * FROM _held")
        con.execute("DROP TABLE _held")
    finally:
        con.close()
    world.materialize(LANDING + EVAL)
    kinds = world.rows(
        "SELECT table_type FROM information_schema.tables WHERE table_name = 'evaluation_components'"
    )
    assert kinds == [("VIEW",)]
    assert world.query("SELECT * FROM evaluation_components ORDER BY run_id, component").equals(components)
