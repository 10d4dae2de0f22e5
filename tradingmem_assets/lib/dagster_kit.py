"""The one Dagster-side helper module: metadata the UI renders well, check results from Pandera
validations, and the factory of checks that re-read a stored table."""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import dagster as dg
import duckdb
import pandera.polars as pa
import polars as pl

from tradingmem_assets.lib.dtypes import as_utc
from tradingmem_assets.lib.tables import main_table
from tradingmem_assets.lib.validation import Validation, validate, validated_by
from tradingmem_assets.lib.warehouse import read_frame, table_exists


def feed_freshness() -> dg.FreshnessPolicy:
    """A feed with no new materialization for TRADINGMEM_FRESHNESS_HOURS (26 h) shows stale in the UI."""
    from tradingmem_assets.settings import SETTINGS

    return dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=SETTINGS.freshness_hours))


# metadata numbers are for people: no float shows more decimals than this (SPEC section 18)
METADATA_DECIMALS = 4


def rounded(value, decimals: int = METADATA_DECIMALS):
    """A metadata value with every float rounded (plain floats, float metadata, JSON contents)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return round(value, decimals)
    if isinstance(value, dg.FloatMetadataValue):
        return dg.MetadataValue.float(round(value.value, decimals)) if value.value is not None else value
    if isinstance(value, dg.JsonMetadataValue):
        return dg.MetadataValue.json(rounded(value.data, decimals))
    if type(value) is dict:
        return {k: rounded(v, decimals) for k, v in value.items()}
    if type(value) in (list, tuple):
        return [rounded(v, decimals) for v in value]
    return value


def rounded_metadata(metadata: dict, decimals: int = METADATA_DECIMALS) -> dict:
    """Materialization or check metadata with every number rounded for people."""
    return {k: rounded(v, decimals) for k, v in metadata.items()}


def score_metadata(value: float) -> dg.MetadataValue:
    """A 0-100 score as float metadata the UI plots across materializations, to 2 decimals."""
    return dg.MetadataValue.float(round(float(value), 2))


def column_schema(table_name: str) -> dg.TableSchema | None:
    """The declared columns of a stored table, with their descriptions (defs/<domain>/columns.toml)."""
    from tradingmem_assets.docs_tables import TABLE_DOCS

    doc = TABLE_DOCS.get(table_name)
    if doc is None:
        return None
    return dg.TableSchema(columns=[dg.TableColumn(c, t, description=d) for c, t, d in doc.columns])


def declared_metadata(asset_key: str) -> dict:
    """What an asset declares in its definition, so the UI shows it before the first
    materialization: its table and that table's column schema with descriptions."""
    from tradingmem_assets.docs_tables import asset_table

    table = asset_table(asset_key)
    schema = column_schema(table)
    if schema is None:
        raise KeyError(f"{table} (asset {asset_key}) has no columns declared in defs/<domain>/columns.toml")
    return {"dagster/table_name": table, "dagster/column_schema": schema}


TABLE_KINDS = frozenset({"duckdb", "polars"})
# a table written by SQL alone
DUCKDB_ONLY = frozenset({"duckdb"})


def table_asset(name: str, *, group: str | None = None, kinds: frozenset[str] = TABLE_KINDS, **kwargs):
    """``dg.asset`` for an asset stored as the warehouse table ``name``: it declares that table's
    columns (``declared_metadata``), its asset group and its kinds; ``kwargs`` go to ``dg.asset``."""
    return dg.asset(name=name, metadata=declared_metadata(name), group_name=group, kinds=set(kinds), **kwargs)


def table_spec(
    key: str | dg.AssetKey,
    description: str,
    *,
    deps: Sequence = (),
    kinds: frozenset[str] = TABLE_KINDS,
    **kwargs,
) -> dg.AssetSpec:
    """One output of a ``dg.multi_asset`` stored as the warehouse table of asset ``key``: it declares
    that table's columns (``declared_metadata``) and its kinds, like ``table_asset``; ``kwargs`` go
    to ``dg.AssetSpec``."""
    name = key.to_user_string() if isinstance(key, dg.AssetKey) else key
    return dg.AssetSpec(
        key,
        metadata=declared_metadata(name),
        deps=list(deps),
        kinds=set(kinds),
        description=description,
        **kwargs,
    )


