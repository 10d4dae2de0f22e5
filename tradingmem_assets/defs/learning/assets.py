"""Learning-loop assets: learnings, the methodology ladder and the run heartbeat (SPEC section 8).

Each asset recomputes its tables from the landing data and ``as_of``, validates them with Pandera
before writing, and swaps them in one transaction (the ladder's history tables by appending a later
day's rows when the stored ones are unchanged: ``lib.ordered_tables``).
"""

import dagster as dg
import polars as pl

from tradingmem_assets.defs.learning.heartbeat import write_heartbeat
from tradingmem_assets.defs.learning.invariants import (
    LEARNINGS_INVARIANTS,
    METHODOLOGY_LIFECYCLE_EVENTS_INVARIANTS,
    methodologies_schema,
    methodology_cases_schema,
)
from tradingmem_assets.defs.learning.ladder import build_methodology_state
from tradingmem_assets.defs.learning.learnings import (
    LEARNING_DELETIONS_DTYPES,
    LEARNINGS_DTYPES,
    build_learnings,
)
from tradingmem_assets.defs.learning.tiers import load_tool_tiers
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import (
    blocking_check,
    check_result,
    feed_freshness,
    markdown_counts,
    table_asset,
    table_metadata,
    table_spec,
)
from tradingmem_assets.lib.ordered_tables import write_in_order
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.validation import validate
from tradingmem_assets.lib.warehouse import (
    ensure_table,
    read_frame,
    read_table,
    replace_table,
    scalar,
    transaction,
)
from tradingmem_assets.settings import SETTINGS

# Validated when the code location loads: a broken tools.yaml stops the load with its message.
TOOL_TIERS = load_tool_tiers(SETTINGS.tools_file)

LEARNINGS_INVARIANTS_CHECK = "learnings_invariants"
METHODOLOGIES_INVARIANTS_CHECK = "methodologies_invariants"
METHODOLOGY_CASES_INVARIANTS_CHECK = "methodology_cases_invariants"
LIFECYCLE_EVENTS_INVARIANTS_CHECK = "methodology_lifecycle_events_invariants"
# what the assets of this module write, and the checks they evaluate as they write (tuples: the
# defs loader would take a module-level list of AssetSpec for assets of their own)
LEARNINGS_SPECS = (
    table_spec(
        "learnings",
        "Reusable tool sequences reviewed from agent turns, deduplicated, with feedback.",
        deps=[raw_key("agent_turns"), raw_key("learning_feedback")],
    ),
    table_spec(
        "learning_reviews",
        "One review per agent turn: skipped, rejected, below threshold, created or merged.",
        deps=[raw_key("agent_turns")],
    ),
)
LEARNINGS_CHECK_SPECS = (
    blocking_check(
        LEARNINGS_INVARIANTS_CHECK,
        "learnings",
        "No secret in any stored learning; ids, counters, weight and tiers are consistent.",
    ),
)
METHODOLOGY_INPUTS = [
    raw_key(t)
    for t in ("institution_runs", "institution_role_outputs", "methodology_injections", "price_bars")
]
_DESCRIPTIONS = {
    "institution_output_rejects": "Institution role outputs that failed their declared schema, with reasons.",
    "institution_reflections": "Every institution run scored at each elapsed ladder window (1/7/30 days).",
    "methodologies": "Deduplicated methodologies, quarantined until Wilson-bounded evidence graduates them.",
    "methodology_lifecycle_events": "created / merged / rejected_* / outcome_recorded / graduated / demoted.",
    "methodology_cases": "One outcome per (scheduled run, window, cited methodology).",
    "methodology_case_hints": "Methodology injections into runs, with injectability at injection time.",
}
LADDER_SPECS = tuple(
    table_spec(key, _DESCRIPTIONS[key], deps=METHODOLOGY_INPUTS) for key in tables.METHODOLOGY_ASSETS
)
LADDER_CHECK_SPECS = (
    blocking_check(
        METHODOLOGIES_INVARIANTS_CHECK,
        "methodologies",
        "No injected text stored; graduated only with confidence >= threshold and min uses.",
    ),
    blocking_check(
        METHODOLOGY_CASES_INVARIANTS_CHECK,
        "methodology_cases",
        "Only scheduled runs feed methodologies; one case per (run, window, methodology).",
    ),
    blocking_check(
        LIFECYCLE_EVENTS_INVARIANTS_CHECK,
        "methodology_lifecycle_events",
        "Unique event ids and events from the spec's vocabulary.",
    ),
)


