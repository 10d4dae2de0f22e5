"""Evaluation runs (SPEC section 4): versioned, append-only scoring of every executed decision.

The whole computation is set-based DuckDB SQL that stays inside the database (it spills to disk
under the connection's memory limit): ASOF joins of narrow (key, symbol, instant) tables against a
per-symbol bar sequence, so the work grows linearly with decisions × profiles; then the versions
to append and the primary run of each decision, also in SQL.

Definitions this module commits to (also in docs/evaluation.md):
- The evaluated execution of a decision is the one its preview's single consumption names (when
  that execution carries the decision's id), else its earliest execution carrying the decision id.
- A bar's ``ts`` is when its close is known; only bars at or before ``as_of`` exist.
- Entry = fill-quantity weighted price of the execution's fills; exit = the last close inside
  ``[executed_at, executed_at + horizon_days]``. The benchmark enters at its last close at or before
  ``executed_at`` and exits like the symbol. Both returns carry the trade's sign (+1 long, -1 short).
- Volatility = sample standard deviation of the daily log returns of the 30 bars strictly before
  ``decided_at`` (29 returns); fewer bars are flagged ``short_history``.
- Expected bars in a window = one per calendar day after the execution date (``horizon_days``),
  weekdays only for symbols that never have a weekend bar. Coverage = found / expected, at most 1.
- ``inputs_hash`` covers the profile, the execution, its fills and every bar the run read. While a
  window is open it covers only profile, execution and fills, so a pending run is not re-versioned
  every day; the window closing appends the settled version.
- Promotion policy: the lowest non-pending version of the role's primary profile is primary (version
  1 while every version is still pending). Later versions (corrections) become primary only through
  an ``evaluation_promotions`` row; the newest promotion at or before ``as_of`` wins.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import table_exists

COMPONENTS = (
    "entry_price",
    "exit_price",
    "raw_return",
    "benchmark_return",
    "excess_return",
    "volatility",
    "coverage",
    "missing_bars",
)

RUNS_SCHEMA = pl.Schema(
    {
        "run_id": pl.String(),
        "decision_id": pl.String(),
        "execution_id": pl.String(),
        "profile_id": pl.String(),
        "run_version": pl.Int64(),
        "inputs_hash": pl.String(),
        "status": pl.String(),
        "is_primary": pl.Boolean(),
        "promoted_at": pl.Datetime("us", "UTC"),
        "created_at": pl.Datetime("us", "UTC"),
    }
)
COMPONENTS_SCHEMA = pl.Schema(
    {
        "run_id": pl.String(),
        "component": pl.String(),
        "value": pl.Float64(),
        "quality_flag": pl.String(),
    }
)


class EvaluationConfigError(ValueError):
    """The registry and the benchmark profiles disagree; the message names the role and profile."""


def run_id_for(decision_id: str, profile_id: str, run_version: int) -> str:
    """Deterministic run id, so replays of the same inputs give the same ids."""
    digest = hashlib.sha256(f"{decision_id}|{profile_id}|{run_version}".encode()).hexdigest()
    return f"er_{digest[:16]}"


def check_primary_profiles(roles: pl.DataFrame, profile_ids: set[str]) -> None:
    """Every role's primary_profile must be a benchmark profile (SPEC section 3)."""
    missing = roles.filter(~pl.col("primary_profile").is_in(sorted(profile_ids)))
    if missing.height:
        pairs = ", ".join(
            f"role '{r}' -> '{p}'" for r, p in missing.select("role_id", "primary_profile").rows()
        )
        known = ", ".join(sorted(profile_ids)) or "(none)"
        raise EvaluationConfigError(
            f"primary_profile not found in benchmark_profiles: {pairs}; known profiles: {known}"
        )


# Weekdays among the r days following a day of week s (DuckDB dayofweek: 0 = Sunday).
_WEEKDAY_REMAINDER = [
    (s, r, sum(1 for k in range(1, r + 1) if (s + k) % 7 not in (0, 6))) for s in range(7) for r in range(7)
]

