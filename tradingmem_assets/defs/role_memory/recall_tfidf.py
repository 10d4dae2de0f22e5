"""Recall's TF-IDF: scikit-learn's scores, computed from the stored term index (SPEC sections 7, 14, 16).

The scores are exactly those of ``TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b",
sublinear_tf=True)`` fitted on the query plus the role's documents visible at ``T``, followed by
cosine similarity (lib/similarity.py is the reference; a test compares the two on varied text):
a document's weight of a term is ``(1 + ln tf) * idf``, ``idf = ln((N + 1) / (df + 1)) + 1`` with
``N`` the documents of the fit (the visible ones and the query) and ``df`` those containing it.

The corpus the IDF is fitted on is the role's visible documents at ``T`` (symbol and scenario
filters only narrow what is returned: they never change a score). With ``n`` visible documents
and ``idf0(t) = ln((n + 2) / (df(t) + 1)) + 1``, a document's squared norm before the query joins
the fit is ``base2(d) = sum_t (1 + ln tf)^2 * idf0(t)^2``; the query only raises the df of its own
terms by one, so ``norm2(d) = base2(d) + sum_{t in q and d} (1 + ln tf)^2 * (idf_q(t)^2 - idf0(t)^2)``,
and a read touches only the postings of the query's terms.

``n``, the postings with their df, and ``base2`` are stored for each role's current corpus
(recall_terms.py); a read as of an instant at or after the role's last validity change uses them,
because the visible set is the current one. An earlier instant computes the same quantities from
the term index restricted to the rows visible then: the answer is the same whichever warehouse
is asked, only slower. The query weights, the postings' sums and the ranking are numpy over three
narrow columns of the visible rows; only the ``k`` rows returned are read whole, by their ``tie``.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

import duckdb
import numpy as np

from tradingmem_assets.defs.role_memory.recall_terms import BASE2_SUM, DF, INDEX, POSTINGS, ROLES, TERMS
from tradingmem_assets.lib.warehouse import run_script

# Python's \w is [\p{L}\p{N}_] (recall_terms.TOKEN): the query is tokenized as the texts are
_TOKEN = re.compile(r"\w+")
_MICRO = Decimal("1e-6")


class RecallIndexOutdatedError(RuntimeError):
    """The stored recall index has another layout than this code reads (written by an older version)."""


def query_terms(query: str) -> Counter[str]:
    """The query's terms with their counts, tokenized as the documents are."""
    tokens = _TOKEN.findall((query or "").lower())
    return Counter(tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)])


_CURRENT_ROWS = f"SELECT * FROM {INDEX} WHERE role_id = $role AND valid_to IS NULL"
# as of an earlier instant: the rows visible then, narrow (the k returned are fetched by tie)
_ROWS_AT = (
    f"SELECT role_id, doc_no, tie, symbol, scenario FROM {INDEX} WHERE role_id = $role "
    "AND valid_from <= $as_of::TIMESTAMPTZ AND (valid_to IS NULL OR valid_to > $as_of::TIMESTAMPTZ)"
)
_ROLE_AND_DF = f"""
SELECT r.n, r.stable_from, d.term, d.df, d.term_no FROM {ROLES} r
LEFT JOIN {DF} d ON d.role_id = r.role_id AND list_contains($terms::VARCHAR[], d.term)
WHERE r.role_id = $role
"""
# ... and the same quantities over them: the visible texts' terms are read from the term index
# once, and their df, the texts' norms and the query terms' postings all come from that one read
_ROWS_AT_WITH_NORMS = f"""
CREATE OR REPLACE TEMP TABLE _recall_visible_terms AS
SELECT t.doc_no, t.term, t.tf, c.rows FROM {TERMS} t
JOIN (SELECT doc_no, count(*) AS rows FROM _recall_visible GROUP BY doc_no) c ON c.doc_no = t.doc_no
WHERE t.role_id = $role;
CREATE OR REPLACE TEMP TABLE _recall_visible_df AS
SELECT term, sum(rows) AS df FROM _recall_visible_terms GROUP BY term;
CREATE OR REPLACE TEMP TABLE _recall_visible_n AS SELECT count(*) AS n FROM _recall_visible;
CREATE OR REPLACE TEMP TABLE _recall_visible_rows AS
SELECT v.*, b.base2 FROM _recall_visible v LEFT JOIN (
    SELECT p.doc_no, {BASE2_SUM} AS base2
    FROM _recall_visible_terms p JOIN _recall_visible_df d USING (term) CROSS JOIN _recall_visible_n z
    GROUP BY p.doc_no) b USING (doc_no);
"""
_DF_AT = "SELECT term, df FROM _recall_visible_df WHERE list_contains($terms::VARCHAR[], term)"
_SCRATCH = (
    "_recall_visible",
    "_recall_visible_terms",
    "_recall_visible_df",
    "_recall_visible_n",
    "_recall_visible_rows",
)


