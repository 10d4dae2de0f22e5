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
- Versions follow world time (SPEC section 16), so a warehouse built late holds the same versions
  as one built along the way: version 0 is the open window (``pending``, one per decision and
  profile once executed, never re-versioned, ``known_at`` null); version 1 is the state at the
  window's end (fills and bars at or before it; ``known_at`` = the window end); every fill that
  lands after the window end adds the state as of its ``filled_at`` (``known_at`` = that instant).
  A state is appended when no stored version of its (decision, profile) has its ``inputs_hash``.
  A state whose instant was already behind the previous learning run (a landing file corrected
  after the fact) is knowable only now: its ``known_at`` is this run's ``as_of``.
- Incremental runs (``incremental.py``): when every landing row the last evaluation could see
  (stamped at or before its ``as_of``, ``since``) is still exactly there, the code, settings and
  registry are unchanged and the evaluation tables are as that run left them, only the
  decisions an instant in ``(since, as_of]`` can change are evaluated again
  (``incremental.TOUCHED_SQL``: decided, executed, a consumption of its preview, a fill, a
  window end or a promotion in that interval). Every other decision's inputs, as read at
  ``as_of``, equal those read at ``since``: none of its states is new and its primary intervals
  hold, so its stored rows are kept. ``tests/evaluation/test_incremental.py`` compares the
  result with a full evaluation.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.evaluation.incremental import TOUCHED_SQL