# The evaluation pipeline: each statement creates one temp table; every ASOF join runs over a
# narrow (key, symbol, instant) table and is joined back by key, so wide rows are never sorted.
_PIPELINE_SQL = (
    """
CREATE OR REPLACE TEMP TABLE _ev_bars AS
WITH bars AS (
    SELECT symbol, ts, close,
           ln(close / lag(close) OVER (PARTITION BY symbol ORDER BY ts)) AS lr,
           md5_number_lower(symbol || '|' || epoch_us(ts)::VARCHAR || '|' || close::VARCHAR)::HUGEINT AS fp
    FROM raw.price_bars WHERE ts <= $as_of
),
seq AS (
    SELECT symbol, ts, close, lr,
           row_number() OVER w AS seq,
           sum(fp) OVER w AS fp_cum,
           stddev_samp(lr) OVER (PARTITION BY symbol ORDER BY ts ROWS BETWEEN 28 PRECEDING AND CURRENT ROW) AS vol30,
           count(lr) OVER (PARTITION BY symbol ORDER BY ts ROWS BETWEEN 28 PRECEDING AND CURRENT ROW) AS vol_n
    FROM bars
    WINDOW w AS (PARTITION BY symbol ORDER BY ts ROWS UNBOUNDED PRECEDING)
)
SELECT symbol, ts, close, seq, fp_cum, vol30, vol_n,
       fp_cum - coalesce(lag(fp_cum, 30) OVER (PARTITION BY symbol ORDER BY ts), 0) AS vol_fp
FROM seq
""",
    """
CREATE OR REPLACE TEMP TABLE _ev_exec AS
WITH single_consumption AS (
    SELECT preview_id, min(execution_id) AS execution_id
    FROM raw.preview_consumptions GROUP BY preview_id HAVING count(*) = 1
),
chosen AS (
    SELECT d.decision_id, d.decided_at, e.execution_id, e.symbol, e.direction, e.executed_at
    FROM raw.trading_decisions d
    JOIN raw.trade_executions e ON e.decision_id = d.decision_id
    LEFT JOIN single_consumption c ON c.preview_id = d.preview_id AND c.execution_id = e.execution_id
    WHERE e.executed_at <= $as_of
    QUALIFY row_number() OVER (
        PARTITION BY d.decision_id ORDER BY (c.execution_id IS NOT NULL) DESC, e.executed_at, e.execution_id
    ) = 1
),
fills AS (
    SELECT execution_id,
           sum(qty * price) / sum(qty) AS vwap,
           count(*)::VARCHAR || ':' || sum(md5_number_lower(
               fill_id || ':' || qty::VARCHAR || ':' || price::VARCHAR))::HUGEINT::VARCHAR AS fills_digest
    FROM raw.trade_fills WHERE filled_at <= $as_of GROUP BY execution_id
),
calendars AS (
    SELECT symbol, bool_or(dayofweek(ts) IN (0, 6)) AS weekend FROM raw.price_bars GROUP BY symbol
)
SELECT row_number() OVER () AS xid, c.*, f.vwap, coalesce(f.fills_digest, 'no_fills') AS fills_digest,
       coalesce(cal.weekend, false) AS weekend
FROM chosen c
LEFT JOIN fills f USING (execution_id)
LEFT JOIN calendars cal ON cal.symbol = c.symbol
""",
    # per execution: the bar before the window and the 30 volatility bars before the decision
    """
CREATE OR REPLACE TEMP TABLE _ev_at_exec AS
WITH k AS (SELECT xid, symbol, executed_at, decided_at FROM _ev_exec),
before AS (
    SELECT k.xid, b.seq AS before_seq, b.fp_cum AS before_fp
    FROM k ASOF LEFT JOIN _ev_bars b ON b.symbol = k.symbol AND b.ts < k.executed_at
),
vol AS (
    SELECT k.xid, v.vol30, v.vol_n, v.vol_fp
    FROM k ASOF LEFT JOIN _ev_bars v ON v.symbol = k.symbol AND v.ts < k.decided_at
)
SELECT * FROM before JOIN vol USING (xid)
""",
    """
CREATE OR REPLACE TEMP TABLE _ev_grid AS
SELECT row_number() OVER () AS gid, x.xid, x.symbol, x.executed_at AS win_start,
       x.executed_at + to_days(p.horizon_days::INTEGER) AS win_end,
       p.profile_id, p.horizon_days, p.benchmark_symbol, p.min_coverage
FROM _ev_exec x CROSS JOIN raw.benchmark_profiles p
""",
    # per (execution, profile): exit bar of the symbol; benchmark entry and exit
    """
CREATE OR REPLACE TEMP TABLE _ev_at_grid AS
WITH sym AS (
    SELECT g.gid, b.ts AS exit_ts, b.close AS exit_close, b.seq AS exit_seq, b.fp_cum AS exit_fp
    FROM (SELECT gid, symbol, win_end FROM _ev_grid) g
    ASOF LEFT JOIN _ev_bars b ON b.symbol = g.symbol AND b.ts <= g.win_end
),
bench_keys AS (SELECT gid, benchmark_symbol, win_start, win_end FROM _ev_grid WHERE benchmark_symbol IS NOT NULL),
bench_in AS (
    SELECT g.gid, b.ts AS bench_in_ts, b.close AS bench_in
    FROM bench_keys g ASOF LEFT JOIN _ev_bars b ON b.symbol = g.benchmark_symbol AND b.ts <= g.win_start
),
bench_out AS (
    SELECT g.gid, b.ts AS bench_out_ts, b.close AS bench_out
    FROM bench_keys g ASOF LEFT JOIN _ev_bars b ON b.symbol = g.benchmark_symbol AND b.ts <= g.win_end
)
SELECT sym.*, bi.bench_in_ts, bi.bench_in, bo.bench_out_ts, bo.bench_out
FROM sym LEFT JOIN bench_in bi USING (gid) LEFT JOIN bench_out bo USING (gid)
""",
    """
CREATE OR REPLACE TEMP TABLE _ev_measured AS
WITH joined AS (
    SELECT g.*, x.decision_id, x.execution_id, x.direction, x.executed_at, x.vwap, x.fills_digest,
           x.weekend, e.before_seq, e.before_fp, e.vol30, e.vol_n, e.vol_fp,
           a.exit_ts, a.exit_close, a.exit_seq, a.exit_fp, a.bench_in_ts, a.bench_in, a.bench_out_ts, a.bench_out,
           CASE WHEN x.direction = 'short' THEN -1.0 ELSE 1.0 END AS sign
    FROM _ev_grid g
    JOIN _ev_exec x USING (xid)
    JOIN _ev_at_exec e USING (xid)
    JOIN _ev_at_grid a USING (gid)
),
measured AS (
    SELECT j.*,
           j.win_end > $as_of AS is_pending,
           CASE WHEN j.exit_ts >= j.win_start THEN j.exit_seq - coalesce(j.before_seq, 0) ELSE 0 END AS found,
           CASE WHEN j.exit_ts >= j.win_start THEN j.exit_fp - coalesce(j.before_fp, 0) ELSE 0 END AS window_fp,
           CASE WHEN j.exit_ts >= j.win_start THEN j.exit_close END AS exit_price,
           CASE WHEN j.bench_out_ts >= j.win_start THEN j.bench_out END AS bench_exit,
           CASE WHEN j.weekend THEN j.horizon_days ELSE 5 * (j.horizon_days // 7) + wr.n END AS expected
    FROM joined j
    JOIN _ev_weekday_remainder wr ON wr.s = dayofweek(j.win_start) AND wr.r = j.horizon_days % 7
),
scored AS (
    SELECT m.*,
           (m.exit_price / m.vwap - 1) * m.sign AS raw_return,
           CASE WHEN m.benchmark_symbol IS NULL THEN 0.0
                ELSE (m.bench_exit / m.bench_in - 1) * m.sign END AS benchmark_return,
           CASE WHEN m.expected = 0 THEN 1.0 ELSE least(m.found / m.expected, 1.0) END AS coverage,
           greatest(m.expected - m.found, 0) AS missing_bars,
           (m.benchmark_symbol IS NOT NULL AND (m.bench_in IS NULL OR m.bench_exit IS NULL)) AS benchmark_missing
    FROM measured m
)
SELECT s.decision_id, s.execution_id, s.profile_id, s.benchmark_symbol, s.min_coverage, s.is_pending,
       s.vwap AS entry_price, s.exit_price, s.raw_return, s.benchmark_return,
       s.raw_return - s.benchmark_return AS excess_return,
       s.vol30 AS volatility, s.vol_n AS volatility_returns, s.coverage, s.missing_bars, s.benchmark_missing,
       CASE
           WHEN s.is_pending THEN 'pending'
           WHEN s.vwap IS NULL OR s.exit_price IS NULL OR s.coverage < s.min_coverage OR s.benchmark_missing
               THEN 'insufficient_data'
           ELSE 'complete'
       END AS status,
       sha256(concat_ws('|',
           CASE WHEN s.is_pending THEN 'pending' ELSE 'settled' END,
           s.profile_id, s.horizon_days::VARCHAR, coalesce(s.benchmark_symbol, '-'), s.min_coverage::VARCHAR,
           s.execution_id, s.symbol, s.direction, epoch_us(s.executed_at)::VARCHAR, s.fills_digest,
           CASE WHEN NOT s.is_pending THEN concat_ws('|',
               s.found::VARCHAR, s.window_fp::VARCHAR, coalesce(s.vol_fp, 0)::VARCHAR,
               coalesce(epoch_us(s.bench_in_ts)::VARCHAR || ':' || s.bench_in::VARCHAR, '-'),
               coalesce(epoch_us(s.bench_out_ts)::VARCHAR || ':' || s.bench_out::VARCHAR, '-')) END
       )) AS inputs_hash
FROM scored s
""",
)

