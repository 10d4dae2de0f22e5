"""Invariants of Role Memory (SPEC sections 5 and 6), run as blocking asset checks.

- ``ROLE_CASES_INVARIANTS`` validates role cases joined with the source facts of their linked
  execution (``core.admission.with_chain``): eligible <=> reasons empty <=> status ``eligible``;
  quarantined => not eligible; the status follows from the reasons; eligible => the chain's source
  is manual (external ones verified) and its automation flag is false.
- ``DECISION_COVERAGE_INVARIANTS`` validates ``core.admission.decision_coverage``: every decision
  with a role appears exactly once, and no case exists for anything else.
- ``ROLE_REFLECTIONS_INVARIANTS``: known classes, lessons exactly for the trainable ones, <= 280 chars.
  ``REFLECTION_BATCH_INVARIANTS`` adds, for a batch about to be written, that its cases are eligible.

``validate_relation`` runs a schema over a DuckDB query too big for one frame, chunk by chunk.
"""

from collections.abc import Iterator, Sequence

import duckdb
import pandera.polars as pa
import polars as pl

from tradingmem_assets.defs.role_memory.reasons import PENDING_REASONS, QUARANTINE_REASONS
from tradingmem_assets.defs.role_memory.reflection import LESSON_MAX_CHARS
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.validation import Validation, named_checks, validate
from tradingmem_assets.lib.vocabulary import (
    CASE_REASONS,
    CASE_STATUSES,
    LINK_FIELDS,
    MANUAL_SOURCES,
    OUTCOMES,
    REFLECTION_CLASSES,
    TRAINABLE_CLASSES,
)

KNOWN_REASONS = [r for r in CASE_REASONS if r != "link_mismatch"] + [
    f"link_mismatch:{f}" for f in LINK_FIELDS
]