# the rows that may be returned, narrow: the ranking reads these three columns only
_NARROW = "SELECT doc_no, base2, tie FROM ({rows}) r WHERE true"  # then the given filters' equalities


def _round6(x: np.ndarray) -> np.ndarray:
    """Non-negative ``x`` rounded to 6 decimal places by its exact value, halves up (as DuckDB's
    ``round(x, 6)`` does), returned as the nearest double. ``x * 1e6`` errs by far less than 1e-6,
    so only a value that close to a half is decided exactly, with ``Decimal``."""
    y = x * 1e6
    whole = np.floor(y)
    out = (whole + (y - whole >= 0.5)) / 1e6
    for i in np.flatnonzero(np.abs(y - whole - 0.5) < 1e-6):
        out[i] = float(Decimal(float(x[i])).quantize(_MICRO, ROUND_HALF_UP))
    return out


def top_k(rows: dict[str, np.ndarray], dot: np.ndarray, adj: np.ndarray, qnorm: float, k: int) -> tuple:
    """The ``tie`` and score of the best ``k`` of ``rows`` (doc_no, base2, tie), with ``dot`` and ``adj``
    indexed by doc_no (``_hits``): by score rounded to 6 places, highest first, then by ``tie``. A row
    whose text holds no query term scores 0."""
    doc = rows["doc_no"]
    raw = np.zeros(doc.size)
    hit = np.flatnonzero(doc < dot.size)
    hit = hit[dot[doc[hit]] > 0]
    raw[hit] = dot[doc[hit]] / (qnorm * np.sqrt(rows["base2"][hit] + adj[doc[hit]]))
    best = np.arange(doc.size)
    if doc.size > k:  # rounding moves a score by at most 5e-7: below this, no row can reach the k-th
        best = np.flatnonzero(raw >= -np.partition(-raw, k - 1)[k - 1] - 1e-6)
    score = _round6(raw[best])
    order = np.lexsort((rows["tie"][best], -score))[:k]
    return rows["tie"][best[order]], score[order]