from tradingmem_assets.defs.evaluation.versions import (
    ALL_RUNS_SQL,
    FRESH_SQL,
    FRESH_TABLE_SQL,
    PRIMARIES_SQL,
    gid_sql,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import md5_lower_sql, run_script, table_exists

EVALUATION_RUNS_DTYPES = table_dtypes(tables.EVALUATION_RUNS)
EVALUATION_PRIMARIES_DTYPES = table_dtypes(tables.EVALUATION_PRIMARIES)


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


def _fills_in_order(alias: str) -> str:
    """A group of fills (``alias``: their table's, with its dot) as a list sorted by fill time and id,
    each (filled_at, fill_id, qty * price, qty): what ``_vwap`` sums."""
    return f"list_sort(list(({alias}filled_at, {alias}fill_id, {alias}qty * {alias}price, {alias}qty)))"


def _vwap(fills: str) -> str:
    """The volume-weighted price of a ``_fills_in_order`` list, its sums taken in the fills' order. A
    sum of doubles depends on its order, and a parallel aggregate's order on how the threads were
    scheduled: two builds of one warehouse stored entry prices a last bit apart (3 to 6 of 5.8
    million runs at SF 10). In order, the same fills always give the same price. Sorting a list
    per group cost a third of what two ordered aggregates (``sum(x ORDER BY ...)``) did. A sum of
    one or two doubles is the same in any order (addition commutes; only its association varies),
    so only executions with three fills or more are summed this way (a fifth of them at SF 10:
    0.4 s less of ``_ev_exec``, the same prices to the last bit)."""
    return f"list_sum([f[3] for f in {fills}]) / list_sum([f[4] for f in {fills}])"


def _fills_digest(alias: str) -> str:
    """What the inputs hash covers of a group of fills (``alias``: their table's, with its dot)."""
    fill = f"{alias}fill_id || ':' || {alias}qty::VARCHAR || ':' || {alias}price::VARCHAR"
    return f"count(*)::VARCHAR || ':' || sum({md5_lower_sql(fill)})::HUGEINT::VARCHAR"


# Per settled state of an (execution, profile): the joined window facts. The states drive the
# joins (a wide build side of 2.9 million rows at SF 10 cost more than the narrow one).
_WINDOWS_CTE = """
joined AS (
    SELECT s.cut, s.gid, g.win_start, ph.horizon_days, ph.benchmark_symbol, ph.min_coverage,
           x.direction, x.vwap, x.fills_digest, x.exec_head, ph.profile_head,
           x.weekend, e.before_seq, e.before_fp, e.vol30, e.vol_n, e.vol_fp,
           a.exit_ts, a.exit_close, a.exit_seq, a.exit_fp, a.bench_in_ts, a.bench_in, a.bench_out_ts, a.bench_out,
           CASE WHEN x.direction = 'short' THEN -1.0 ELSE 1.0 END AS sign
    FROM _ev_states s
    JOIN _ev_grid g USING (gid)
    JOIN _ev_exec x USING (xid)
    JOIN _ev_at_exec e USING (xid)
    JOIN _ev_at_grid a USING (gid)
    JOIN _ev_profiles ph USING (pidx)
),
measured AS (
    SELECT j.*,
           CASE WHEN j.exit_ts >= j.win_start THEN j.exit_seq - coalesce(j.before_seq, 0) ELSE 0 END AS found,
           CASE WHEN j.exit_ts >= j.win_start THEN j.exit_fp - coalesce(j.before_fp, 0) ELSE 0 END AS window_fp,
           CASE WHEN j.exit_ts >= j.win_start THEN j.exit_close END AS exit_price,
           CASE WHEN j.bench_out_ts >= j.win_start THEN j.bench_out END AS bench_exit,
           CASE WHEN j.weekend THEN j.horizon_days ELSE 5 * (j.horizon_days // 7) + wr.n END AS expected
    FROM joined j
    JOIN _ev_weekday_remainder wr ON wr.s = dayofweek(j.win_start) AND wr.r = j.horizon_days % 7
)
"""

# What the inputs hash of a state covers before its settled part (the open window's covers only
# this): the profile's fields and the execution's, each spelled once (``_ev_profiles``, the
# execution's ``exec_head``) rather than for each state. ``concat_ws`` of the two spellings is the
# spelling of their fields, so every stored hash holds (``SETTLED_HASHES`` in the tests).
_HASH_HEAD = "'{kind}', s.profile_head, s.exec_head"

# Every settled state, measured. Temp tables are not compressed: a row carries the gid, not the
# decision, execution and profile strings (``versions.gid_sql``), and flags instead of what they
# derive from.
_MEASURED_SQL = f"""
CREATE OR REPLACE TEMP TABLE _ev_measured AS
WITH {_WINDOWS_CTE},
states AS (
    SELECT m.*, m.cut AS known_at,
           coalesce(sf.vwap, m.vwap) AS state_vwap, coalesce(sf.fills_digest, m.fills_digest) AS state_fills
    FROM measured m LEFT JOIN _ev_state_fills sf USING (gid, cut)
),
scored AS (
    SELECT s.*,
           (s.exit_price / s.state_vwap - 1) * s.sign AS raw_return,
           CASE WHEN s.benchmark_symbol IS NULL THEN 0.0
                ELSE (s.bench_exit / s.bench_in - 1) * s.sign END AS benchmark_return,
           CASE WHEN s.expected = 0 THEN 1.0 ELSE least(s.found / s.expected, 1.0) END AS coverage,
           greatest(s.expected - s.found, 0) AS missing_bars,
           (s.benchmark_symbol IS NOT NULL AND (s.bench_in IS NULL OR s.bench_exit IS NULL)) AS benchmark_missing
    FROM states s
)
SELECT s.gid, s.known_at,
       s.state_vwap AS entry_price, s.exit_price, s.raw_return, s.benchmark_return,
       s.raw_return - s.benchmark_return AS excess_return,
       s.vol30 AS volatility, s.coverage, s.missing_bars::BIGINT AS missing_bars,
       s.vol_n < 29 AS short_history, s.benchmark_missing, s.benchmark_symbol IS NULL AS benchmark_absolute,
       s.coverage < s.min_coverage AS below_min_coverage,
       CASE
           WHEN s.state_vwap IS NULL OR s.exit_price IS NULL OR s.coverage < s.min_coverage OR s.benchmark_missing
               THEN 'insufficient_data'
           ELSE 'complete'
       END AS status,
       sha256(concat_ws('|',
           {_HASH_HEAD.format(kind="settled")},
           concat_ws('|', s.state_fills,
               s.found::VARCHAR, s.window_fp::VARCHAR, coalesce(s.vol_fp, 0)::VARCHAR,
               coalesce(epoch_us(s.bench_in_ts)::VARCHAR || ':' || s.bench_in::VARCHAR, '-'),
               coalesce(epoch_us(s.bench_out_ts)::VARCHAR || ':' || s.bench_out::VARCHAR, '-'))
       )) AS inputs_hash
FROM scored s
"""

# Version 0 of every (execution, profile), the open window: only its volatility is measured, so
# only the facts known at the execution are joined.
_PENDING_SQL = f"""
CREATE OR REPLACE TEMP TABLE _ev_pending AS
SELECT s.gid, s.vol30 AS volatility, s.vol_n < 29 AS short_history,
       sha256(concat_ws('|', {_HASH_HEAD.format(kind="pending")})) AS inputs_hash
FROM (SELECT {gid_sql("x.xid", "ph.pidx")} AS gid, x.exec_head, ph.profile_head, e.vol30, e.vol_n
      FROM _ev_exec x CROSS JOIN _ev_profiles ph JOIN _ev_at_exec e USING (xid)) s
"""

# The evaluation pipeline: each statement creates one temp table; every ASOF join runs over a
# narrow (key, symbol, instant) table and is joined back by key, so wide rows are never sorted.
_PIPELINE_SQL = (
    f"""
CREATE OR REPLACE TEMP TABLE _ev_bars AS
WITH bars AS (
    SELECT symbol, ts, close,
           ln(close / lag(close) OVER (PARTITION BY symbol ORDER BY ts)) AS lr,
           {md5_lower_sql("symbol || '|' || epoch_us(ts)::VARCHAR || '|' || close::VARCHAR")}::HUGEINT AS fp
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
    f"""
CREATE OR REPLACE TEMP TABLE _ev_exec AS
WITH single_consumption AS (
    SELECT preview_id, min(execution_id) AS execution_id
    FROM raw.preview_consumptions WHERE consumed_at <= $as_of GROUP BY preview_id HAVING count(*) = 1
),
chosen AS (
    SELECT d.decision_id, d.role_id, d.decided_at, e.execution_id, e.symbol, e.direction, e.executed_at
    FROM _ev_decisions d
    JOIN raw.trade_executions e ON e.decision_id = d.decision_id
    LEFT JOIN single_consumption c ON c.preview_id = d.preview_id AND c.execution_id = e.execution_id
    WHERE e.executed_at <= $as_of AND d.decided_at <= $as_of
    QUALIFY row_number() OVER (
        PARTITION BY d.decision_id ORDER BY (c.execution_id IS NOT NULL) DESC, e.executed_at, e.execution_id
    ) = 1
),
fill_sums AS (
    SELECT execution_id, count(*) AS n, max(filled_at) AS last_fill_at,
           sum(qty * price) / sum(qty) AS vwap, {_fills_digest("")} AS fills_digest
    FROM raw.trade_fills f SEMI JOIN chosen c USING (execution_id)
    WHERE filled_at <= $as_of GROUP BY execution_id
),
in_order AS (  -- only three fills or more have sums that depend on their order (see ``_vwap``)
    SELECT execution_id, {_vwap("fills")} AS vwap
    FROM (SELECT execution_id, {_fills_in_order("")} AS fills
          FROM raw.trade_fills f
          SEMI JOIN (SELECT execution_id FROM fill_sums WHERE n > 2) USING (execution_id)
          WHERE filled_at <= $as_of GROUP BY execution_id)
),
fills AS (
    SELECT s.execution_id, s.last_fill_at, s.fills_digest,
           CASE WHEN s.n > 2 THEN o.vwap ELSE s.vwap END AS vwap
    FROM fill_sums s LEFT JOIN in_order o USING (execution_id)
),
calendars AS (
    SELECT symbol, bool_or(dayofweek(ts) IN (0, 6)) AS weekend FROM raw.price_bars WHERE ts <= $as_of GROUP BY symbol
)
SELECT row_number() OVER () AS xid, c.*, f.vwap, f.last_fill_at, coalesce(f.fills_digest, 'no_fills') AS fills_digest,
       coalesce(cal.weekend, false) AS weekend,
       concat_ws('|', c.execution_id, c.symbol, c.direction, epoch_us(c.executed_at)::VARCHAR) AS exec_head
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
    # every profile with its number (``pidx``) and its fields as the inputs hash spells them
    """
CREATE OR REPLACE TEMP TABLE _ev_profiles AS
SELECT (row_number() OVER (ORDER BY profile_id) - 1)::BIGINT AS pidx, profile_id, horizon_days,
       benchmark_symbol, min_coverage,
       concat_ws('|', profile_id, horizon_days::VARCHAR, coalesce(benchmark_symbol, '-'),
                 min_coverage::VARCHAR) AS profile_head
FROM raw.benchmark_profiles
""",
    f"""
CREATE OR REPLACE TEMP TABLE _ev_grid AS
SELECT {gid_sql("x.xid", "p.pidx")} AS gid, x.xid, x.symbol, x.executed_at AS win_start,
       x.executed_at + to_days(p.horizon_days::INTEGER) AS win_end, p.pidx, p.benchmark_symbol
FROM _ev_exec x CROSS JOIN _ev_profiles p
""",
    # the executions with a fill after a window's end (none, mostly), with those windows
    """
CREATE OR REPLACE TEMP TABLE _ev_late AS
SELECT g.gid, g.win_end, x.execution_id, x.last_fill_at
FROM _ev_grid g JOIN _ev_exec x USING (xid)
WHERE x.last_fill_at > g.win_end
""",
    # the settled states of each (execution, profile): the window end, then every later fill (after
    # the window's end: never a window end's row)
    """
CREATE OR REPLACE TEMP TABLE _ev_states AS
SELECT gid, win_end AS cut FROM _ev_grid WHERE win_end <= $as_of
UNION ALL
SELECT DISTINCT l.gid, f.filled_at AS cut
FROM _ev_late l JOIN raw.trade_fills f ON f.execution_id = l.execution_id
WHERE f.filled_at > l.win_end AND f.filled_at <= $as_of
""",
    # the fills of a state, where they differ from all fills seen (only states before a later fill,
    # of a late execution: a state's cut is at or after its window's end)
    f"""
CREATE OR REPLACE TEMP TABLE _ev_state_fills AS
SELECT gid, cut, {_vwap("fills")} AS vwap, fills_digest
FROM (SELECT s.gid, s.cut, {_fills_in_order("f.")} AS fills, {_fills_digest("f.")} AS fills_digest
      FROM _ev_states s JOIN _ev_late l USING (gid)
      JOIN raw.trade_fills f ON f.execution_id = l.execution_id AND f.filled_at <= s.cut
      WHERE l.last_fill_at > s.cut
      GROUP BY s.gid, s.cut)
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
    _MEASURED_SQL,
    _PENDING_SQL,
    """
DROP TABLE _ev_at_grid;
DROP TABLE _ev_state_fills;
DROP TABLE _ev_states;
DROP TABLE _ev_grid;
DROP TABLE _ev_at_exec;
DROP TABLE _ev_late;
DROP TABLE _ev_bars
""",
)


def evaluate(
    con: duckdb.DuckDBPyConnection,
    roles: pl.DataFrame,
    as_of: datetime,
    prev_bound: datetime | None = None,
    since: datetime | None = None,
) -> None:
    """Build ``_ev_fresh`` (a view of the runs to append), the temp table ``_ev_primaries`` (every
    primary interval) and the view ``_ev_all`` (every run, primary as of ``as_of``). ``prev_bound``
    is the as_of of the previous learning run (None on a fresh warehouse). With ``since`` (incremental: see the
    module's docstring), only the decisions in ``_ev_touched`` are evaluated, and ``_ev_primaries``
    and ``_ev_all`` hold their rows only.

    ``con`` must expose the raw landing tables and, after a first run, ``main.evaluation_runs``.
    ``roles``: role_id, primary_profile. Nothing in ``main`` is modified here.
    """
    params = {"as_of": as_of, "prev_bound": prev_bound}
    con.execute("CREATE OR REPLACE TEMP TABLE _ev_weekday_remainder (s INTEGER, r INTEGER, n INTEGER)")
    con.executemany("INSERT INTO _ev_weekday_remainder VALUES (?, ?, ?)", _WEEKDAY_REMAINDER)
    con.register("_ev_roles_frame", roles.select("role_id", "primary_profile"))
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _ev_roles AS SELECT * FROM _ev_roles_frame").fetchall()
    finally:
        con.unregister("_ev_roles_frame")
    if since is not None:
        run_script(con, TOUCHED_SQL, {"as_of": as_of, "since": since})
        touched = "WHERE decision_id IN (SELECT decision_id FROM _ev_touched)"
    else:
        touched = ""
    con.execute(f"CREATE OR REPLACE TEMP VIEW _ev_decisions AS SELECT * FROM raw.trading_decisions {touched}")
    if table_exists(con, tables.EVALUATION_RUNS):
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW _ev_previous AS SELECT * FROM main.evaluation_runs {touched}"
        ).fetchall()
    else:
        con.register("_ev_empty", pl.DataFrame(schema=EVALUATION_RUNS_DTYPES))
        con.execute("CREATE OR REPLACE TEMP TABLE _ev_previous AS SELECT * FROM _ev_empty").fetchall()
        con.unregister("_ev_empty")
    for statement in (*_PIPELINE_SQL, FRESH_SQL, FRESH_TABLE_SQL, PRIMARIES_SQL, ALL_RUNS_SQL):
        run_script(con, statement, params)