def blocking_check(name: str, asset: str | dg.AssetKey, description: str) -> dg.AssetCheckSpec:
    """The spec of a check an asset evaluates as it writes, blocking what runs downstream of it."""
    return dg.AssetCheckSpec(name, asset=asset, blocking=True, description=description)


def table_metadata(
    table_name: str, frame: pl.DataFrame | pl.Schema | None = None, row_count: int | None = None
) -> dict:
    """A table's name, and given its ``frame`` (or only its dtypes and ``row_count``) its row count
    and column schema."""
    if isinstance(frame, pl.Schema):
        frame = pl.DataFrame(schema=frame)
    meta: dict = {"dagster/table_name": table_name}
    if frame is not None:
        meta["dagster/row_count"] = frame.height if row_count is None else row_count
        meta["dagster/column_schema"] = column_schema(table_name) or dg.TableSchema(
            columns=[dg.TableColumn(name, str(dtype)) for name, dtype in frame.schema.items()]
        )
    elif row_count is not None:
        meta["dagster/row_count"] = row_count
    return meta


def validation_metadata(validation) -> dict:
    """A validation's failures as metadata: their count, a summary and the first failure cases."""
    meta: dict = {
        "violations": validation.failure_cases.height,
        "summary": dg.MetadataValue.md(validation.summary()),
    }
    if not validation.passed:
        cases = validation.failure_cases.head(20)
        meta["failure_cases"] = dg.MetadataValue.md(markdown_table(cases))
    return meta


def markdown_table(frame: pl.DataFrame) -> str:
    """A small frame as a markdown table (floats rounded for people)."""
    if frame.height == 0:
        return "(none)"
    rounded = frame.with_columns(pl.col(pl.Float32, pl.Float64).round(4))
    head = "| " + " | ".join(rounded.columns) + " |"
    rule = "|" + "---|" * len(rounded.columns)
    rows = ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rounded.iter_rows()]
    return "\n".join([head, rule, *rows])


def markdown_counts(pairs) -> dg.MetadataValue:
    """``- `key`: n`` lines for counts (e.g. rows by status)."""
    return dg.MetadataValue.md("\n".join(f"- `{k}`: {n}" for k, n in pairs) or "(none)")


def validated_at_write_metadata(table: str, run_id: str) -> dict:
    """A stored check's metadata when its table is stored exactly as validated (``validated_by``)."""
    return {
        "violations": 0,
        "rows": 0,
        "validated_at_write_by_run": run_id,
        "note": f"{table} holds exactly what run {run_id} wrote after validating every row (the same "
        "content digests, of it and of what its invariants read: no change since, by a run or by "
        "hand): not validated again",
    }


def check_result(check_name: str, validation, asset_key: dg.AssetKey | None = None) -> dg.AssetCheckResult:
    """An asset check result from a ``lib.validation.Validation``, with its failures as metadata."""
    return dg.AssetCheckResult(
        check_name=check_name,
        asset_key=asset_key,
        passed=validation.passed,
        metadata=validation_metadata(validation),
    )


