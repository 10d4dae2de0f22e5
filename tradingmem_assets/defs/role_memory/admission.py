"""Role cases (SPEC section 5): the fail-closed admission of decisions into Role Memory.

One set-based DuckDB query walks the execution chain of every decision that names a role
(decision -> preview -> consumption(s) -> execution(s) -> position(s) -> primary evaluation run)
and lists every reason code that applies; the status follows from the reasons alone, so
eligibility can never be "fixed" by editing a case: it is recomputed from the chain every run.

Choices this module commits to (also in docs/role_memory.md):
- The chain is read as known at ``as_of``: decisions, previews, consumptions and executions
  stamped after it do not exist yet; a position counts as settled only when every position of the
  execution is closed/liquidated with ``closed_at <= as_of``.
- A preview counts only when ``trade_previews`` has it *for this decision*; otherwise
  ``no_preview``. Without a consumption (or without a preview) ``no_execution`` is listed too, and
  a consumption naming an execution that does not exist also gives ``no_execution``.
- ``execution_id`` is set only when the preview was consumed exactly once; with several
  consumptions every named execution is checked and all of them are listed in the provenance.
- Automation outranks anything manual-looking: ``automation_flag`` or an automated source name
  (compared case- and separator-insensitively: "Strategy Studio" is ``strategy_studio``) gives
  ``automated_source``. Manual sources must match exactly; anything else is ``unknown_source``.
- ``insufficient_evaluation``: the primary run is not complete, or lacks its excess return or
  volatility (the noise band cannot be drawn without them).
- symbol / direction / account / market / scenario / text are the decision's (what the role
  decided); every fact about the trade (execution, settlement, run, outcome) is joined from the chain.

Scale: the cases are built, stamped and sorted inside DuckDB (``admit`` into a temp table that
spills under the connection's ``memory_limit``, then ``write_cases``); Python only encodes the
provenance JSON (a Polars function DuckDB calls vector by vector, ``polars_json``), and the
invariants stream through Pandera in chunks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import duckdb
import polars as pl
import pyarrow as pa

from tradingmem_assets.defs.role_memory.reasons import PENDING_REASONS, QUARANTINE_REASONS
from tradingmem_assets.defs.role_memory.reflection import outcome_sql
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.vocabulary import AUTOMATED_SOURCES, LINK_FIELDS, MANUAL_SOURCES
from tradingmem_assets.lib.warehouse import table_exists

ROLE_CASES_DTYPES = table_dtypes(tables.ROLE_CASES)
CONTENT_COLUMNS = [c for c in ROLE_CASES_DTYPES.names() if c not in ("case_id", "created_at", "updated_at")]

# Reasons that only wait for time (settlement, evaluation); every other reason is permanent.


ROLE_REGISTRY_DTYPES = pl.Schema(
    {
        "role_id": pl.String(),
        "skill_id": pl.String(),
        "maturity_days": pl.Int64(),
        "primary_profile": pl.String(),
        "noise_k": pl.Float64(),
        "required_evidence": pl.List(pl.String()),
        "failure_modes": pl.List(pl.String()),
        "reflection_prompt": pl.String(),
    }
)

_EMPTY_RUNS_DTYPES = pl.Schema(
    {
        "run_id": pl.String(),
        "decision_id": pl.String(),
        "execution_id": pl.String(),
        "profile_id": pl.String(),
        "run_version": pl.Int64(),
        "status": pl.String(),
        "is_primary": pl.Boolean(),
        "known_at": UTC_TS,
    }
)
_EMPTY_COMPONENTS_DTYPES = pl.Schema(
    {"run_id": pl.String(), "component": pl.String(), "value": pl.Float64(), "quality_flag": pl.String()}
)


def case_id_for(decision_id: str, role_id: str) -> str:
    """Deterministic case id: the decision and the role it names."""
    return "rc_" + hashlib.sha256(f"{decision_id}|{role_id}".encode()).hexdigest()[:16]


def registry_frame(rows: list[dict]) -> pl.DataFrame:
    """The role registry (``RoleRegistry.rows()``) as a typed frame."""
    if not rows:
        return pl.DataFrame(schema=ROLE_REGISTRY_DTYPES)
    return pl.DataFrame(rows).select(ROLE_REGISTRY_DTYPES.names()).cast(ROLE_REGISTRY_DTYPES)  # type: ignore[arg-type]


def _sql_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _norm(expr: str) -> str:
    return f"replace(replace(lower(trim({expr})), ' ', '_'), '-', '_')"


_MISMATCH_ITEMS = ",\n".join(
    f"CASE WHEN e.{f} IS DISTINCT FROM pv.{f} THEN 'link_mismatch:{f}' END" for f in LINK_FIELDS
)
_MISMATCH_ORDER = _sql_list(tuple(f"link_mismatch:{f}" for f in LINK_FIELDS))
_EXECUTION = (
    "{'execution_id': named_execution_id, 'found': found, 'source': source, "
    "'source_verified': source_verified, 'automation_flag': automation_flag}"
)

ADMISSION_SQL = f"""
WITH
d AS (
    SELECT d.*, r.role_id AS reg_role, r.skill_id AS reg_skill, r.noise_k
    FROM raw.trading_decisions d
    LEFT JOIN _tm_roles r ON r.role_id = d.role_id
    WHERE d.role_id IS NOT NULL AND d.decided_at <= $1
),
pv AS (  -- the decision's own preview, with the fields its executions must agree with
    SELECT p.preview_id, {", ".join(f"d.{f}" for f in LINK_FIELDS)}
    FROM d JOIN raw.trade_previews p
      ON p.preview_id = d.preview_id AND p.decision_id = d.decision_id AND p.created_at <= $1
),
pos AS (
    SELECT execution_id,
           bool_and(status IN ('closed', 'liquidated') AND closed_at IS NOT NULL AND closed_at <= $1)
               AS settled,
           max(closed_at) FILTER (WHERE closed_at <= $1) AS closed_at,
           list_sort(list(position_id)) AS position_ids
    FROM raw.position_lifecycles
    WHERE opened_at <= $1
    GROUP BY execution_id
),
-- preview_id and consumption_id are keys of their raw tables: a decision has one link per consumption
consumed AS (
    SELECT preview_id, count(*) AS n_consumptions
    FROM raw.preview_consumptions WHERE consumed_at <= $1 GROUP BY preview_id
),
links AS (
    SELECT pv.decision_id, n.n_consumptions, c.consumption_id, c.execution_id AS named_execution_id,
           e.execution_id IS NOT NULL AS found,
           e.source, e.source_verified, e.automation_flag,
           CASE WHEN e.execution_id IS NULL THEN []::VARCHAR[]
                ELSE list_filter([{_MISMATCH_ITEMS}], lambda x: x IS NOT NULL) END AS mismatches,
           e.execution_id IS NOT NULL
               AND (e.automation_flag IS TRUE OR {_norm("e.source")} IN {_sql_list(AUTOMATED_SOURCES)})
               AS automated,
           e.execution_id IS NOT NULL AND e.source = 'manual_external' AND e.source_verified IS NOT TRUE
               AS unverified,
           e.execution_id IS NOT NULL AND (e.source IS NULL OR (
               e.source NOT IN {_sql_list(MANUAL_SOURCES)}
               AND {_norm("e.source")} NOT IN {_sql_list(AUTOMATED_SOURCES)})) AS unknown,
           e.execution_id IS NOT NULL AND coalesce(pos.settled, false) AS settled,
           e.executed_at, pos.closed_at, coalesce(pos.position_ids, []::VARCHAR[]) AS position_ids
    FROM pv
    JOIN raw.preview_consumptions c ON c.preview_id = pv.preview_id AND c.consumed_at <= $1
    JOIN consumed n ON n.preview_id = pv.preview_id
    LEFT JOIN raw.trade_executions e ON e.execution_id = c.execution_id AND e.executed_at <= $1
    LEFT JOIN pos ON pos.execution_id = e.execution_id
),
-- Nearly every decision has exactly one consumption: its link row already is the aggregate (the
-- list aggregates below are what made this query slow and memory hungry at scale). position_ids
-- of one execution are already sorted and distinct (position_id is a key).
link_agg AS (
    SELECT decision_id, n_consumptions,
           NOT found AS missing_execution,
           mismatches AS all_mismatches,
           automated, unverified, unknown, settled, executed_at, closed_at,
           [named_execution_id] AS execution_ids,
           [consumption_id] AS consumption_ids,
           position_ids,
           [{_EXECUTION}] AS executions
    FROM links WHERE n_consumptions = 1
    UNION ALL
    SELECT decision_id,
           count(*) AS n_consumptions,
           bool_or(NOT found) AS missing_execution,
           flatten(list(mismatches)) AS all_mismatches,
           bool_or(automated) AS automated,
           bool_or(unverified) AS unverified,
           bool_or(unknown) AS unknown,
           bool_and(settled) AS settled,
           max(executed_at) AS executed_at,
           max(closed_at) AS closed_at,
           list_sort(list(named_execution_id)) AS execution_ids,
           list_sort(list(consumption_id)) AS consumption_ids,
           list_sort(list_distinct(flatten(list(position_ids)))) AS position_ids,
           -- unordered aggregates + list_sort: DuckDB's ordered aggregates are much slower
           list_sort(list({_EXECUTION})) AS executions
    FROM links WHERE n_consumptions > 1 GROUP BY decision_id
),
runs AS (
    SELECT r.decision_id, r.run_id, r.execution_id, r.profile_id, r.run_version, r.status, r.known_at,
           p.horizon_days, vol.value AS volatility, ex.value AS excess_return
    FROM _tm_runs r
    LEFT JOIN raw.benchmark_profiles p ON p.profile_id = r.profile_id
    LEFT JOIN _tm_components vol ON vol.run_id = r.run_id AND vol.component = 'volatility'
    LEFT JOIN _tm_components ex ON ex.run_id = r.run_id AND ex.component = 'excess_return'
    WHERE r.is_primary
),
assembled AS (
    SELECT d.decision_id, d.role_id, d.symbol, d.scenario, d.direction, d.account_id, d.market,
           d.decision_text, d.decided_at, la.executed_at, la.closed_at, ru.known_at AS run_known_at,
           CASE WHEN la.n_consumptions = 1 THEN la.execution_ids[1] END AS execution_id,
           ru.run_id AS primary_run_id,
           CASE WHEN d.reg_role IS NOT NULL AND ru.status = 'complete'
                THEN ru.excess_return END AS excess_return,
           CASE WHEN d.reg_role IS NOT NULL AND ru.status = 'complete'
                THEN d.noise_k * ru.volatility * sqrt(ru.horizon_days) END AS noise_band,
           list_filter(
               [CASE WHEN d.reg_role IS NULL THEN 'unknown_role' END,
                CASE WHEN d.reg_role IS NOT NULL AND d.reg_skill IS DISTINCT FROM d.skill_id
                     THEN 'role_not_declared_by_skill' END,
                CASE WHEN pv.preview_id IS NULL THEN 'no_preview' END,
                CASE WHEN pv.preview_id IS NOT NULL AND la.decision_id IS NULL
                     THEN 'preview_not_consumed' END,
                CASE WHEN la.n_consumptions > 1 THEN 'preview_consumed_multiple' END,
                CASE WHEN la.decision_id IS NULL OR la.missing_execution THEN 'no_execution' END]
               || list_filter({_MISMATCH_ORDER}, lambda f: list_contains(coalesce(la.all_mismatches, []), f))
               || [CASE WHEN la.automated THEN 'automated_source' END,
                   CASE WHEN la.unverified THEN 'unverified_external' END,
                   CASE WHEN la.unknown THEN 'unknown_source' END,
                   CASE WHEN NOT coalesce(la.settled, false) THEN 'not_settled' END,
                   CASE WHEN ru.run_id IS NULL THEN 'no_primary_run' END,
                   CASE WHEN ru.run_id IS NOT NULL AND (ru.status <> 'complete' OR ru.excess_return IS NULL
                             OR ru.volatility IS NULL OR ru.horizon_days IS NULL)
                        THEN 'insufficient_evaluation' END],
               lambda x: x IS NOT NULL) AS reasons,
           {{
               'decision_id': d.decision_id,
               'skill_id': d.skill_id,
               'registry_skill_id': d.reg_skill,
               'preview_id': d.preview_id,
               'preview_found': pv.preview_id IS NOT NULL,
               'consumption_ids': coalesce(la.consumption_ids, []::VARCHAR[]),
               'executions': la.executions,
               'position_ids': coalesce(la.position_ids, []::VARCHAR[]),
               'closed_at': strftime(la.closed_at, '%Y-%m-%dT%H:%M:%S.%fZ'),
               'primary_run': CASE WHEN ru.run_id IS NOT NULL THEN {{
                   'run_id': ru.run_id, 'execution_id': ru.execution_id, 'profile_id': ru.profile_id,
                   'run_version': ru.run_version, 'status': ru.status, 'horizon_days': ru.horizon_days,
                   'excess_return': ru.excess_return, 'volatility': ru.volatility}} END
           }} AS provenance
    FROM d
    LEFT JOIN pv ON pv.decision_id = d.decision_id
    LEFT JOIN link_agg la ON la.decision_id = d.decision_id
    LEFT JOIN runs ru ON ru.decision_id = d.decision_id
)
SELECT *,
       -- when the case reached its status (SPEC section 16): settled, or the chain that ruled it out
       CASE status WHEN 'eligible' THEN greatest(closed_at, run_known_at)
                   WHEN 'pending' THEN NULL
                   ELSE greatest(decided_at, executed_at) END AS known_at
