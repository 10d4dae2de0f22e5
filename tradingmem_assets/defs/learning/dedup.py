"""Learning dedup (SPEC section 8): a reviewed candidate joins an earlier, similar learning.

Candidates are taken in ``(started_at, turn_id)`` order; a candidate whose redacted trigger has
TF-IDF cosine >= 0.8 with an existing learning's trigger *and the same tool names in the same
order* joins that learning (its counters grow) instead of creating one. The first turn of a
learning gives its id, trigger, tool sequence and ``created_at``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.lib.similarity import tfidf_vectors

TRIGGER_SIMILARITY = 0.8


def cluster_candidates(candidates: pl.DataFrame, threshold: float = TRIGGER_SIMILARITY) -> pl.DataFrame:
    """Give every candidate the learning it joins (``learning_id``): its own, or an earlier similar one.

    Merges only happen between candidates with the same tool names (``tool_key``), in
    ``(started_at, turn_id)`` order. Equal candidate ids are equal texts, so the greedy pass runs over
    distinct candidates only (a compact array), against the representatives created so far.
    """
    if candidates.height == 0:
        return candidates.with_columns(pl.lit(None, dtype=pl.String).alias("learning_id"))
    ordered = candidates.sort("started_at", "turn_id")
    uniq = ordered.unique(subset="candidate_learning_id", keep="first", maintain_order=True)
    ids = uniq.get_column("candidate_learning_id").to_list()
    keys = uniq.get_column("tool_key").to_list()
    vectors = tfidf_vectors(uniq.get_column("trigger").to_list())
    assigned: dict[str, str] = {}
    reps_by_key: dict[str, list[int]] = {}
    for i, (cid, key) in enumerate(zip(ids, keys, strict=True)):
        reps = reps_by_key.setdefault(key, [])
        if reps and vectors is not None:
            sims = (vectors[reps] @ vectors[i].T).toarray().ravel()
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                assigned[cid] = ids[reps[best]]
                continue
        reps.append(i)
        assigned[cid] = cid
    mapping = pl.DataFrame(
        {"candidate_learning_id": list(assigned), "learning_id": list(assigned.values())},
        schema={"candidate_learning_id": pl.String, "learning_id": pl.String},
    )
    return ordered.join(mapping, on="candidate_learning_id", how="left")