def _failure(what: str, validations: list) -> dg.Failure:
    return dg.Failure(
        description=f"{what} would break their invariants; nothing was written",
        metadata={
            "summary": dg.MetadataValue.md("\n\n".join(v.summary() for v in validations if not v.passed))
        },
    )


# --------------------------------------------------------------------------------------- learnings


@dg.multi_asset(group_name=tables.LEARNING_GROUP, specs=LEARNINGS_SPECS, check_specs=LEARNINGS_CHECK_SPECS)
def learnings(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    with warehouse.connect() as con:
        if not SETTINGS.learning_enabled:
            # LEARNING_ENABLED=false: no review, no write; the stored table (if any) is still checked.
            current = read_table(con, tables.LEARNINGS, pl.DataFrame(schema=LEARNINGS_DTYPES))
            validation = validate(LEARNINGS_INVARIANTS, current)
            context.log.info("LEARNING_ENABLED=false: learnings are not reviewed nor written")
            for key in tables.LEARNINGS_ASSETS:
                yield dg.MaterializeResult(
                    asset_key=key,
                    metadata={"learning_enabled": False, "written": False, "as_of": as_of.isoformat()},
                )
            yield check_result(LEARNINGS_INVARIANTS_CHECK, validation, dg.AssetKey("learnings"))
            return
        with transaction(con):
            ensure_table(con, tables.LEARNING_DELETIONS, pl.DataFrame(schema=LEARNING_DELETIONS_DTYPES))
        turns = read_frame(
            con,
            "SELECT turn_id, started_at, user_message, tool_calls, completed, explicit_learn "
            "FROM raw.agent_turns",
        )
        feedback = read_frame(
            con, "SELECT feedback_id, learning_id, turn_id, adopted, success, ts FROM raw.learning_feedback"
        )
        deletions = read_table(con, tables.LEARNING_DELETIONS)
        build = build_learnings(
            turns,
            feedback,
            deletions,
            TOOL_TIERS,
            as_of=as_of,
            min_calls=SETTINGS.learning_min_calls,
            threshold=SETTINGS.learning_score_threshold,
        )
        validation = validate(LEARNINGS_INVARIANTS, build.learnings)
        if not validation.passed:
            raise _failure("learnings", [validation])
        with transaction(con):
            replace_table(con, tables.LEARNINGS, build.learnings)
            replace_table(con, tables.LEARNING_REVIEWS, build.reviews)
    outcomes = build.reviews.group_by("outcome").len().sort("outcome").rows()
    feedback_counts = build.feedback_counts()
    orphans = build.feedback.filter(pl.col("status").is_in(["unknown_learning", "learning_deleted"]))
    yield dg.MaterializeResult(
        asset_key="learnings",
        metadata={
            **table_metadata(tables.LEARNINGS, build.learnings),
            "as_of": as_of.isoformat(),
            "score_threshold": SETTINGS.learning_score_threshold,
            "min_calls": SETTINGS.learning_min_calls,
            "tombstoned": deletions.height,
            "feedback": markdown_counts(sorted(feedback_counts.items())),
            "feedback_without_learning": orphans.height,
            "feedback_without_learning_ids": dg.MetadataValue.md(
                "\n".join(
                    f"- `{f}` -> `{lid}` ({s})"
                    for f, lid, s in orphans.select("feedback_id", "learning_id", "status").head(20).rows()
                )
                or "(none)"
            ),
        },
        check_results=[check_result(LEARNINGS_INVARIANTS_CHECK, validation, dg.AssetKey("learnings"))],
    )
    yield dg.MaterializeResult(
        asset_key="learning_reviews",
        metadata={
            **table_metadata(tables.LEARNING_REVIEWS, build.reviews),
            "outcomes": markdown_counts(outcomes),
        },
    )


# --------------------------------------------------------------------------------------- methodologies


@dg.multi_asset(group_name=tables.LEARNING_GROUP, specs=LADDER_SPECS, check_specs=LADDER_CHECK_SPECS)
def methodology_ladder(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    with warehouse.connect() as con:
        state = build_methodology_state(
            con,
            as_of,
            windows=SETTINGS.reflection_windows_days,
            threshold=SETTINGS.methodology_injection_threshold,
            min_uses=SETTINGS.methodology_min_uses,
        )
        m_validation = validate(
            methodologies_schema(SETTINGS.methodology_injection_threshold, SETTINGS.methodology_min_uses),
            state.methodologies,
        )
        cases_with_kind = state.cases.join(
            state.reflections.select("run_id", "kind").unique(), on="run_id", how="left"
        )
        c_validation = validate(methodology_cases_schema(SETTINGS.reflection_windows_days), cases_with_kind)
        e_validation = validate(METHODOLOGY_LIFECYCLE_EVENTS_INVARIANTS, state.events)
        validations = [m_validation, c_validation, e_validation]
        if not all(v.passed for v in validations):
            raise _failure("methodology tables", validations)
        tables = {
            "institution_output_rejects": state.output_rejects,
            "institution_reflections": state.reflections,
            "methodologies": state.methodologies,
            "methodology_lifecycle_events": state.events,
            "methodology_cases": state.cases,
            "methodology_case_hints": state.hints,
        }
        with transaction(con):
            written = {name: write_in_order(con, f"main.{name}", frame) for name, frame in tables.items()}

    events = state.events.group_by("event").len().sort("event").rows()
    graduated = int((state.methodologies.get_column("quarantine") == 0).sum())
    extra = {
        "institution_output_rejects": {
            "reasons": markdown_counts(
                state.output_rejects.group_by("reason").len().sort("len", descending=True).head(10).rows()
            ),
        },
        "institution_reflections": {
            "by_status": markdown_counts(state.reflections.group_by("status").len().sort("status").rows()),
            "windows_days": ", ".join(str(w) for w in SETTINGS.reflection_windows_days),
        },
        "methodologies": {
            "graduated": graduated,
            "quarantined": state.methodologies.height - graduated,
            "injection_threshold": SETTINGS.methodology_injection_threshold,
            "min_uses": SETTINGS.methodology_min_uses,
        },
        "methodology_lifecycle_events": {"by_event": markdown_counts(events)},
        "methodology_cases": {
            "applied": int(state.cases.get_column("applied").sum()),
            "not_applied": int((~state.cases.get_column("applied")).sum()),
        },
        "methodology_case_hints": {
            "injectable_at_injection": int(state.hints.get_column("injectable_at_injection").sum()),
        },
    }
    checks = {
        "methodologies": [
            check_result(METHODOLOGIES_INVARIANTS_CHECK, m_validation, dg.AssetKey("methodologies"))
        ],
        "methodology_cases": [
            check_result(METHODOLOGY_CASES_INVARIANTS_CHECK, c_validation, dg.AssetKey("methodology_cases"))
        ],
        "methodology_lifecycle_events": [
            check_result(
                LIFECYCLE_EVENTS_INVARIANTS_CHECK, e_validation, dg.AssetKey("methodology_lifecycle_events")
            )
        ],
    }
    for name, frame in tables.items():
        yield dg.MaterializeResult(
            asset_key=name,
            metadata={
                **table_metadata(f"main.{name}", frame),
                "as_of": as_of.isoformat(),
                "written": written[name],
                **extra[name],
            },
            check_results=checks.get(name, []),
        )


# --------------------------------------------------------------------------------------- heartbeat


@table_asset(
    tables.HEARTBEAT_ASSET,
    group=tables.LEARNING_GROUP,
    deps=[*tables.LEARNINGS_ASSETS, *tables.METHODOLOGY_ASSETS],
    description="Heartbeat of the learning loop: one row per learning run (ok here, failed from a hook).",
    freshness_policy=feed_freshness(),
)
def methodology_cron_runs(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    detail = {
        "as_of": warehouse.as_of_ts.isoformat(),
        "learning_enabled": SETTINGS.learning_enabled,
    }
    run_id = context.run.run_id
    with warehouse.connect() as con:
        write_heartbeat(
            con,
            run_id=run_id,
            job_name=context.run.job_name,
            status="ok",
            as_of=warehouse.as_of_ts,
            detail=detail,
        )
        rows = scalar(con, f"SELECT count(*) FROM {tables.METHODOLOGY_CRON_RUNS}")
        ok = scalar(con, f"SELECT count(*) FROM {tables.METHODOLOGY_CRON_RUNS} WHERE status = 'ok'")
        status = scalar(con, f"SELECT status FROM {tables.METHODOLOGY_CRON_RUNS} WHERE run_id = ?", [run_id])
    return dg.MaterializeResult(
        metadata={
            "dagster/table_name": tables.METHODOLOGY_CRON_RUNS,
            "dagster/row_count": rows,
            "ok_heartbeats": ok,
            "this_run": status,
            "detail": dg.MetadataValue.json(detail),
        }
    )
