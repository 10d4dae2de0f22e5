"""The SQL of the admission (``admission.admit``): every decision's execution chain, in stages.

Each stage is a temp table (``_adm_*``) of only the columns the next stages read, so DuckDB holds
one stage's pipeline at a time and spills finished stages under the connection's
``memory_limit``: one query over the whole chain ran out of memory at SF 30 under a 3 GB cap,
the stages pass at SF 10 under 1 GB. The cases themselves are the temp view ``{into}`` over the
last stages: read once, by the write of ``role_cases``, they are never stored in between (a temp
table of them, wide and uncompressed, was most of the admission's time at SF 30). ``$as_of`` is
the run's instant; ``{outcome}`` is ``reflection.outcome_sql``; ``{decisions}`` and ``{runs}`` keep
the decisions and the runs to admit (``lib.basis.touched_only``: all of them in a full build).
"""

from tradingmem_assets.defs.role_memory.reasons import PENDING_REASONS, QUARANTINE_REASONS
from tradingmem_assets.lib.vocabulary import AUTOMATED_SOURCES, LINK_FIELDS, MANUAL_SOURCES


def _sql_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _norm(expr: str) -> str:
    return f"replace(replace(lower(trim({expr})), ' ', '_'), '-', '_')"


_DECISION_COLUMNS = ", ".join(
    f"d.{c}"
    for c in dict.fromkeys(
        (
            "decision_id",
            "role_id",
            "skill_id",
            "preview_id",
            *LINK_FIELDS,
            "scenario",
            "decision_text",
            "decided_at",
        )
    )
)
_MISMATCH_ITEMS = ",\n".join(
    f"CASE WHEN e.{f} IS DISTINCT FROM pv.{f} THEN 'link_mismatch:{f}' END" for f in LINK_FIELDS
)
_MISMATCH_ORDER = _sql_list(tuple(f"link_mismatch:{f}" for f in LINK_FIELDS))
# a struct literal; its braces doubled for the script's own ``format``
_EXECUTION = (
    "{{'execution_id': named_execution_id, 'found': found, 'source': source, "
    "'source_verified': source_verified, 'automation_flag': automation_flag}}"
)

