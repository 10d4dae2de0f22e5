"""TF-IDF cosine against a corpus that grows one document at a time (SPEC section 16, arrival order).

A dedup decision is made once per candidate, against the rows known when it arrived: the TF-IDF is
the one scikit-learn's ``TfidfVectorizer`` would fit on *the documents known at that instant plus
the candidate*. Refitting scikit-learn for every candidate is O(n^2) over a growing corpus; this
module keeps an inverted index and the document frequencies instead, and computes for each
candidate the cosines that refit would give (equal up to floating-point rounding), touching only
the stored documents that share a term with the candidate (no other one can have a cosine above
zero).

Weights are scikit-learn's: ``tf`` raw counts (``1 + ln tf`` with ``sublinear_tf``), smooth idf
``ln((1 + n) / (1 + df)) + 1`` where ``n`` counts the stored documents plus the candidate and
``df`` counts the candidate too, L2-normalized rows. The norm of a stored document changes with
every arrival (``n`` and the ``df`` of its terms move), so it is recomputed, vectorized, for the
documents a candidate is compared with.

Documents belong to a ``group`` (for learnings: the tool names): every document counts in the
corpus statistics, but a candidate is only scored against documents of its own group.

Pure: no Dagster, no warehouse. Tokenization comes from a ``TfidfVectorizer``'s analyzer
(``ArrivalTfidf.like``), so the scores agree with ``tradingmem_assets.lib.similarity``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np


class _Grow:
    """A growable numpy array (amortized O(1) append of one value or a block)."""

    __slots__ = ("a", "n")

    def __init__(self, dtype, capacity: int = 64) -> None:
        self.a = np.zeros(capacity, dtype=dtype)
        self.n = 0

    def extend(self, values) -> None:
        k = len(values)
        if self.n + k > len(self.a):
            grown = np.zeros(max(2 * len(self.a), self.n + k), dtype=self.a.dtype)
            grown[: self.n] = self.a[: self.n]
            self.a = grown
        self.a[self.n : self.n + k] = values
        self.n += k

    def append(self, value) -> None:
        self.extend((value,))

    def view(self) -> np.ndarray:
        return self.a[: self.n]


@dataclass(frozen=True)
class Document:
    """A text analyzed once: its distinct terms (first-appearance order) and their tf weights."""

    terms: tuple[str, ...]
    tf: tuple[float, ...]


class ArrivalTfidf:
    """Documents arrive one by one; a candidate is scored against the corpus of that instant."""

    def __init__(self, analyzer: Callable[[str], list[str]], *, sublinear_tf: bool = False) -> None:
        self._analyzer = analyzer
        self._sublinear = sublinear_tf
        self._term_ids: dict[str, int] = {}
        self._df = _Grow(np.int64)  # term id -> stored documents holding it
        # stored documents as CSR rows: term ids and tf weights
        self._indptr = _Grow(np.int64)
        self._indptr.append(0)
        self._indices = _Grow(np.int64)
        self._data = _Grow(np.float64)
        self._postings: dict[tuple[Hashable, int], _Grow] = {}  # (group, term id) -> documents
        self._scratch = np.zeros(0, dtype=np.float64)
        self.size = 0  # stored documents

    @classmethod
    def like(cls, vectorizer) -> ArrivalTfidf:
        """The incremental twin of a scikit-learn ``TfidfVectorizer``: same analyzer and tf rule.

        Only the settings this module reproduces are accepted: smooth idf, L2 norm, no vocabulary
        limits (``min_df``/``max_df``/``max_features``/fixed vocabulary), no binary tf.
        """
        wanted = {
            "use_idf": True,
            "smooth_idf": True,
            "norm": "l2",
            "binary": False,
            "min_df": 1,
            "max_df": 1.0,
            "max_features": None,
            "vocabulary": None,
        }
        bad = {k: getattr(vectorizer, k) for k, v in wanted.items() if getattr(vectorizer, k) != v}
        if bad:
            raise ValueError(f"ArrivalTfidf cannot reproduce a TfidfVectorizer with {bad}")
        return cls(vectorizer.build_analyzer(), sublinear_tf=bool(vectorizer.sublinear_tf))

    def document(self, text: str | None) -> Document:
        counts = Counter(self._analyzer(text or ""))
        if self._sublinear:
            weights = tuple(1.0 + math.log(c) for c in counts.values())
        else:
            weights = tuple(float(c) for c in counts.values())
        return Document(tuple(counts), weights)

    def cosines(
        self, doc: Document, group: Hashable, min_cosine: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """(document ids ascending, cosines) of the stored documents of ``group`` sharing a term.

        The cosines are those of the TF-IDF fitted on every stored document (of any group) plus
        ``doc``; documents not returned have cosine 0, or (with ``min_cosine`` > 0) a cosine
        certainly below ``min_cosine``: by Cauchy-Schwarz a document's cosine is at most the square
        root of the candidate's normalized squared weight on the terms they share, so documents
        sharing only a little of the candidate's weight are never gathered nor scored.
        """
        empty = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        known = [(self._term_ids.get(t), w) for t, w in zip(doc.terms, doc.tf, strict=True)]
        shared = [(tid, w) for tid, w in known if tid is not None]
        hits = [
            (i, p.view())
            for i, (tid, _) in enumerate(shared)
            if (p := self._postings.get((group, tid))) is not None
        ]
        if not hits:
            return empty
        a = math.log(self.size + 2) + 1.0  # ln(1 + n) + 1 with n = stored documents + the candidate
        tids = np.fromiter((tid for tid, _ in shared), dtype=np.int64, count=len(shared))
        tf_c = np.fromiter((w for _, w in shared), dtype=np.float64, count=len(shared))
        df = self._df.view()
        # the candidate's own terms count in df (df + 1); its new terms have df = 1
        idf_shared = a - np.log(df[tids] + 2.0)
        w_c = tf_c * idf_shared
        new_tf = np.fromiter((w for tid, w in known if tid is None), dtype=np.float64)
        norm_c = math.sqrt(float(np.dot(w_c, w_c)) + float(np.dot(new_tf, new_tf)) * (a - math.log(2.0)) ** 2)
        if len(hits) == 1:
            docs = hits[0][1].copy()
            if min_cosine > 0.0 and (w_c[hits[0][0]] / norm_c) ** 2 < min_cosine * min_cosine - 1e-9:
                return empty
        else:
            docs, inverse = np.unique(np.concatenate([p for _, p in hits]), return_inverse=True)
            if min_cosine > 0.0:
                # by Cauchy-Schwarz, cosine <= sqrt(the candidate's normalized weight on shared terms)
                share = (w_c / norm_c) ** 2
                weights = np.repeat(share[[i for i, _ in hits]], [len(p) for _, p in hits])
                mass = np.bincount(inverse, weights=weights, minlength=len(docs))
                docs = docs[mass >= min_cosine * min_cosine - 1e-9]
                if len(docs) == 0:
                    return empty
        # gather the CSR rows of those documents
        indptr = self._indptr.view()
        starts, ends = indptr[docs], indptr[docs + 1]
        lengths = ends - starts
        offsets = np.cumsum(lengths) - lengths
        pos = np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))
        terms = self._indices.view()[pos]
        tf_r = self._data.view()[pos]
        df_inst = df[terms].astype(np.float64)
        # the candidate's tf-idf weight per term id (0 elsewhere), in a scratch array reset below
        if len(self._scratch) < len(df):
            self._scratch = np.zeros(2 * len(df), dtype=np.float64)
        self._scratch[tids] = tf_c * idf_shared
        cand_w = self._scratch[terms]
        self._scratch[tids] = 0.0
        df_inst += cand_w != 0.0  # the candidate holds the term: it counts in df
        w_r = tf_r * (a - np.log(df_inst + 1.0))
        norm_r = np.sqrt(np.add.reduceat(w_r * w_r, offsets))
        dot = np.add.reduceat(w_r * cand_w, offsets)
        return docs, dot / (norm_r * norm_c)

    def add(self, doc: Document, group: Hashable) -> int:
        """Store ``doc`` in ``group``; returns its document id (0, 1, 2, ... in arrival order)."""
        new = self.size
        tids = []
        for term in doc.terms:
            tid = self._term_ids.get(term)
            if tid is None:
                tid = self._df.n
                self._term_ids[term] = tid
                self._df.append(0)
            tids.append(tid)
            post = self._postings.get((group, tid))
            if post is None:
                post = self._postings[(group, tid)] = _Grow(np.int64, 2)
            post.append(new)
        if tids:
            ids = np.asarray(tids, dtype=np.int64)
            self._df.a[ids] += 1
            self._indices.extend(ids)
            self._data.extend(np.asarray(doc.tf, dtype=np.float64))
        self._indptr.append(self._indices.n)
        self.size += 1
        return new
