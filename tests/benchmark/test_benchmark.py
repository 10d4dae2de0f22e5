"""The benchmark runs end to end at a tiny scale and reports every figure SPEC section 14 asks for."""

from tradingmem_assets.benchmark import benchmark, format_report, fresh_run_dir


def test_a_tiny_benchmark_reports_times_memory_recall_audit_and_the_bare_sql_ratio(tmp_path):
    report = benchmark(0.003, 1, tmp_path)
    median = report["median"]
    assert report["decisions"] > 0 and median["end_to_end_s"] > 0 and median["peak_rss_mb"] > 0
    assert report["runs"][0]["peak_rss_all_mb"] >= report["runs"][0]["peak_rss_mb"]
    assert {"evaluation", "role_cases", "raw__trading_decisions"} <= set(median["step_s"])
    run = report["runs"][0]
    assert run["success"], run["error"]
    for probe in ("recall", "audit", "bare_sql"):
        assert "error" not in run[probe], run[probe]
    assert run["recall"]["hits"] > 0 and run["recall"]["p95_ms"] > 0
    bare = run["bare_sql"]
    assert bare["reference_s"] > 0 and bare["core_s"] > 0
    assert bare["ratio"] == round(bare["core_s"] / bare["reference_s"], 2)
    assert "bare_sql: " in format_report(report) and "ratio=" in format_report(report)
    incremental = run["incremental"]
    assert "error" not in incremental, incremental
    assert 0 < incremental["replay_ratio"] < 1 and incremental["next_day_s"] > 0


def test_each_repetition_starts_on_an_empty_folder_even_in_a_reused_workdir(tmp_path):
    stale = tmp_path / "run0"
    stale.mkdir()
    (stale / "tradingmem.duckdb").write_bytes(b"a warehouse of an earlier benchmark")
    (stale / "tradingmem.duckdb.wal").write_bytes(b"")
    assert fresh_run_dir(tmp_path, 0) == stale and list(stale.iterdir()) == []
    assert fresh_run_dir(tmp_path, 1).is_dir()