@dataclass(frozen=True)
class StoredTableCheck:
    """An invariant re-read from the stored table, so a hand edit of the warehouse fails a check.

    ``invariants`` is the Pandera schema, or builds it for the instant the table was built at (the
    warehouse's latest learning ``as_of``). ``read`` selects what the invariants need: SQL (read
    with every timestamp as UTC), or a function of the connection and that instant (the table
    joined with the facts it must agree with); by default the whole ``table``, which is
    ``main.<asset>`` unless named.
    """

    name: str
    asset: str
    description: str
    invariants: pa.DataFrameSchema | Callable[[datetime], pa.DataFrameSchema]
    read: str | Callable[[duckdb.DuckDBPyConnection, datetime], pl.DataFrame] = ""
    table: str = ""
    # for a table too large for one frame: validates it piece by piece, (validation, rows validated)
    validate_stored: Callable[[duckdb.DuckDBPyConnection, datetime], tuple[Validation, int]] | None = None
    blocking: bool = True
    # True when the invariants read nothing but the table and its asset validates every row as it
    # writes (``validation.record_validated``): a table holding exactly what was validated is not
    # validated again
    validated_at_write: bool = False
    # False while the asset is switched off by a process setting: then an absent table is expected
    enabled: Callable[[], bool] = lambda: True

    @property
    def stored_table(self) -> str:
        return self.table or main_table(self.asset)

    def frame(self, con: duckdb.DuckDBPyConnection, built_at: datetime) -> pl.DataFrame:
        if callable(self.read):
            return self.read(con, built_at)
        return as_utc(read_frame(con, self.read or f"SELECT * FROM {self.stored_table}"))

    def schema(self, built_at: datetime) -> pa.DataFrameSchema:
        # a Pandera schema is callable too (it validates): tell the two apart by type
        if isinstance(self.invariants, pa.DataFrameSchema):
            return self.invariants
        return self.invariants(built_at)

    def validation(self, con: duckdb.DuckDBPyConnection, built_at: datetime) -> tuple[Validation, int]:
        """The stored table's invariants checked, and the rows read."""
        if self.validate_stored is not None:
            return self.validate_stored(con, built_at)
        frame = self.frame(con, built_at)
        return validate(self.schema(built_at), frame), frame.height


def stored_table_checks(checks: list[StoredTableCheck]) -> list[dg.AssetChecksDefinition]:
    """One ``@asset_check`` per stored-table invariant: runs after its asset materializes, alone
    from the UI, and in ``warehouse_checks_job``; it never raises (a failure is a failed check)."""
    return [_stored_table_check(spec) for spec in checks]


def _stored_table_check(spec: StoredTableCheck) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        name=spec.name,
        asset=spec.asset,
        blocking=spec.blocking,
        description=spec.description,
        required_resource_keys={"warehouse"},
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        from tradingmem_assets.defs.operations.ledger import learning_bound

        warehouse = context.resources.warehouse
        try:
            with warehouse.connect() as con:
                if not table_exists(con, spec.stored_table):
                    if not spec.enabled():
                        return dg.AssetCheckResult(
                            passed=True, metadata={"note": f"{spec.asset} is switched off: nothing stored"}
                        )
                    return dg.AssetCheckResult(
                        passed=False,
                        metadata={"error": f"{spec.stored_table} does not exist: materialize it first"},
                    )
                # the instant the stored table was built at: this run's, or the last writing run's
                built_at = (
                    warehouse.as_of_ts
                    if warehouse.records_run
                    else (learning_bound(con) or warehouse.as_of_ts)
                )
                by_run = (
                    validated_by(con, spec.stored_table, digests=warehouse.digests)
                    if spec.validated_at_write
                    else None
                )
                if by_run is not None:
                    return dg.AssetCheckResult(
                        passed=True, metadata=validated_at_write_metadata(spec.stored_table, by_run)
                    )
                validation, rows = spec.validation(con, built_at)
        except Exception as exc:  # a check that raises records no evaluation: report it as failed
            return dg.AssetCheckResult(
                passed=False, metadata={"error": f"{type(exc).__name__}: {exc}"[:2000]}
            )
        return dg.AssetCheckResult(
            passed=validation.passed,
            metadata={
                **validation_metadata(validation),
                "rows": rows,
                "built_at": built_at.isoformat(),
            },
        )

    return _check


def refuse_write(validation, table: str, checks: list[tuple[str, str]]) -> Iterator[dg.AssetCheckResult]:
    """When a red line would break: record each check as failed, with its failure cases (so the UI
    shows a failed check, not just a failed step), then stop the step. Called inside the write's
    transaction, the raise rolls the write back: the stored tables stay as they were."""
    if validation.passed:
        return
    for check_name, asset in checks:
        yield dg.AssetCheckResult(
            check_name=check_name,
            asset_key=dg.AssetKey(asset),
            passed=False,
            metadata=validation_metadata(validation),
        )
    raise dg.Failure(
        description=f"{table} would break its invariants; nothing was written. {validation.summary()}",
        metadata={"summary": dg.MetadataValue.md(validation.summary())},
    )
