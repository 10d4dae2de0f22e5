"""The benchmark runs end to end at a tiny scale and reports every figure SPEC section 14 asks for."""

import json
import subprocess
import sys
from datetime import UTC, datetime

import polars as pl
from click.testing import CliRunner

from tests.incremental import expected_reads
from tradingmem_assets.benchmark import format_report, fresh_run_dir, peak_rss_mb
from tradingmem_assets.benchmark.days import landing_until, last_weekday
from tradingmem_assets.benchmark.docs import BEGIN, seconds, spelled
from tradingmem_assets.cli import main


def test_a_tiny_benchmark_reports_times_memory_recall_audit_and_the_bare_sql_ratio(tmp_path):
    page = tmp_path / "docs" / "performance.md"
    page.parent.mkdir()
    page.write_text("# Performance\n\nWritten by people.\n")
    args = ["benchmark", "--scale", "0.003", "--repeat", "1", "--workdir", str(tmp_path), "--json"]
    result = CliRunner().invoke(main, [*args, "--write-docs", str(page)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    median = report["median"]
    assert report["decisions"] > 0 and median["end_to_end_s"] > 0 and median["peak_rss_mb"] > 0
    assert report["runs"][0]["peak_rss_all_mb"] >= report["runs"][0]["peak_rss_mb"]
    assert {"evaluation", "role_cases", "raw__trading_decisions"} <= set(median["step_s"])
    run = report["runs"][0]
    assert run["success"], run["error"]
    for probe in ("recall", "audit", "bare_sql", "cold_recall"):
        assert "error" not in run[probe], run[probe]
    assert run["recall"]["hits"] > 0 and run["recall"]["p95_ms"] > 0
    assert 0 < run["cold_recall"]["median_s"] <= run["cold_recall"]["max_s"]
    assert datetime.fromisoformat(run["started_at"]).utcoffset() is not None and "commit" in report
    # the report is kept beside the page, whose measured block it wrote; the people's text stays
    assert json.loads((page.parent / "benchmarks" / "scale-0.003.json").read_text()) == report
    written = page.read_text()
    assert written.startswith("# Performance\n\nWritten by people.\n") and BEGIN in written
    assert f"| end-to-end, main job | {spelled(median['end_to_end_s'], seconds)} |" in written
    bare = run["bare_sql"]
    assert bare["reference_s"] > 0 and bare["core_s"] > 0
    assert bare["ratio"] == round(bare["core_s"] / bare["reference_s"], 2)
    assert "bare_sql: " in format_report(report) and "ratio=" in format_report(report)
    incremental = run["incremental"]
    assert "error" not in incremental, incremental
    assert 0 < incremental["replay_ratio"] < 1 and incremental["next_day_s"] > 0
    assert incremental["quiet_day_s"] > 0
    # the full build is at the end of a weekday, the next day one weekday later, on grown files
    day, next_day = (datetime.fromisoformat(report[k]) for k in ("as_of", "next_day_as_of"))
    assert day.weekday() < 5 and (next_day - day).days == 1
    grown = pl.read_parquet(tmp_path / "landing_next_day" / "customer_transactions.parquet")
    kept = pl.read_parquet(tmp_path / "landing" / "customer_transactions.parquet")
    assert grown.height - kept.height == report["next_day_landed_rows"].get("customer_transactions", 0)
    assert kept.get_column("ts").max() <= day < grown.get_column("ts").max() <= next_day
    # the next day grew the repetition's own folder in place: only the grown files were ingested
    assert pl.read_parquet(tmp_path / "run0" / "landing" / "customer_transactions.parquet").equals(grown)
    assert incremental["replay_ingested"] == {} and incremental["quiet_day_ingested"] == {}
    assert set(incremental["next_day_ingested"]) == set(report["next_day_landed_rows"])
    # the files grew at their end, as a feed appends: only their new rows were read (a file whose
    # earlier rows changed, whole)
    ingested = incremental["next_day_ingested"]
    assert ingested == expected_reads(tmp_path / "landing", tmp_path / "landing_next_day")
    assert ingested["customer_transactions"] == "appended"


def test_each_repetition_starts_on_an_empty_folder_even_in_a_reused_workdir(tmp_path):
    stale = tmp_path / "run0"
    stale.mkdir()
    (stale / "tradingmem.duckdb").write_bytes(b"a warehouse of an earlier benchmark")
    (stale / "tradingmem.duckdb.wal").write_bytes(b"")
    assert fresh_run_dir(tmp_path, 0) == stale and list(stale.iterdir()) == []
    assert fresh_run_dir(tmp_path, 1).is_dir()


def test_the_next_day_is_a_weekday_before_the_anchor():
    # Monday midnight: the last whole weekday is Friday
    assert last_weekday(datetime(2024, 7, 1, tzinfo=UTC)) == (
        datetime(2024, 6, 28, tzinfo=UTC),
        datetime(2024, 6, 29, tzinfo=UTC),
    )
    assert last_weekday(datetime(2024, 7, 3, 15, 30, tzinfo=UTC)) == (
        datetime(2024, 7, 2, tzinfo=UTC),
        datetime(2024, 7, 3, tzinfo=UTC),
    )


def test_the_landing_folder_as_it_stood_keeps_the_rows_stamped_by_then(tmp_path):
    source = tmp_path / "world"
    source.mkdir()
    stamps = [datetime(2024, 6, d, 12, tzinfo=UTC) for d in (27, 26, 28, 26)] + [None]
    pl.DataFrame({"fill_id": ["f1", "f2", "f3", "f5", "f4"], "filled_at": stamps}).write_parquet(
        source / "trade_fills.parquet"
    )
    pl.DataFrame({"profile_id": ["p"], "created_at": [stamps[2]]}).write_parquet(source / "no_stamp.parquet")
    (source / "customers.csv").write_text("customer_id,opened_at\nc1,2024-06-28T12:00:00Z\n")
    kept = landing_until(source, tmp_path / "then", datetime(2024, 6, 27, 12, tzinfo=UTC))
    then = pl.read_parquet(tmp_path / "then" / "trade_fills.parquet")
    # at the instant is in; a row without its instant is kept (the landing rejects it either way);
    # in the order the rows arrived, those without an instant first, ties in the world's order
    assert then.get_column("fill_id").to_list() == ["f4", "f2", "f5", "f1"] and kept == {"trade_fills": 4}
    # a day later the file is the same rows, then the day's: a feed's file, grown at its end
    landing_until(source, tmp_path / "later", datetime(2024, 6, 28, 12, tzinfo=UTC))
    later = pl.read_parquet(tmp_path / "later" / "trade_fills.parquet")
    assert later.head(then.height).equals(then) and later.get_column("fill_id")[-1] == "f3"
    assert pl.read_parquet(tmp_path / "then" / "no_stamp.parquet").height == 1  # no arrival column
    assert (tmp_path / "then" / "customers.csv").read_text() == (source / "customers.csv").read_text()


def test_a_repetitions_peak_is_its_own_not_its_parents():
    """ru_maxrss survives fork and exec: a child started by a parent holding 600 MB would report
    them. The peak the benchmark reports is the child's own address space's."""
    held = bytearray(600 * 1024 * 1024)  # touched: resident in this process
    held[::4096] = b"x" * len(held[::4096])
    assert peak_rss_mb() > 600
    child = subprocess.run(
        [sys.executable, "-c", "from tradingmem_assets.benchmark import peak_rss_mb; print(peak_rss_mb())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert float(child.stdout) < 300, child.stdout
