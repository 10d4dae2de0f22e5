"""Invariants of methodology_audit_reports (SPEC section 9)."""

import json
from collections.abc import Callable

import pandera.polars as pa
import polars as pl

from tradingmem_assets.defs.audit.scoring import DIMENSIONS, TIERS
from tradingmem_assets.lib.validation import named_checks, rule

UNSCORED_TIERS = ("disabled", "insufficient_data")


# the report's rules over whole rows, by the check name a failure reports
REPORT_RULES: dict[str, Callable] = {}


@rule(REPORT_RULES, "tier_matches_composite")
def _tier_matches_composite(data: pa.PolarsData) -> pl.LazyFrame:
    """A scored tier is the tier of its composite; a null composite goes with an unscored tier."""
    composite = pl.col("composite")
    scored = (
        pl.when(composite >= 80)
        .then(pl.lit("healthy"))
        .when(composite >= 60)
        .then(pl.lit("watch"))
        .when(composite >= 40)
        .then(pl.lit("degraded"))
        .otherwise(pl.lit("alarm"))
    )
    return data.lazyframe.select(
        pl.when(composite.is_null())
        .then(pl.col("tier").is_in(UNSCORED_TIERS))
        .otherwise(pl.col("tier") == scored)
        .alias("ok")
    )


@rule(REPORT_RULES, "isolation_ok_iff_hashes_equal")
def _isolation_ok_iff_hashes_equal(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select(
        (
            pl.col("isolation_ok")
            == (pl.col("learning_tables_sha256_before") == pl.col("learning_tables_sha256_after"))
        ).alias("ok")
    )


def _weights_ok(text: str | None, composite_is_null: bool) -> bool:
    weights = json.loads(text or "{}")
    if composite_is_null:
        return weights == {}
    return set(weights) <= set(DIMENSIONS) and abs(sum(weights.values()) - 1.0) < 1e-9


@rule(REPORT_RULES, "weights_renormalized_over_scored_dimensions")
def _weights_renormalized(data: pa.PolarsData) -> pl.LazyFrame:
    """Stored weights cover only scored dimensions and sum to 1 (none when nothing was scored)."""
    # The report table holds one row per pass (hundreds, not millions): a row-wise JSON check is fine.
    return data.lazyframe.select(
        pl.struct("dimension_weights_used", "composite")
        .map_elements(
            lambda r: _weights_ok(r["dimension_weights_used"], r["composite"] is None),
            return_dtype=pl.Boolean,
        )
        .alias("ok")
    )


@rule(REPORT_RULES, "json_columns_parse")
def _json_valid(data: pa.PolarsData) -> pl.LazyFrame:
    cols = ["dimension_scores", "dimension_weights_used", "findings", "advisory_actions"]

    def ok(r: dict) -> bool:
        try:
            for c in cols:
                json.loads(r[c])
        except (TypeError, ValueError):
            return False
        return True

    return data.lazyframe.select(pl.struct(cols).map_elements(ok, return_dtype=pl.Boolean).alias("ok"))


METHODOLOGY_AUDIT_REPORTS_INVARIANTS = pa.DataFrameSchema(
    {
        "pass_id": pa.Column(pl.String, unique=True),
        "ran_at": pa.Column(pl.Datetime("us", "UTC")),
        "window_days": pa.Column(pl.Int64, pa.Check.ge(1)),
        "composite": pa.Column(pl.Float64, pa.Check.in_range(0, 100), nullable=True),
        "tier": pa.Column(pl.String, pa.Check.isin(list(TIERS))),
        "dimension_scores": pa.Column(pl.String),
        "dimension_weights_used": pa.Column(pl.String),
        "findings": pa.Column(pl.String),
        "advisory_actions": pa.Column(pl.String),
        "learning_tables_sha256_before": pa.Column(pl.String, pa.Check.str_matches(r"^[0-9a-f]{64}$")),
        "learning_tables_sha256_after": pa.Column(pl.String, pa.Check.str_matches(r"^[0-9a-f]{64}$")),
        "isolation_ok": pa.Column(pl.Boolean),
    },
    name="methodology_audit_reports",
    checks=named_checks(REPORT_RULES),
)