# ``{{`` / ``}}`` are the braces of DuckDB struct literals (the script is formatted once more)
ADMISSION_SCRIPT = f"""
CREATE OR REPLACE TEMP TABLE _adm_d AS
SELECT {_DECISION_COLUMNS}, r.role_id AS reg_role, r.skill_id AS reg_skill, r.noise_k
FROM raw.trading_decisions d
LEFT JOIN _tm_roles r ON r.role_id = d.role_id
WHERE d.role_id IS NOT NULL AND d.decided_at <= $as_of AND {{decisions}};

-- the decision's own preview, with the fields its executions must agree with
CREATE OR REPLACE TEMP TABLE _adm_pv AS
SELECT p.preview_id, {", ".join(f"d.{f}" for f in LINK_FIELDS)}
FROM _adm_d d JOIN raw.trade_previews p
  ON p.preview_id = d.preview_id AND p.decision_id = d.decision_id AND p.created_at <= $as_of;

CREATE OR REPLACE TEMP TABLE _adm_pos AS
SELECT execution_id,
       bool_and(status IN ('closed', 'liquidated') AND closed_at IS NOT NULL AND closed_at <= $as_of)
           AS settled,
       max(closed_at) FILTER (WHERE closed_at <= $as_of) AS closed_at,
       list_sort(list(position_id)) AS position_ids
FROM raw.position_lifecycles
WHERE opened_at <= $as_of
GROUP BY execution_id;

-- preview_id and consumption_id are keys of their raw tables: a decision has one link per consumption
CREATE OR REPLACE TEMP TABLE _adm_consumed AS
SELECT preview_id, count(*) AS n_consumptions
FROM raw.preview_consumptions WHERE consumed_at <= $as_of GROUP BY preview_id;

CREATE OR REPLACE TEMP TABLE _adm_links AS
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
FROM _adm_pv pv
JOIN raw.preview_consumptions c ON c.preview_id = pv.preview_id AND c.consumed_at <= $as_of
JOIN _adm_consumed n ON n.preview_id = pv.preview_id
LEFT JOIN raw.trade_executions e ON e.execution_id = c.execution_id AND e.executed_at <= $as_of
LEFT JOIN _adm_pos pos ON pos.execution_id = e.execution_id;

-- Nearly every decision has exactly one consumption: its link row already is the aggregate (the
-- list aggregates below are slow and memory hungry at scale). position_ids of one execution are
-- already sorted and distinct (position_id is a key).
CREATE OR REPLACE TEMP TABLE _adm_link_agg AS
SELECT decision_id, n_consumptions,
       NOT found AS missing_execution,
       mismatches AS all_mismatches,
       automated, unverified, unknown, settled, executed_at, closed_at,
       [named_execution_id] AS execution_ids,
       [consumption_id] AS consumption_ids,
       position_ids,
       [{_EXECUTION}] AS executions
FROM _adm_links WHERE n_consumptions = 1
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
FROM _adm_links WHERE n_consumptions > 1 GROUP BY decision_id;

-- the primary runs, with the two measured numbers an outcome reads
CREATE OR REPLACE TEMP TABLE _adm_runs AS
SELECT r.decision_id, r.run_id, r.execution_id, r.profile_id, r.run_version, r.status, r.known_at,
       p.horizon_days, r.volatility, r.excess_return
FROM _tm_runs r
LEFT JOIN raw.benchmark_profiles p ON p.profile_id = r.profile_id
WHERE r.is_primary AND {{runs}};

CREATE OR REPLACE TEMP VIEW {{into}} AS
WITH assembled AS (
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
           {{{{
               'decision_id': d.decision_id,
               'skill_id': d.skill_id,
               'registry_skill_id': d.reg_skill,
               'preview_id': d.preview_id,
               'preview_found': pv.preview_id IS NOT NULL,
               'consumption_ids': coalesce(la.consumption_ids, []::VARCHAR[]),
               'executions': la.executions,
               'position_ids': coalesce(la.position_ids, []::VARCHAR[]),
               'closed_at': strftime(la.closed_at, '%Y-%m-%dT%H:%M:%S.%fZ'),
               'primary_run': CASE WHEN ru.run_id IS NOT NULL THEN {{{{
                   'run_id': ru.run_id, 'execution_id': ru.execution_id, 'profile_id': ru.profile_id,
                   'run_version': ru.run_version, 'status': ru.status, 'horizon_days': ru.horizon_days,
                   'excess_return': ru.excess_return, 'volatility': ru.volatility}}}} END
           }}}} AS provenance
    FROM _adm_d d
    LEFT JOIN _adm_pv pv ON pv.decision_id = d.decision_id
    LEFT JOIN _adm_link_agg la ON la.decision_id = d.decision_id
    LEFT JOIN _adm_runs ru ON ru.decision_id = d.decision_id
),
cases AS (
    SELECT 'rc_' || left(sha256(decision_id || '|' || role_id), 16) AS case_id,
           *,
           CASE WHEN list_has_any(reasons, {_sql_list(QUARANTINE_REASONS)}) THEN 'quarantined'
                WHEN NOT list_has_all({_sql_list(PENDING_REASONS)}, reasons) THEN 'ineligible'
                WHEN len(reasons) > 0 THEN 'pending'
                ELSE 'eligible' END AS status
    FROM assembled
)
SELECT case_id, decision_id, role_id, symbol, scenario, direction, account_id, market, execution_id,
       primary_run_id, decision_text, {{outcome}} AS outcome, status, reasons,
       status = 'quarantined' AS quarantined, status = 'eligible' AS scoring_eligible,
       provenance, decided_at AS created_at,
       -- when the case reached its status (SPEC section 16): settled, or the chain that ruled it out
       CASE status WHEN 'eligible' THEN greatest(closed_at, run_known_at)
                   WHEN 'pending' THEN NULL
                   ELSE greatest(decided_at, executed_at) END AS known_at
FROM cases;
"""
