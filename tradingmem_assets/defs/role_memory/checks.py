"""Blocking checks of Role Memory: the invariants of SPEC sections 5 and 6, re-read from the stored tables.

The assets validate the same schemas before writing; these checks read what is actually stored
(and the execution chain it must agree with), so a hand-edited table is caught and stops
everything downstream in the run. Tables stream through Pandera in batches
(``lib.validation.validate_query``).
"""

from collections.abc import Callable
from datetime import datetime

import dagster as dg
import duckdb
import polars as pl

from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.defs.role_memory import invariants as schemas
from tradingmem_assets.defs.role_memory.chain import CHAIN_TABLES, decision_coverage, with_chain
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import check_result, validated_at_write_metadata
from tradingmem_assets.lib.validation import Validation, validate, validate_query, validated_by
from tradingmem_assets.lib.warehouse import read_frame, table_exists

ROLE_CASES_INVARIANTS_CHECK = "role_cases_invariants"
ROLE_CASES_COVERAGE_CHECK = "every_role_decision_exactly_once"
ROLE_REFLECTIONS_INVARIANTS_CHECK = "role_reflections_invariants"
ROLE_STATS_CONSISTENT_CHECK = "role_stats_consistent"


def _stored_check(
    name: str,
    asset: str,
    table: str,
    description: str,
    validate_stored: Callable[[duckdb.DuckDBPyConnection, datetime], Validation],
    blocking: bool = True,
    reads: tuple[str, ...] | None = None,
) -> dg.AssetChecksDefinition:
    """A check of ``asset`` that validates what is stored, once ``table`` exists (else it fails).
    With ``reads`` (the other tables it reads), the asset validates the same as it writes and
    records it (``validation.record_validated``): while none of them changed since, the check
    does not validate them again."""

    @dg.asset_check(asset=asset, name=name, blocking=blocking, description=description)
    def _check(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        with warehouse.connect() as con:
            if not table_exists(con, table):
                return dg.AssetCheckResult(
                    check_name=name,
                    passed=False,
                    metadata={
                        "error": dg.MetadataValue.text(f"{table} does not exist: materialize it first")
                    },
                )
            as_of = warehouse.as_of_ts
            by_run = None if reads is None else validated_by(con, table, reads, as_of, warehouse.digests)
            if by_run is not None:
                return dg.AssetCheckResult(
                    check_name=name,
                    passed=True,
                    metadata=validated_at_write_metadata(table, by_run),
                )
            validation = validate_stored(con, as_of)
        return check_result(name, validation)

    return _check


role_cases_invariants = _stored_check(
    ROLE_CASES_INVARIANTS_CHECK,
    "role_cases",
    tables.ROLE_CASES,
    "eligible <=> no reasons <=> status eligible; quarantined => not eligible; "
    "eligible => manual source (verified if external) and no automation flag, read from the chain.",
    lambda con, _as_of: validate_query(con, schemas.ROLE_CASES_INVARIANTS, with_chain())[0],
    reads=CHAIN_TABLES,
)
every_role_decision_exactly_once = _stored_check(
    ROLE_CASES_COVERAGE_CHECK,
    "role_cases",
    tables.ROLE_CASES,
    "Every decision that names a role has exactly one case, and nothing else has one.",
    lambda con, as_of: validate_query(
        con, schemas.DECISION_COVERAGE_INVARIANTS, decision_coverage(), {"as_of": as_of}
    )[0],
    reads=CHAIN_TABLES,
)
role_reflections_invariants = _stored_check(
    ROLE_REFLECTIONS_INVARIANTS_CHECK,
    "role_reflections",
    tables.ROLE_REFLECTIONS,
    "Known classes; a lesson (<= 280 chars) exactly for missing_data and logic_error.",
    lambda con, _as_of: validate_query(
        con, schemas.ROLE_REFLECTIONS_INVARIANTS, "SELECT * FROM main.role_reflections"
    )[0],
)
role_stats_consistent = _stored_check(
    ROLE_STATS_CONSISTENT_CHECK,
    "role_stats",
    tables.ROLE_STATS,
    "Per role, status counts add up to the cases and outcomes add up to the scored cases.",
    lambda con, _as_of: validate(
        schemas.ROLE_STATS_INVARIANTS,
        read_frame(con, "SELECT * FROM main.role_stats ORDER BY role_id").cast({"win_rate": pl.Float64}),
    ),
    blocking=False,
)
