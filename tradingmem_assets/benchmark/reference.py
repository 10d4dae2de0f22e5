"""The bare DuckDB SQL reference of the admission + evaluation core (SPEC section 14).

What the project's landing + evaluation + role_cases steps do, written the shortest way one would
in plain SQL on the same landing files: load the eight trading tables, score every executed
decision under every benchmark profile (entry at the fills' weighted price, exit at the last close
of the horizon, benchmark over the same window, volatility of the 30 bars before the decision,
coverage), then admit each decision through its chain (role, preview, single consumption,
execution, source, settled positions, a complete primary evaluation). No versions, no history, no
validation of rows, no checks, no provenance, no point-in-time stamps: the floor the project's
core is measured against, not a second implementation of it.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import duckdb

from tradingmem_assets.lib.tables import EXECUTION_CHAIN
from tradingmem_assets.lib.vocabulary import AUTOMATED_SOURCES, MANUAL_SOURCES
from tradingmem_assets.lib.warehouse import run_script

TRADING_TABLES = (*EXECUTION_CHAIN, "trade_fills", "position_lifecycles", "price_bars", "benchmark_profiles")


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


EVALUATION_SQL = """
CREATE TABLE bars AS
SELECT symbol, ts, close, row_number() OVER w AS seq,
       stddev_samp(lr) OVER (PARTITION BY symbol ORDER BY ts ROWS BETWEEN 28 PRECEDING AND CURRENT ROW) AS vol30
FROM (SELECT symbol, ts, close, ln(close / lag(close) OVER (PARTITION BY symbol ORDER BY ts)) AS lr
      FROM price_bars WHERE ts <= $as_of)
WINDOW w AS (PARTITION BY symbol ORDER BY ts);

CREATE TABLE calendars AS
SELECT symbol, bool_or(dayofweek(ts) IN (0, 6)) AS weekend FROM price_bars GROUP BY symbol;

CREATE TABLE weekdays AS  -- weekdays among the r days after a day of week s (0 = Sunday)
SELECT s, r, (SELECT count(*) FROM range(1, r + 1) k(k) WHERE (s + k) % 7 NOT IN (0, 6)) AS n
FROM range(7) a(s), range(7) b(r);

CREATE TABLE chosen AS
SELECT d.decision_id, d.decided_at, e.execution_id, e.symbol, e.direction, e.executed_at
FROM trading_decisions d JOIN trade_executions e USING (decision_id)
WHERE e.executed_at <= $as_of AND d.decided_at <= $as_of
QUALIFY row_number() OVER (PARTITION BY d.decision_id ORDER BY e.executed_at, e.execution_id) = 1;

CREATE TABLE evaluation AS
WITH fills AS (
    SELECT execution_id, sum(qty * price) / sum(qty) AS entry FROM trade_fills WHERE filled_at <= $as_of
    GROUP BY execution_id
),
grid AS (
    SELECT c.*, p.profile_id, p.horizon_days, p.benchmark_symbol, p.min_coverage,
           c.executed_at + to_days(p.horizon_days::INTEGER) AS win_end
    FROM chosen c CROSS JOIN benchmark_profiles p
),
ex AS (SELECT g.decision_id, g.profile_id, b.ts AS exit_ts, b.close AS exit_close, b.seq AS exit_seq
       FROM grid g ASOF LEFT JOIN bars b ON b.symbol = g.symbol AND b.ts <= g.win_end),
before AS (SELECT c.decision_id, b.seq AS before_seq FROM chosen c
           ASOF LEFT JOIN bars b ON b.symbol = c.symbol AND b.ts < c.executed_at),
vol AS (SELECT c.decision_id, b.vol30 FROM chosen c ASOF LEFT JOIN bars b ON b.symbol = c.symbol AND b.ts < c.decided_at),
bin AS (SELECT g.decision_id, g.profile_id, b.close AS bench_in FROM grid g
        ASOF LEFT JOIN bars b ON b.symbol = g.benchmark_symbol AND b.ts <= g.executed_at),
bout AS (SELECT g.decision_id, g.profile_id, b.close AS bench_out FROM grid g
         ASOF LEFT JOIN bars b ON b.symbol = g.benchmark_symbol AND b.ts <= g.win_end),