def _hits(
    terms: Counter[str], n: int, df: dict[str, int], postings: dict[str, tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray, float]:
    """Indexed by doc_no (``postings``: term -> doc_no and s arrays): each text's dot product with the
    query and the change of its squared norm once the query joins the fit; and the query's norm.

    Each text's sums run over the query's terms in their order, as one ``bincount`` over the
    concatenated postings would add them, but into two arrays and one scratch buffer: temporaries
    the size of the postings cost more (fresh pages) than the arithmetic."""
    squares, weighted = 0.0, []
    for term, tf in terms.items():
        idf_q = math.log((n + 2) / (df.get(term, 0) + 2)) + 1  # the query counts as a document
        idf_0 = math.log((n + 2) / (df.get(term, 0) + 1)) + 1
        wq = (1 + math.log(tf)) * idf_q
        squares += wq * wq
        if term in postings:
            weighted.append((*postings[term], wq * idf_q, idf_q * idf_q - idf_0 * idf_0))
    size = max((int(doc.max()) + 1 for doc, *_ in weighted if doc.size), default=0)
    dot, adj = np.zeros(size), np.zeros(size)
    scratch = np.empty(max((doc.size for doc, *_ in weighted), default=0))
    for doc, s, to_dot, to_adj in weighted:
        part = scratch[: doc.size]
        np.add.at(dot, doc, np.multiply(s, to_dot, out=part))
        np.multiply(s, s, out=part)
        np.add.at(adj, doc, np.multiply(part, to_adj, out=part))
    return dot, adj, math.sqrt(squares)


def _postings(con: duckdb.DuckDBPyConnection, source: str, column: str, keys: dict[str, object]) -> dict:
    """Per term, its postings (doc_no and ``s = 1 + ln tf`` arrays), from the rows of ``source`` whose
    ``column`` is the term's key, in one statement: a branch a term, each an equality (on the sorted
    postings, it reads only that term's rows). Within a term the rows' order does not matter (a
    text holds a term once); their term is told by the branch's number."""
    if not keys:
        return {}
    branches = " UNION ALL ".join(
        f"SELECT {i} AS q, doc_no, tf FROM {source} WHERE {column} = $k{i}" for i in range(len(keys))
    )
    got = con.execute(branches, {f"k{i}": key for i, key in enumerate(keys.values())}).fetchnumpy()
    q, doc, tf = got["q"], got["doc_no"], got["tf"]
    if not np.all(q[:-1] <= q[1:]):  # the branches' rows came interleaved: grouped by term first
        order = np.argsort(q, kind="stable")
        q, doc, tf = q[order], doc[order], tf[order]
    bounds = np.searchsorted(q, np.arange(len(keys) + 1))
    # math.log is the C library's log, as DuckDB's ln: the same s as the stored norms were summed from
    s = np.array([0.0, *(1 + math.log(t) for t in range(1, int(tf.max(initial=0)) + 1))])[tf]
    return {term: (doc[a:b], s[a:b]) for term, a, b in zip(keys, bounds[:-1], bounds[1:], strict=True)}


def _refusing_older_layouts(read: Callable[..., list[tuple]]) -> Callable[..., list[tuple]]:
    """``read``, with a query an older layout cannot bind (e.g. role_recall_df without term_no,
    postings without tf) refused as ``RecallIndexOutdatedError``."""

    @functools.wraps(read)
    def refusing(*args, **kwargs) -> list[tuple]:
        try:
            return read(*args, **kwargs)
        except duckdb.BinderException as error:
            raise RecallIndexOutdatedError(
                "the recall index of this warehouse was written by an older version of tradingmem "
                f"({str(error).splitlines()[0]}); materialize role_cases (or run trading_memory_job) "
                "once to rebuild it"
            ) from error

    return refusing


@_refusing_older_layouts
def ranked(
    con: duckdb.DuckDBPyConnection,
    columns: list[str],
    *,
    role_id: str,
    query: str,
    symbol: str | None,
    scenario: str | None,
    k: int,
    as_of: datetime | None,
) -> list[tuple]:
    """The top ``k`` visible rows of the role (``columns`` of the recall index, then ``score``)."""
    terms = query_terms(query)
    # the role's corpus size and last change, with the current df and number of each query term
    role = con.execute(_ROLE_AND_DF, {"role": role_id, "terms": list(terms)}).fetchall()
    if not role:
        return []
    (n, stable_from, *_), numbered = role[0], [(t, df, no) for *_, t, df, no in role if t is not None]
    select = ", ".join(f"r.{c}" for c in columns)
    # at or after the role's last validity change, the visible set is the current one
    current = as_of is None or stable_from is None or as_of >= stable_from
    try:
        if current:
            rows, df = _CURRENT_ROWS, {t: d for t, d, _ in numbered}
            postings = _postings(con, POSTINGS, "term_no", {t: no for t, _, no in numbered})
        else:
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE _recall_visible AS {_ROWS_AT}",
                {"role": role_id, "as_of": as_of},
            )
            run_script(con, _ROWS_AT_WITH_NORMS, {"role": role_id})
            n = con.execute("SELECT n FROM _recall_visible_n").fetchall()[0][0]
            df = dict(con.execute(_DF_AT, {"terms": list(terms)}).fetchall())
            postings = _postings(con, "_recall_visible_terms", "term", {t: t for t, d in df.items() if d})
            rows = "SELECT * FROM _recall_visible_rows"
        given = {f: v for f, v in {"symbol": symbol, "scenario": scenario}.items() if v is not None}
        narrow_sql = _NARROW.format(rows=rows) + "".join(f" AND r.{f} = ${f}" for f in given)
        # read as a relation: it converts to numpy in about half the time of an executed statement
        narrow = con.sql(narrow_sql, params={"role": role_id, **given} if current else given).fetchnumpy()
        ties, scores = top_k(narrow, *_hits(terms, n, df, postings), k)
        if not ties.size:
            return []
        # (role_id, tie) is a key, and tie alone is indexed: the k rows are looked up, not scanned for
        wanted = ", ".join(map(str, ties.tolist()))
        found = con.execute(f"SELECT r.role_id, r.tie, {select} FROM {INDEX} r WHERE r.tie IN ({wanted})")
        wide = {tie: row for role, tie, *row in found.fetchall() if role == role_id}
        return [(*wide[t], float(s)) for t, s in zip(ties.tolist(), scores, strict=True)]
    finally:
        if not current:
            for table in _SCRATCH:
                con.execute(f"DROP TABLE IF EXISTS {table}")
