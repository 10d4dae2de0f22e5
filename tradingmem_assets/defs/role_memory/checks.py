"""Blocking checks of Role Memory: the invariants of SPEC sections 5 and 6, re-read from the stored tables.

The assets validate the same schemas before writing; these checks read what is actually stored
(and the execution chain it must agree with), so a hand-edited table is caught and stops
everything downstream in the run. Tables stream through Pandera in chunks (``validate_relation``).
"""

import dagster as dg
import polars as pl

from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.defs.role_memory import invariants as schemas
from tradingmem_assets.defs.role_memory.chain import decision_coverage, with_chain
from tradingmem_assets.defs.role_memory.invariants import validate_relation
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import check_result
from tradingmem_assets.lib.validation import validate
from tradingmem_assets.lib.warehouse import read_frame, table_exists

ROLE_CASES_INVARIANTS_CHECK = "role_cases_invariants"
ROLE_CASES_COVERAGE_CHECK = "every_role_decision_exactly_once"
ROLE_REFLECTIONS_INVARIANTS_CHECK = "role_reflections_invariants"
ROLE_STATS_CONSISTENT_CHECK = "role_stats_consistent"


def _missing(check_name: str, table: str) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name=check_name,
        passed=False,
        metadata={"error": dg.MetadataValue.text(f"{table} does not exist: materialize it first")},
    )


@dg.asset_check(
    asset="role_cases",
    name=ROLE_CASES_INVARIANTS_CHECK,
    blocking=True,
    description="eligible <=> no reasons <=> status eligible; quarantined => not eligible; "
    "eligible => manual source (verified if external) and no automation flag, read from the chain.",
)
def role_cases_invariants(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        if not table_exists(con, tables.ROLE_CASES):
            return _missing(ROLE_CASES_INVARIANTS_CHECK, tables.ROLE_CASES)
        validation = validate_relation(
            schemas.ROLE_CASES_INVARIANTS, with_chain(con), schemas.ROLE_CASES_OPAQUE
        )
    return check_result(ROLE_CASES_INVARIANTS_CHECK, validation)


@dg.asset_check(
    asset="role_cases",
    name=ROLE_CASES_COVERAGE_CHECK,
    blocking=True,
    description="Every decision that names a role has exactly one case, and nothing else has one.",
)
def every_role_decision_exactly_once(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        if not table_exists(con, tables.ROLE_CASES):
            return _missing(ROLE_CASES_COVERAGE_CHECK, tables.ROLE_CASES)
        coverage = decision_coverage(con, warehouse.as_of_ts)
        validation = validate_relation(schemas.DECISION_COVERAGE_INVARIANTS, coverage)
    return check_result(ROLE_CASES_COVERAGE_CHECK, validation)


@dg.asset_check(
    asset="role_reflections",
    name=ROLE_REFLECTIONS_INVARIANTS_CHECK,
    blocking=True,
    description="Known classes; a lesson (<= 280 chars) exactly for missing_data and logic_error.",
)
def role_reflections_invariants(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        if not table_exists(con, tables.ROLE_REFLECTIONS):
            return _missing(ROLE_REFLECTIONS_INVARIANTS_CHECK, tables.ROLE_REFLECTIONS)
        reflections = con.sql("SELECT * FROM main.role_reflections")
        validation = validate_relation(schemas.ROLE_REFLECTIONS_INVARIANTS, reflections)
    return check_result(ROLE_REFLECTIONS_INVARIANTS_CHECK, validation)


@dg.asset_check(
    asset="role_stats",
    name=ROLE_STATS_CONSISTENT_CHECK,
    blocking=False,
    description="Per role, status counts add up to the cases and outcomes add up to the scored cases.",
)
def role_stats_consistent(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        if not table_exists(con, tables.ROLE_STATS):
            return _missing(ROLE_STATS_CONSISTENT_CHECK, tables.ROLE_STATS)
        frame = read_frame(con, "SELECT * FROM main.role_stats ORDER BY role_id")
    return check_result(
        ROLE_STATS_CONSISTENT_CHECK,
        validate(schemas.ROLE_STATS_INVARIANTS, frame.cast({"win_rate": pl.Float64})),
    )