def _ok(expr: pl.Expr):
    def check(data: pa.PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(expr.fill_null(False).alias("ok"))

    return check


_n_reasons = pl.col("reasons").list.len()
_eligible = pl.col("scoring_eligible")

_has_quarantine = pl.col("reasons").list.eval(pl.element().is_in(list(QUARANTINE_REASONS))).list.any()
_has_permanent = pl.col("reasons").list.eval(~pl.element().is_in(list(PENDING_REASONS))).list.any()
# a role case's rules over whole rows, by the check name a failure reports
ROLE_CASES_RULES = {
    "eligible_iff_reasons_empty_iff_status_eligible": _ok(
        (_eligible == (_n_reasons == 0)) & (_eligible == (pl.col("status") == "eligible"))
    ),
    "quarantined_implies_not_eligible": _ok(
        (~pl.col("quarantined") | ~_eligible) & (pl.col("quarantined") == (pl.col("status") == "quarantined"))
    ),
    "status_follows_from_reasons": _ok(
        pl.when(_has_quarantine)
        .then(pl.col("status") == "quarantined")
        .when(_has_permanent)
        .then(pl.col("status") == "ineligible")
        .when(_n_reasons > 0)
        .then(pl.col("status") == "pending")
        .otherwise(pl.col("status") == "eligible")
    ),
    "reasons_are_known_codes": _ok(
        pl.col("reasons").list.eval(pl.element().is_in(KNOWN_REASONS)).list.all() | (_n_reasons == 0)
    ),
    "eligible_implies_manual_source_without_automation": _ok(
        ~_eligible
        | (
            pl.col("chain_source").is_in(list(MANUAL_SOURCES))
            & (pl.col("chain_automation_flag") == False)  # noqa: E712 - polars expression
            & ((pl.col("chain_source") != "manual_external") | (pl.col("chain_source_verified") == True))  # noqa: E712
        )
    ),
    "eligible_implies_execution_run_and_outcome": _ok(
        ~_eligible
        | (
            pl.col("execution_id").is_not_null()
            & pl.col("primary_run_id").is_not_null()
            & pl.col("outcome").is_not_null()
        )
    ),
}
ROLE_CASES_INVARIANTS = pa.DataFrameSchema(
    {
        "case_id": pa.Column(pl.String, unique=True),
        "decision_id": pa.Column(pl.String, unique=True),
        "role_id": pa.Column(pl.String),
        "symbol": pa.Column(pl.String),
        "scenario": pa.Column(pl.String, nullable=True),
        "direction": pa.Column(pl.String),
        "account_id": pa.Column(pl.String),
        "market": pa.Column(pl.String),
        "execution_id": pa.Column(pl.String, nullable=True),
        "primary_run_id": pa.Column(pl.String, nullable=True),
        "decision_text": pa.Column(pl.String, nullable=True),
        "outcome": pa.Column(pl.String, pa.Check.isin(list(OUTCOMES)), nullable=True),
        "status": pa.Column(pl.String, pa.Check.isin(list(CASE_STATUSES))),
        "reasons": pa.Column(pl.List(pl.String)),
        "quarantined": pa.Column(pl.Boolean),
        "scoring_eligible": pa.Column(pl.Boolean),
        "provenance": pa.Column(pl.String),
        "created_at": pa.Column(UTC_TS),
        "known_at": pa.Column(UTC_TS, nullable=True),
        "updated_at": pa.Column(UTC_TS),
        "chain_source": pa.Column(pl.String, nullable=True),
        "chain_automation_flag": pa.Column(pl.Boolean, nullable=True),
        "chain_source_verified": pa.Column(pl.Boolean, nullable=True),
    },
    name="role_cases",
    checks=named_checks(ROLE_CASES_RULES),
)

# Long text of a role case that is only checked for its type and nulls (see ``validate_relation``).
ROLE_CASES_OPAQUE = ("decision_text", "provenance")

DECISION_COVERAGE_INVARIANTS = pa.DataFrameSchema(
    {
        "decision_id": pa.Column(pl.String, unique=True),
        "names_a_role": pa.Column(pl.Boolean, pa.Check.eq(True, name="case_only_for_a_decision_with_a_role")),
        "n_cases": pa.Column(pl.Int64, pa.Check.eq(1, name="every_decision_with_a_role_exactly_once")),
    },
    name="role_cases_decision_coverage",
)

_trainable = pl.col("classification").is_in(list(TRAINABLE_CLASSES))
ROLE_REFLECTIONS_INVARIANTS = pa.DataFrameSchema(
    {
        "reflection_id": pa.Column(pl.String, unique=True),
        "case_id": pa.Column(pl.String),
        "role_id": pa.Column(pl.String),
        "run_id": pa.Column(pl.String),
        "classification": pa.Column(pl.String, pa.Check.isin(list(REFLECTION_CLASSES))),
        "trainable": pa.Column(pl.Boolean),
        "outcome": pa.Column(pl.String, pa.Check.isin(list(OUTCOMES))),
        "lesson": pa.Column(pl.String, pa.Check.str_length(1, LESSON_MAX_CHARS), nullable=True),
        "reflector": pa.Column(pl.String),
        "reflected_at": pa.Column(UTC_TS),
        "known_at": pa.Column(UTC_TS),
    },
    name="role_reflections",
    checks=[
        pa.Check(_ok(pl.col("trainable") == _trainable), name="trainable_iff_missing_data_or_logic_error"),
        pa.Check(
            _ok(pl.col("lesson").is_not_null() == _trainable), name="lesson_only_and_always_for_trainable"
        ),
    ],
)

REFLECTION_BATCH_INVARIANTS = ROLE_REFLECTIONS_INVARIANTS.add_columns(
    {"case_chain_eligible": pa.Column(pl.Boolean, pa.Check.isin([True], name="reflected_case_is_eligible"))}
).set_name("role_reflections_batch")

ROLE_STATS_INVARIANTS = pa.DataFrameSchema(
    {
        "role_id": pa.Column(pl.String, unique=True),
        "win_rate": pa.Column(pl.Float64, pa.Check.in_range(0, 1), nullable=True),
    },
    name="role_stats",
    checks=[
        pa.Check(
            _ok(
                pl.col("cases")
                == pl.col("eligible") + pl.col("pending") + pl.col("ineligible") + pl.col("quarantined")
            ),
            name="cases_equal_sum_of_statuses",
        ),
        pa.Check(
            _ok(pl.col("scored") == pl.col("wins") + pl.col("losses") + pl.col("flats")), name="scored_split"
        ),
    ],
)


VALIDATION_CHUNK_ROWS = 200_000


def validate_relation(
    schema: pa.DataFrameSchema,
    relation: duckdb.DuckDBPyRelation,
    opaque: Sequence[str] = (),
    chunk_rows: int = VALIDATION_CHUNK_ROWS,
) -> Validation:
    """``validate`` over every row of a DuckDB relation, streamed in chunks of ``chunk_rows`` rows.

    Column checks and the table-level checks of this module are row-wise, so they run chunk by chunk;
    only ``unique`` needs a whole column at once: it runs on the narrow projection of the unique
    columns, gathered from the chunks. ``opaque`` columns (long text whose only checks are its type
    and nulls) stream as '' or NULL, and their type is checked on the relation's own empty frame.
    Failure indexes are row positions in the whole relation.
    """
    unique = [name for name, column in schema.columns.items() if column.unique]
    per_chunk = schema.update_columns({name: {"unique": False} for name in unique})
    failures, key_parts, offset = [], [], 0
    opaque = [name for name in opaque if name in relation.columns]
    if opaque:
        types = pa.DataFrameSchema({name: schema.columns[name] for name in opaque}, name=schema.name)
        empty = pl.from_arrow(relation.limit(0).select(*opaque).to_arrow_table())
        failures.append(validate(types, empty).failure_cases)  # type: ignore[arg-type]
        relation = relation.project(
            ", ".join(
                f'CASE WHEN "{c}" IS NULL THEN NULL ELSE \'\' END AS "{c}"' if c in opaque else f'"{c}"'
                for c in relation.columns
            )
        )
    for frame in _chunks(relation, chunk_rows):
        failures.append(validate(per_chunk, frame).failure_cases.with_columns(pl.col("index") + offset))
        key_parts.append(frame.select(name for name in unique if name in frame.columns))
        offset += frame.height
    keys = pl.concat(key_parts)  # (a unique column missing from the relation failed in the chunks)
    if keys.width:
        unique_keys = {name: pa.Column(unique=True, nullable=True) for name in keys.columns}
        failures.append(validate(pa.DataFrameSchema(unique_keys, name=schema.name), keys).failure_cases)
    # a table-level failure (a missing column, a wrong type) comes back from every chunk: keep one
    return Validation(schema.name or "schema", pl.concat(failures).unique(maintain_order=True))


def _chunks(relation: duckdb.DuckDBPyRelation, chunk_rows: int) -> Iterator[pl.DataFrame]:
    """The relation as frames of at most ``chunk_rows`` rows; one empty frame when it has no rows."""
    reader = relation.to_arrow_reader(chunk_rows)
    empty = True
    for batch in reader:
        empty = False
        yield pl.from_arrow(batch)  # type: ignore[misc]
    if empty:
        yield pl.from_arrow(reader.schema.empty_table())  # type: ignore[misc]
