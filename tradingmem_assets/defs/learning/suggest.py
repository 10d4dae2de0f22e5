"""Learning suggestions (SPEC section 8): the top-K learnings for a user message.

``rank_learnings`` ranks a learnings frame by TF-IDF cosine of the message to each trigger times
the learning's weight (ignored feedback decays it), after a hard tool-tier filter; ``suggest`` is
the Python API that reads ``learnings`` from the warehouse.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.similarity import tfidf_cosine


def rank_learnings(
    learnings: pl.DataFrame, message: str, *, k: int, max_tier: int | None = None
) -> pl.DataFrame:
    """Top-``k`` learnings for ``message``: TF-IDF cosine to the trigger x weight, above zero.

    ``max_tier`` is a hard filter applied before ranking: a learning that needs a higher tool
    tier than the caller may use is never returned, however similar it is.
    """
    pool = learnings if max_tier is None else learnings.filter(pl.col("required_tier") <= max_tier)
    if pool.height == 0 or k <= 0 or not (message or "").strip():
        return pool.clear().with_columns(
            pl.lit(None, dtype=pl.Float64).alias("similarity"), pl.lit(None, dtype=pl.Float64).alias("score")
        )
    sims = tfidf_cosine([message], pool.get_column("trigger").to_list())[0]
    ranked = pool.with_columns(pl.Series("similarity", sims, dtype=pl.Float64)).with_columns(
        (pl.col("similarity") * pl.col("weight")).alias("score")
    )
    return (
        ranked.filter(pl.col("score") > 0)
        .sort(["score", "success_count", "learning_id"], descending=[True, True, False])
        .head(k)
    )


def suggest(
    message: str,
    k: int | None = None,
    max_tier: int | None = None,
    *,
    database: str | Path | None = None,
    enabled: bool | None = None,
) -> list[dict[str, Any]]:
    """The Python API: top-K learnings for a user message (empty when learning is disabled).

    Reads ``learnings`` from the warehouse (``TRADINGMEM_DB`` unless ``database`` is given). Each
    result carries the learning's fields, its parsed ``tool_sequence``, ``similarity`` and ``score``.
    """
    from tradingmem_assets.lib.warehouse import connection, read_table, table_exists
    from tradingmem_assets.settings import SETTINGS, default_db_path

    if not (SETTINGS.learning_enabled if enabled is None else enabled):
        return []
    k = SETTINGS.learning_top_k if k is None else k
    path = Path(database or default_db_path())
    if not path.exists():
        return []
    with connection(path, read_only=True) as con:
        if not table_exists(con, tables.LEARNINGS):
            return []
        frame = read_table(con, tables.LEARNINGS)
    rows = rank_learnings(frame, message, k=k, max_tier=max_tier).to_dicts()
    for row in rows:
        row["tool_sequence"] = json.loads(row["tool_sequence"])
    return rows