# Append a version where the hash differs from the latest version of its (decision, profile).
_FRESH_SQL = """
CREATE OR REPLACE TEMP TABLE _ev_fresh AS
WITH latest AS (
    SELECT decision_id, profile_id, max(run_version) AS latest_version,
           arg_max(inputs_hash, run_version) AS latest_hash
    FROM _ev_previous GROUP BY decision_id, profile_id
)
SELECT f.*,
       'er_' || left(sha256(f.decision_id || '|' || f.profile_id || '|' || f.run_version::VARCHAR), 16) AS run_id,
       $as_of::TIMESTAMPTZ AS created_at
FROM (
    SELECT m.*, (coalesce(l.latest_version, 0) + 1)::BIGINT AS run_version
    FROM _ev_measured m LEFT JOIN latest l USING (decision_id, profile_id)
    WHERE l.latest_hash IS NULL OR l.latest_hash <> m.inputs_hash
) f
"""

# All runs with is_primary / promoted_at recomputed: explicit promotions first, then the policy.
_ALL_RUNS_SQL = """
CREATE OR REPLACE TEMP TABLE _ev_all AS
WITH runs AS (
    SELECT run_id, decision_id, execution_id, profile_id, run_version, inputs_hash, status, created_at
    FROM _ev_previous
    UNION ALL
    SELECT run_id, decision_id, execution_id, profile_id, run_version, inputs_hash, status, created_at
    FROM _ev_fresh
),
explicit AS (
    SELECT r.decision_id, r.run_id, p.promoted_at
    FROM raw.evaluation_promotions p
    JOIN runs r USING (decision_id, profile_id, run_version)
    WHERE p.promoted_at <= $as_of
    QUALIFY row_number() OVER (
        PARTITION BY r.decision_id ORDER BY p.promoted_at DESC, r.profile_id DESC, r.run_version DESC
    ) = 1
),
policy AS (
    SELECT r.decision_id, r.run_id, r.created_at AS promoted_at
    FROM runs r
    JOIN raw.trading_decisions d USING (decision_id)
    JOIN _ev_roles ro ON ro.role_id = d.role_id AND ro.primary_profile = r.profile_id
    ANTI JOIN explicit e ON e.decision_id = r.decision_id
    QUALIFY row_number() OVER (PARTITION BY r.decision_id ORDER BY r.status = 'pending', r.run_version) = 1
),
chosen AS (SELECT * FROM explicit UNION ALL SELECT * FROM policy)
SELECT r.run_id, r.decision_id, r.execution_id, r.profile_id, r.run_version, r.inputs_hash, r.status,
       c.run_id IS NOT NULL AS is_primary, c.promoted_at, r.created_at
FROM runs r LEFT JOIN chosen c USING (run_id)
"""