FROM (
    SELECT 'rc_' || left(sha256(decision_id || '|' || role_id), 16) AS case_id,
           *,
           CASE WHEN list_has_any(reasons, {_sql_list(QUARANTINE_REASONS)}) THEN 'quarantined'
                WHEN NOT list_has_all({_sql_list(PENDING_REASONS)}, reasons) THEN 'ineligible'
                WHEN len(reasons) > 0 THEN 'pending'
                ELSE 'eligible' END AS status
    FROM assembled
)
"""


def _expose(con: duckdb.DuckDBPyConnection, view: str, table: str | None, empty: pl.Schema) -> bool:
    """Expose ``table`` as ``view`` (a temp view), or an empty frame when it does not exist (yet).

    Returns True when a frame was registered (to be unregistered), False for a temp view.
    """
    if table is not None and table_exists(con, table):
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM {table}")
        return False
    con.register(view, pl.DataFrame(schema=empty))
    return True


def _release(con: duckdb.DuckDBPyConnection, view: str, registered: bool) -> None:
    if registered:
        con.unregister(view)
    else:
        con.execute(f"DROP VIEW IF EXISTS {view}")


@contextmanager
def _exposed(
    con: duckdb.DuckDBPyConnection, views: dict[str, tuple[str | None, pl.Schema]]
) -> Iterator[None]:
    """``_expose`` every ``view: (table, empty schema)`` for the duration of the block."""
    registered = {}
    try:
        for view, (table, empty) in views.items():
            registered[view] = _expose(con, view, table, empty)
        yield
    finally:
        for view, frame in registered.items():
            _release(con, view, frame)


@contextmanager
def polars_json(con: duckdb.DuckDBPyConnection, name: str, struct_type: duckdb.DuckDBPyType) -> Iterator[str]:
    """A SQL function ``name(struct) -> JSON`` that encodes with Polars, vector by vector.

    The stored provenance has always been Polars' ``struct.json_encode`` text; DuckDB's ``to_json``
    spells some floats differently (``0.00000636`` for ``6.36e-6``), which would change rows whose
    content did not change. DuckDB streams the struct through this function, so no frame of the
    whole table is ever built in Python; the text comes back typed as JSON (no re-parsing).
    """

    def encode(structs: pa.Array) -> pa.Array:
        text = pl.from_arrow(structs).struct.json_encode().to_arrow()  # type: ignore[union-attr]
        return pa.ExtensionArray.from_storage(pa.json_(text.type), text)

    con.create_function(name, encode, [struct_type], "JSON", type="arrow")  # type: ignore[arg-type]
    try:
        yield name
    finally:
        con.remove_function(name)


ADMITTED = "_tm_admitted_cases"

# ``{cases}`` is ADMISSION_SQL. Provenance stays a struct until ``write_cases`` encodes it.
ADMITTED_SQL = """
CREATE OR REPLACE TEMP TABLE {into} AS
SELECT case_id, decision_id, role_id, symbol, scenario, direction, account_id, market, execution_id,
       primary_run_id, decision_text, {outcome} AS outcome, status, reasons,
       status = 'quarantined' AS quarantined, status = 'eligible' AS scoring_eligible,
       provenance, decided_at AS created_at, known_at
FROM ({cases})
"""


def admit(
    con: duckdb.DuckDBPyConnection, registry: pl.DataFrame, as_of: datetime, into: str = ADMITTED
) -> str:
    """Admit every decision that names a role into temp table ``into``; returns ``into``.

    ``con`` exposes the raw landing tables and (when materialized) ``main.evaluation_runs`` /
    ``main.evaluation_components``; ``registry`` is ``registry_frame(...)``. The table has the
    ``ROLE_CASES_DTYPES`` columns but ``updated_at``, in no particular order, with provenance as a
    struct: ``write_cases`` stamps, sorts, encodes and writes them.
    """
    con.register("_tm_roles", registry)
    try:
        with _exposed(
            con,
            {
                "_tm_runs": (tables.EVALUATION_RUNS, _EMPTY_RUNS_DTYPES),
                "_tm_components": (tables.EVALUATION_COMPONENTS, _EMPTY_COMPONENTS_DTYPES),
            },
        ):
            outcome = outcome_sql("excess_return", "noise_band")
            con.execute(ADMITTED_SQL.format(into=into, cases=ADMISSION_SQL, outcome=outcome), [as_of])
    finally:
        con.unregister("_tm_roles")
    return into