scored AS (
    SELECT g.decision_id, g.profile_id, g.win_end <= $as_of AS settled, g.min_coverage,
           (ex.exit_close / f.entry - 1) * CASE WHEN g.direction = 'short' THEN -1 ELSE 1 END AS raw_return,
           CASE WHEN g.benchmark_symbol IS NULL THEN 0.0
                ELSE (bout.bench_out / bin.bench_in - 1) * CASE WHEN g.direction = 'short' THEN -1 ELSE 1 END
           END AS benchmark_return,
           vol.vol30 AS volatility,
           least((ex.exit_seq - coalesce(before.before_seq, 0))
                 / greatest(CASE WHEN cal.weekend THEN g.horizon_days
                                 ELSE 5 * (g.horizon_days // 7) + wr.n END, 1), 1.0) AS coverage,
           g.horizon_days
    FROM grid g
    LEFT JOIN fills f USING (execution_id)
    JOIN ex USING (decision_id, profile_id) JOIN before USING (decision_id) JOIN vol USING (decision_id)
    LEFT JOIN bin USING (decision_id, profile_id) LEFT JOIN bout USING (decision_id, profile_id)
    JOIN calendars cal USING (symbol)
    JOIN weekdays wr ON wr.s = dayofweek(g.executed_at) AND wr.r = g.horizon_days % 7
)
SELECT *, raw_return - benchmark_return AS excess_return,
       CASE WHEN NOT settled THEN 'pending'
            WHEN raw_return IS NULL OR benchmark_return IS NULL OR coverage < min_coverage THEN 'insufficient_data'
            ELSE 'complete' END AS status
FROM scored;
"""

REFERENCE_ADMISSION_SQL = f"""
CREATE TABLE role_cases AS
WITH consumed AS (
    SELECT preview_id, count(*) AS n, min(execution_id) AS execution_id FROM preview_consumptions
    WHERE consumed_at <= $as_of GROUP BY preview_id
),
settled AS (
    SELECT execution_id, bool_and(status IN ('closed', 'liquidated') AND closed_at <= $as_of) AS settled
    FROM position_lifecycles WHERE opened_at <= $as_of GROUP BY execution_id
),
chain AS (
    SELECT d.decision_id, d.role_id, r.role_id IS NOT NULL AS known_role, r.skill_id = d.skill_id AS skill_ok,
           p.preview_id IS NOT NULL AS previewed, c.n AS consumptions, e.execution_id IS NOT NULL AS executed,
           e.automation_flag OR e.source IN ({_quoted(AUTOMATED_SOURCES)}) AS automated,
           e.source IN ({_quoted(MANUAL_SOURCES)}) AS manual, coalesce(s.settled, false) AS settled,
           ev.status AS evaluation
    FROM trading_decisions d
    LEFT JOIN roles r ON r.role_id = d.role_id
    LEFT JOIN trade_previews p ON p.preview_id = d.preview_id AND p.decision_id = d.decision_id
    LEFT JOIN consumed c ON c.preview_id = p.preview_id
    LEFT JOIN trade_executions e ON e.execution_id = c.execution_id AND e.executed_at <= $as_of
    LEFT JOIN settled s ON s.execution_id = e.execution_id
    LEFT JOIN evaluation ev ON ev.decision_id = d.decision_id AND ev.profile_id = r.primary_profile
    WHERE d.role_id IS NOT NULL AND d.decided_at <= $as_of
)
SELECT decision_id, role_id,
       CASE WHEN NOT known_role OR NOT skill_ok OR NOT previewed OR consumptions IS DISTINCT FROM 1
                 OR NOT executed OR automated OR NOT manual THEN 'ineligible'
            WHEN NOT settled OR evaluation IS DISTINCT FROM 'complete' THEN 'pending'
            ELSE 'eligible' END AS status
FROM chain;
"""


def _load_sql(landing_dir: Path, table: str) -> str:
    parquet, csv = landing_dir / f"{table}.parquet", landing_dir / f"{table}.csv"
    source = f"read_parquet('{parquet}')" if parquet.exists() else f"read_csv('{csv}')"
    return f"CREATE TABLE {table} AS SELECT * FROM {source}"


def run_reference(
    landing_dir: Path, database: Path, as_of: datetime, roles: list[dict], memory_limit: str
) -> dict:
    """Time the bare core on a fresh database file (replaced if present): load, evaluation, admission."""
    timings: dict[str, float] = {}
    for leftover in (database, database.with_name(database.name + ".wal")):
        leftover.unlink(missing_ok=True)  # a scratch file: every timing starts from nothing
    # the project's own memory cap (resources.DUCKDB_MEMORY_LIMIT), so both work under the same limit
    with duckdb.connect(str(database), config={"memory_limit": memory_limit}) as con:
        started = time.perf_counter()
        for table in TRADING_TABLES:
            con.execute(_load_sql(landing_dir, table))
        con.execute("CREATE TABLE roles (role_id VARCHAR, skill_id VARCHAR, primary_profile VARCHAR)")
        con.executemany(
            "INSERT INTO roles VALUES (?, ?, ?)",
            [(r["role_id"], r["skill_id"], r["primary_profile"]) for r in roles],
        )
        timings["load_s"] = time.perf_counter() - started
        started = time.perf_counter()
        run_script(con, EVALUATION_SQL, {"as_of": as_of})
        timings["evaluation_s"] = time.perf_counter() - started
        started = time.perf_counter()
        con.execute(REFERENCE_ADMISSION_SQL, {"as_of": as_of})
        timings["admission_s"] = time.perf_counter() - started
        counts = dict(con.execute("SELECT status, count(*) FROM role_cases GROUP BY 1").fetchall())
    timings["total_s"] = sum(timings.values())
    return {**{k: round(v, 3) for k, v in timings.items()}, "cases": counts}
