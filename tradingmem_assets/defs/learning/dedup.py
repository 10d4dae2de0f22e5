"""Learning dedup (SPEC sections 8 and 16): a reviewed candidate joins an earlier, similar learning.

Decisions are made once per candidate, in arrival order ``(started_at, turn_id)``, against the
learnings that existed when it arrived. A candidate whose redacted trigger has TF-IDF cosine >= 0.8
with an existing learning's trigger *and the same tool names in the same order* joins that learning
(the most similar one; the earliest on ties) instead of creating one. The TF-IDF of that test is
the one fitted on the triggers of the learnings known at that instant (every tool sequence) plus
the candidate's, computed incrementally (``arrival_tfidf``) with the tokenization of
``lib.similarity`` (the one ``suggest`` ranks with). So a candidate that arrives later never changes
an earlier decision, merge or id: a build at T2 agrees with a build at T1 on every turn up to T1.

Equal candidate ids are equal normalized texts and tool names: a later candidate with the id of an
earlier one takes that one's decision. The first turn of a learning gives its id, trigger, tool
sequence, ``created_at`` and ``known_at``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.defs.learning.arrival_tfidf import ArrivalTfidf
from tradingmem_assets.lib.similarity import tfidf_vectorizer

TRIGGER_SIMILARITY = 0.8


def arrival_tfidf() -> ArrivalTfidf:
    """The incremental TF-IDF of learning triggers, tokenized like ``lib.similarity``."""
    return ArrivalTfidf.like(tfidf_vectorizer())


def cluster_candidates(candidates: pl.DataFrame, threshold: float = TRIGGER_SIMILARITY) -> pl.DataFrame:
    """Give every candidate the learning it joins (``learning_id``): its own, or an earlier similar one.

    Merges only happen between candidates with the same tool names (``tool_key``). The pass runs
    over distinct candidate ids in arrival order; each one is scored against the learnings created
    so far (the representatives), with document frequencies over their triggers plus its own.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"trigger similarity threshold must be in (0, 1], got {threshold}")
    if candidates.height == 0:
        return candidates.with_columns(pl.lit(None, dtype=pl.String).alias("learning_id"))
    ordered = candidates.sort("started_at", "turn_id")
    uniq = ordered.unique(subset="candidate_learning_id", keep="first", maintain_order=True)
    ids = uniq.get_column("candidate_learning_id").to_list()
    keys = uniq.get_column("tool_key").to_list()
    triggers = uniq.get_column("trigger").to_list()
    tfidf = arrival_tfidf()
    reps: list[str] = []  # document id -> learning id
    assigned: list[str] = []
    for cid, key, trigger in zip(ids, keys, triggers, strict=True):
        doc = tfidf.document(trigger)
        docs, sims = tfidf.cosines(doc, key, min_cosine=threshold)
        if len(docs):
            best = int(np.argmax(sims))  # first maximum: the earliest learning on ties
            if sims[best] >= threshold:
                assigned.append(reps[int(docs[best])])
                continue
        tfidf.add(doc, key)
        reps.append(cid)
        assigned.append(cid)
    mapping = pl.DataFrame(
        {"candidate_learning_id": ids, "learning_id": assigned},
        schema={"candidate_learning_id": pl.String, "learning_id": pl.String},
    )
    return ordered.join(mapping, on="candidate_learning_id", how="left", maintain_order="left")