COMPONENTS_SQL = """
SELECT f.run_id, c.component,
       CASE c.component
           WHEN 'entry_price' THEN f.entry_price
           WHEN 'volatility' THEN f.volatility
           ELSE CASE WHEN NOT f.is_pending THEN CASE c.component
               WHEN 'exit_price' THEN f.exit_price
               WHEN 'raw_return' THEN f.raw_return
               WHEN 'benchmark_return' THEN f.benchmark_return
               WHEN 'excess_return' THEN f.excess_return
               WHEN 'coverage' THEN f.coverage
               WHEN 'missing_bars' THEN f.missing_bars::DOUBLE END END
       END AS value,
       CASE
           WHEN c.component = 'entry_price' THEN CASE WHEN f.entry_price IS NULL THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'volatility' THEN CASE WHEN f.volatility IS NULL THEN 'missing'
                                                    WHEN f.volatility_returns < 29 THEN 'short_history' ELSE 'ok' END
           WHEN f.is_pending THEN 'window_open'
           WHEN c.component = 'exit_price' THEN CASE WHEN f.exit_price IS NULL THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'raw_return' THEN
               CASE WHEN f.entry_price IS NULL OR f.exit_price IS NULL THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'benchmark_return' THEN
               CASE WHEN f.benchmark_symbol IS NULL THEN 'absolute' WHEN f.benchmark_missing THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'excess_return' THEN
               CASE WHEN f.entry_price IS NULL OR f.exit_price IS NULL OR f.benchmark_missing THEN 'missing' ELSE 'ok' END
           WHEN c.component = 'coverage' THEN
               CASE WHEN f.coverage < f.min_coverage THEN 'below_min_coverage' ELSE 'ok' END
           ELSE CASE WHEN f.missing_bars > 0 THEN 'missing' ELSE 'ok' END
       END AS quality_flag
FROM _ev_fresh f CROSS JOIN (SELECT unnest($components::VARCHAR[]) AS component) c
"""


