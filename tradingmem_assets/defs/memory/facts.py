"""Long-term facts (SPEC section 10): the fact keys the profile reads, and deterministic ids.

No Dagster here. ``RISK_LEVEL_KEY``, ``ASSET_CLASS_KEY`` and ``HORIZON_KEY`` are the user_fact keys
the customer profile is built from; ``CRITICAL_FACT_KEYS`` are flagged ``is_critical``. Ids derived
from a natural key are ``prefix`` + sha256(key)[:16] (a user_fact: ``uf_`` + sha256(unit_id)[:16]).
"""

from __future__ import annotations

import duckdb
import polars as pl

RISK_LEVEL_KEY = "preference:risk_level"
ASSET_CLASS_KEY = "preference:asset_class"
HORIZON_KEY = "profile:investment_horizon"
CRITICAL_FACT_KEYS: tuple[str, ...] = (RISK_LEVEL_KEY, HORIZON_KEY)


def sha256_hex(values: pl.Series) -> pl.Series:
    """sha256 (hex) of every string of a column, computed by DuckDB over Arrow (no Python loop)."""
    frame = pl.DataFrame({"v": values.cast(pl.String)})
    con = duckdb.connect()
    try:
        con.register("_v", frame)
        return con.sql("SELECT sha256(v) AS h FROM _v").pl().get_column("h").alias(values.name)
    finally:
        con.close()


def hashed_ids(prefix: str, keys: pl.Series) -> pl.Series:
    """Deterministic ids: ``prefix`` + the first 16 hex characters of sha256 of each natural key."""
    return pl.select(pl.lit(prefix) + pl.lit(sha256_hex(keys)).str.slice(0, 16)).to_series()
