"""The customer-facing knowledge base (SPEC section 10): public documents only (no Dagster here)."""

from __future__ import annotations

import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes

CUSTOMER_KB_DTYPES = table_dtypes(tables.CUSTOMER_KB)


def customer_kb(documents: pl.DataFrame) -> pl.DataFrame:
    """The customer-facing knowledge base: public documents only (internal ones never reach it)."""
    return (
        documents.filter(pl.col("visibility") == "public")
        .select(CUSTOMER_KB_DTYPES.names())
        .cast(CUSTOMER_KB_DTYPES)  # type: ignore[arg-type]
        .sort("doc_id")
    )
