"""Evaluation runs (SPEC section 4): versioned, append-only scoring of every executed decision.

The arithmetic is one set-based DuckDB query over the raw tables (ASOF joins against a per-symbol
bar sequence, so the work grows linearly with decisions × profiles), then Polars decides which
runs are new versions and which run of each decision is primary.

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

from tradingmem_assets.warehouse import read_frame

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
        pairs = ", ".join(f"role '{r}' -> '{p}'" for r, p in missing.select("role_id", "primary_profile").rows())
        known = ", ".join(sorted(profile_ids)) or "(none)"
        raise EvaluationConfigError(
            f"primary_profile not found in benchmark_profiles: {pairs}; known profiles: {known}"
        )


# Weekdays among the r days following a day of week s (DuckDB dayofweek: 0 = Sunday).
_WEEKDAY_REMAINDER = [
    (s, r, sum(1 for k in range(1, r + 1) if (s + k) % 7 not in (0, 6))) for s in range(7) for r in range(7)
]

_COMPUTE_SQL = """
WITH
bars AS (
    SELECT symbol, ts, close,
           ln(close / lag(close) OVER (PARTITION BY symbol ORDER BY ts)) AS lr,
           md5_number_lower(symbol || '|' || strftime(ts, '%Y-%m-%dT%H:%M:%S') || '|' || close::VARCHAR)::HUGEINT AS fp
    FROM raw.price_bars WHERE ts <= $as_of
),
seq AS (
    SELECT symbol, ts, close,
           row_number() OVER w AS seq,
           sum(fp) OVER w AS fp_cum,
           stddev_samp(lr) OVER (PARTITION BY symbol ORDER BY ts ROWS BETWEEN 28 PRECEDING AND CURRENT ROW) AS vol30,
           count(lr) OVER (PARTITION BY symbol ORDER BY ts ROWS BETWEEN 28 PRECEDING AND CURRENT ROW) AS vol_n
    FROM bars
    WINDOW w AS (PARTITION BY symbol ORDER BY ts ROWS UNBOUNDED PRECEDING)
),
seq2 AS (
    SELECT *, fp_cum - coalesce(lag(fp_cum, 30) OVER (PARTITION BY symbol ORDER BY ts), 0) AS vol_fp
    FROM seq
),
calendars AS (
    SELECT symbol, bool_or(dayofweek(ts) IN (0, 6)) AS weekend FROM raw.price_bars GROUP BY symbol
),
single_consumption AS (
    SELECT preview_id, min(execution_id) AS execution_id
    FROM raw.preview_consumptions GROUP BY preview_id HAVING count(*) = 1
),
chosen AS (
    SELECT d.decision_id, d.role_id, d.decided_at, e.execution_id, e.symbol, e.direction, e.executed_at
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
           md5(string_agg(fill_id || ':' || qty::VARCHAR || ':' || price::VARCHAR, ',' ORDER BY fill_id)) AS fills_digest
    FROM raw.trade_fills WHERE filled_at <= $as_of GROUP BY execution_id
),
grid AS (
    SELECT c.*, f.vwap, coalesce(f.fills_digest, 'no_fills') AS fills_digest,
           p.profile_id, p.horizon_days, p.benchmark_symbol, p.min_coverage,
           c.executed_at AS win_start,
           c.executed_at + to_days(p.horizon_days::INTEGER) AS win_end,
           CASE WHEN c.direction = 'short' THEN -1.0 ELSE 1.0 END AS sign,
           coalesce(cal.weekend, false) AS weekend
    FROM chosen c
    CROSS JOIN raw.benchmark_profiles p
    LEFT JOIN fills f USING (execution_id)
    LEFT JOIN calendars cal ON cal.symbol = c.symbol
),
with_exit AS (
    SELECT g.*, x.ts AS exit_ts, x.close AS exit_close, x.seq AS exit_seq, x.fp_cum AS exit_fp
    FROM grid g ASOF LEFT JOIN seq2 x ON x.symbol = g.symbol AND x.ts <= g.win_end
),
with_start AS (
    SELECT g.*, s.seq AS before_seq, s.fp_cum AS before_fp
    FROM with_exit g ASOF LEFT JOIN seq2 s ON s.symbol = g.symbol AND s.ts < g.win_start
),
with_vol AS (
    SELECT g.*, v.vol30, v.vol_n, v.vol_fp
    FROM with_start g ASOF LEFT JOIN seq2 v ON v.symbol = g.symbol AND v.ts < g.decided_at
),
with_bench_in AS (
    SELECT g.*, b.ts AS bench_in_ts, b.close AS bench_in
    FROM with_vol g ASOF LEFT JOIN seq2 b ON b.symbol = g.benchmark_symbol AND b.ts <= g.win_start
),
with_bench AS (
    SELECT g.*, b.ts AS bench_out_ts, b.close AS bench_out
    FROM with_bench_in g ASOF LEFT JOIN seq2 b ON b.symbol = g.benchmark_symbol AND b.ts <= g.win_end
),
measured AS (
    SELECT g.*,
           g.win_end > $as_of AS is_pending,
           CASE WHEN g.exit_ts >= g.win_start THEN g.exit_seq - coalesce(g.before_seq, 0) ELSE 0 END AS found,
           CASE WHEN g.exit_ts >= g.win_start THEN g.exit_fp - coalesce(g.before_fp, 0) ELSE 0 END AS window_fp,
           CASE WHEN g.exit_ts >= g.win_start THEN g.exit_close END AS exit_price,
           CASE WHEN g.bench_out_ts >= g.win_start THEN g.bench_out END AS bench_exit,
           CASE WHEN g.weekend THEN g.horizon_days
                ELSE 5 * (g.horizon_days // 7) + wr.n END AS expected
    FROM with_bench g
    JOIN weekday_remainder wr ON wr.s = dayofweek(g.win_start) AND wr.r = g.horizon_days % 7
),
scored AS (
    SELECT m.*,
           (m.exit_price / m.vwap - 1) * m.sign AS raw_return,
           CASE WHEN m.benchmark_symbol IS NULL THEN 0.0
                ELSE (m.bench_exit / m.bench_in - 1) * m.sign END AS benchmark_return,
           CASE WHEN m.expected = 0 THEN 1.0 ELSE least(m.found / m.expected, 1.0) END AS coverage,
           greatest(m.expected - m.found, 0) AS missing_bars
    FROM measured m
)
SELECT s.decision_id, s.role_id, s.execution_id, s.profile_id, s.symbol, s.benchmark_symbol,
       s.horizon_days, s.min_coverage, s.is_pending,
       s.vwap AS entry_price, s.exit_price, s.raw_return, s.benchmark_return,
       s.raw_return - s.benchmark_return AS excess_return,
       s.vol30 AS volatility, s.vol_n AS volatility_returns, s.coverage, s.missing_bars,
       (s.benchmark_symbol IS NOT NULL AND (s.bench_in IS NULL OR s.bench_exit IS NULL)) AS benchmark_missing,
       CASE
           WHEN s.is_pending THEN 'pending'
           WHEN s.vwap IS NULL OR s.exit_price IS NULL OR s.coverage < s.min_coverage
                OR (s.benchmark_symbol IS NOT NULL AND (s.bench_in IS NULL OR s.bench_exit IS NULL))
               THEN 'insufficient_data'
           ELSE 'complete'
       END AS status,
       CASE WHEN s.is_pending THEN sha256(concat_ws('|', 'pending', s.profile_id, s.horizon_days::VARCHAR,
                coalesce(s.benchmark_symbol, '-'), s.min_coverage::VARCHAR, s.execution_id, s.symbol, s.direction,
                strftime(s.executed_at, '%Y-%m-%dT%H:%M:%S.%f'), s.fills_digest))
            ELSE sha256(concat_ws('|', 'settled', s.profile_id, s.horizon_days::VARCHAR,
                coalesce(s.benchmark_symbol, '-'), s.min_coverage::VARCHAR, s.execution_id, s.symbol, s.direction,
                strftime(s.executed_at, '%Y-%m-%dT%H:%M:%S.%f'), s.fills_digest,
                s.found::VARCHAR, s.window_fp::VARCHAR, coalesce(s.vol_fp, 0)::VARCHAR,
                coalesce(strftime(s.bench_in_ts, '%Y-%m-%dT%H:%M:%S') || ':' || s.bench_in::VARCHAR, '-'),
                coalesce(strftime(s.bench_out_ts, '%Y-%m-%dT%H:%M:%S') || ':' || s.bench_out::VARCHAR, '-')))
       END AS inputs_hash
FROM scored s
ORDER BY s.decision_id, s.profile_id
"""


def compute_measurements(con: duckdb.DuckDBPyConnection, as_of: datetime) -> pl.DataFrame:
    """One row per (executed decision, benchmark profile) with every measured quantity and its hash.

    ``con`` must expose the raw landing tables (schema ``raw``).
    """
    con.execute("CREATE OR REPLACE TEMP TABLE weekday_remainder (s INTEGER, r INTEGER, n INTEGER)")
    con.executemany("INSERT INTO weekday_remainder VALUES (?, ?, ?)", _WEEKDAY_REMAINDER)
    return read_frame(con, _COMPUTE_SQL.replace("$as_of", "$1"), [as_of])


def new_versions(measured: pl.DataFrame, existing: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Runs to append: a measurement whose hash differs from the latest version of its run key."""
    latest = (
        existing.sort("run_version")
        .group_by("decision_id", "profile_id")
        .agg(pl.col("run_version").last().alias("latest_version"), pl.col("inputs_hash").last().alias("latest_hash"))
    )
    fresh = measured.join(latest, on=["decision_id", "profile_id"], how="left").filter(
        pl.col("latest_hash").is_null() | (pl.col("latest_hash") != pl.col("inputs_hash"))
    )
    fresh = fresh.with_columns((pl.col("latest_version").fill_null(0) + 1).cast(pl.Int64).alias("run_version"))
    run_ids = [run_id_for(d, p, v) for d, p, v in fresh.select("decision_id", "profile_id", "run_version").rows()]
    return fresh.with_columns(
        pl.Series("run_id", run_ids, dtype=pl.String),
        pl.lit(as_of).cast(pl.Datetime("us", "UTC")).alias("created_at"),
    )


def components_of(fresh: pl.DataFrame) -> pl.DataFrame:
    """The long table of components with quality flags; values are kept as measured."""
    pending = pl.col("is_pending")
    absolute = pl.col("benchmark_symbol").is_null()
    ret_missing = pl.col("entry_price").is_null() | pl.col("exit_price").is_null()

    def flag(*branches: tuple[pl.Expr, str]) -> pl.Expr:
        expr = pl.when(branches[0][0]).then(pl.lit(branches[0][1]))
        for cond, label in branches[1:]:
            expr = expr.when(cond).then(pl.lit(label))
        return expr.otherwise(pl.lit("ok"))

    wide = fresh.select(
        "run_id",
        pl.struct(value=pl.col("entry_price"), flag=flag((pl.col("entry_price").is_null(), "missing"))).alias(
            "entry_price"
        ),
        pl.struct(
            value=pl.when(pending).then(None).otherwise(pl.col("exit_price")),
            flag=flag((pending, "window_open"), (pl.col("exit_price").is_null(), "missing")),
        ).alias("exit_price"),
        pl.struct(
            value=pl.when(pending).then(None).otherwise(pl.col("raw_return")),
            flag=flag((pending, "window_open"), (ret_missing, "missing")),
        ).alias("raw_return"),
        pl.struct(
            value=pl.when(pending).then(None).otherwise(pl.col("benchmark_return")),
            flag=flag((pending, "window_open"), (absolute, "absolute"), (pl.col("benchmark_missing"), "missing")),
        ).alias("benchmark_return"),
        pl.struct(
            value=pl.when(pending).then(None).otherwise(pl.col("excess_return")),
            flag=flag(
                (pending, "window_open"),
                (ret_missing | pl.col("benchmark_missing"), "missing"),
            ),
        ).alias("excess_return"),
        pl.struct(
            value=pl.col("volatility"),
            flag=flag(
                (pl.col("volatility").is_null(), "missing"),
                (pl.col("volatility_returns") < 29, "short_history"),
            ),
        ).alias("volatility"),
        pl.struct(
            value=pl.when(pending).then(None).otherwise(pl.col("coverage")),
            flag=flag((pending, "window_open"), (pl.col("coverage") < pl.col("min_coverage"), "below_min_coverage")),
        ).alias("coverage"),
        pl.struct(
            value=pl.when(pending).then(None).otherwise(pl.col("missing_bars").cast(pl.Float64)),
            flag=flag((pending, "window_open"), (pl.col("missing_bars") > 0, "missing")),
        ).alias("missing_bars"),
    )
    long = wide.unpivot(index="run_id", on=list(COMPONENTS), variable_name="component").unnest("value")
    long = long.rename({"flag": "quality_flag"})
    return long.select("run_id", "component", "value", "quality_flag").cast(COMPONENTS_SCHEMA)  # type: ignore[arg-type]


def assign_primary(
    runs: pl.DataFrame,
    decision_roles: pl.DataFrame,
    roles: pl.DataFrame,
    promotions: pl.DataFrame,
    as_of: datetime,
) -> pl.DataFrame:
    """Recompute ``is_primary``/``promoted_at``: explicit promotions first, then the declared policy.

    ``decision_roles``: decision_id, role_id. ``roles``: role_id, primary_profile.
    ``promotions``: decision_id, profile_id, run_version, promoted_at.
    """
    keys = ["decision_id", "profile_id", "run_version"]
    explicit = (
        promotions.filter(pl.col("promoted_at") <= as_of)
        .join(runs.select(*keys, "run_id"), on=keys, how="inner")
        .sort("promoted_at", "profile_id", "run_version")
        .group_by("decision_id")
        .agg(pl.col("run_id").last(), pl.col("promoted_at").last())
    )
    policy = (
        runs.join(decision_roles, on="decision_id", how="inner")
        .join(roles.select("role_id", "primary_profile"), on="role_id", how="inner")
        .filter(pl.col("profile_id") == pl.col("primary_profile"))
        .sort(pl.col("status") == "pending", "run_version")
        .group_by("decision_id")
        .agg(pl.col("run_id").first(), pl.col("created_at").first().alias("promoted_at"))
        .join(explicit.select("decision_id"), on="decision_id", how="anti")
    )
    primary = pl.concat([explicit, policy.select(explicit.columns)], how="vertical_relaxed")
    out = runs.drop("is_primary", "promoted_at").join(
        primary.select("run_id", pl.lit(True).alias("is_primary"), "promoted_at"), on="run_id", how="left"
    )
    return out.with_columns(pl.col("is_primary").fill_null(False)).select(RUNS_SCHEMA.names()).cast(RUNS_SCHEMA)  # type: ignore[arg-type]


def unmatched_promotions(runs: pl.DataFrame, promotions: pl.DataFrame) -> pl.DataFrame:
    """Promotion rows naming a run that does not exist (reported, never guessed at)."""
    return promotions.join(
        runs.select("decision_id", "profile_id", "run_version"),
        on=["decision_id", "profile_id", "run_version"],
        how="anti",
    )
