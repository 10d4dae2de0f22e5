"""The customer-facing knowledge base (SPEC section 10): public documents only (no Dagster here)."""

from __future__ import annotations

import polars as pl

CUSTOMER_KB_DTYPES = pl.Schema(
    {"doc_id": pl.String(), "title": pl.String(), "body": pl.String(), "visibility": pl.String()}
)


def customer_kb(documents: pl.DataFrame) -> pl.DataFrame:
    """The customer-facing knowledge base: public documents only (internal ones never reach it)."""
    return (
        documents.filter(pl.col("visibility") == "public")
        .select(CUSTOMER_KB_DTYPES.names())
        .cast(CUSTOMER_KB_DTYPES)  # type: ignore[arg-type]
        .sort("doc_id")
    )