def _run(con: duckdb.DuckDBPyConnection, sql: str, as_of: datetime) -> None:
    params = [as_of] if "$as_of" in sql else []
    con.execute(sql.replace("$as_of", "$1"), params).fetchall()


def evaluate(con: duckdb.DuckDBPyConnection, roles: pl.DataFrame, as_of: datetime) -> None:
    """Build the temp tables ``_ev_fresh`` (runs to append) and ``_ev_all`` (every run, primary recomputed).

    ``con`` must expose the raw landing tables and, after a first run, ``main.evaluation_runs``.
    ``roles``: role_id, primary_profile. Nothing in ``main`` is modified here.
    """
    con.execute("CREATE OR REPLACE TEMP TABLE _ev_weekday_remainder (s INTEGER, r INTEGER, n INTEGER)")
    con.executemany("INSERT INTO _ev_weekday_remainder VALUES (?, ?, ?)", _WEEKDAY_REMAINDER)
    con.register("_ev_roles_frame", roles.select("role_id", "primary_profile"))
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _ev_roles AS SELECT * FROM _ev_roles_frame").fetchall()
    finally:
        con.unregister("_ev_roles_frame")
    if table_exists(con, tables.EVALUATION_RUNS):
        con.execute(
            "CREATE OR REPLACE TEMP VIEW _ev_previous AS SELECT * FROM main.evaluation_runs"
        ).fetchall()
    else:
        con.register("_ev_empty", pl.DataFrame(schema=RUNS_SCHEMA))
        con.execute("CREATE OR REPLACE TEMP TABLE _ev_previous AS SELECT * FROM _ev_empty").fetchall()
        con.unregister("_ev_empty")
    for statement in (*_PIPELINE_SQL, _FRESH_SQL, _ALL_RUNS_SQL):
        _run(con, statement, as_of)


def append_components(con: duckdb.DuckDBPyConnection) -> None:
    """Append the components of ``_ev_fresh`` to ``main.evaluation_components`` (call in a transaction)."""
    params = {"components": list(COMPONENTS)}
    if not table_exists(con, tables.EVALUATION_COMPONENTS):
        con.execute(f"CREATE TABLE main.evaluation_components AS {COMPONENTS_SQL}", params).fetchall()
    else:
        con.execute(f"INSERT INTO main.evaluation_components {COMPONENTS_SQL}", params).fetchall()
