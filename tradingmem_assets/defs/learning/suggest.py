"""Learning suggestions (SPEC section 8): the top-K learnings for a user message.

``rank_learnings`` ranks a learnings frame by TF-IDF cosine of the message to each trigger times
the learning's weight (ignored feedback decays it), after a hard tool-tier filter; ``suggest`` is
the Python API that reads ``learnings`` from the warehouse, now or as of an instant T (SPEC 16):
as of T it sees only the learnings known at T, with the counters and weight the turns and feedback
up to T give them, so a warehouse built after T answers what one built at T answered.
"""

from __future__ import annotations

import json
from datetime import datetime
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
    pool = pool.sort("learning_id")  # the ranking never depends on how the table was read
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


def read_as_of(value: str | datetime | None) -> datetime | None:
    """The instant a read is as of: ``value`` (ISO-8601 text or a datetime; naive = UTC), else
    ``TRADINGMEM_AS_OF`` when set, else None (the stored, current counters)."""
    from tradingmem_assets.settings import default_as_of, parse_as_of

    if value is None:
        env = default_as_of()
        return parse_as_of(env) if env else None
    if isinstance(value, datetime):
        return parse_as_of(value.isoformat())
    try:
        return parse_as_of(value)
    except ValueError:
        raise ValueError(f"as_of {value!r} is not an ISO-8601 instant") from None


def suggest(
    message: str,
    k: int | None = None,
    max_tier: int | None = None,
    *,
    as_of: str | datetime | None = None,
    database: str | Path | None = None,
    enabled: bool | None = None,
) -> list[dict[str, Any]]:
    """The Python API: top-K learnings for a user message (empty when learning is disabled).

    Reads ``learnings`` from the warehouse (``TRADINGMEM_DB`` unless ``database`` is given). Each
    result carries the learning's fields, its parsed ``tool_sequence``, ``similarity`` and ``score``.
    ``as_of`` (or ``TRADINGMEM_AS_OF`` when it is not given): only learnings with known_at <= as_of,
    with counters and weight from the turns and feedback at or before it; otherwise the stored ones.
    """
    from tradingmem_assets.defs.learning.learnings import learnings_as_of
    from tradingmem_assets.lib.dtypes import as_utc
    from tradingmem_assets.lib.warehouse import connection, read_table, table_exists
    from tradingmem_assets.settings import SETTINGS, default_db_path

    if not (SETTINGS.learning_enabled if enabled is None else enabled):
        return []
    instant = read_as_of(as_of)
    k = SETTINGS.learning_top_k if k is None else k
    path = Path(database or default_db_path())
    if not path.exists():
        return []
    with connection(path, read_only=True) as con:
        if not table_exists(con, tables.LEARNINGS):
            return []
        frame = (
            as_utc(read_table(con, tables.LEARNINGS)) if instant is None else learnings_as_of(con, instant)
        )
    rows = rank_learnings(frame, message, k=k, max_tier=max_tier).to_dicts()
    for row in rows:
        row["tool_sequence"] = json.loads(row["tool_sequence"])
    return rows
