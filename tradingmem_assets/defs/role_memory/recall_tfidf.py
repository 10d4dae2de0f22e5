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
is asked, only slower. The few query weights and the postings' sums are numpy; ranking is SQL.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import datetime

import duckdb
import numpy as np
import pyarrow as pa

from tradingmem_assets.defs.role_memory.recall_terms import DF, INDEX, POSTINGS, ROLES, TERMS, base2_sql
from tradingmem_assets.lib.warehouse import run_script

# Python's \w is RE2's [\pL\pN_] (recall_terms.TOKEN_RE2): the query is tokenized as the texts are
_TOKEN = re.compile(r"\w+")


def query_terms(query: str) -> Counter[str]:
    """The query's terms with their counts, tokenized as the documents are."""
    tokens = _TOKEN.findall((query or "").lower())
    return Counter(tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)])


_CURRENT_ROWS = f"SELECT * FROM {INDEX} WHERE role_id = $role AND valid_to IS NULL"
_ROWS_AT = (
    f"SELECT * EXCLUDE (base2) FROM {INDEX} WHERE role_id = $role "
    "AND valid_from <= $as_of::TIMESTAMPTZ AND (valid_to IS NULL OR valid_to > $as_of::TIMESTAMPTZ)"
)
_CURRENT_DF = f"SELECT term, df FROM {DF} WHERE role_id = $role AND list_contains($terms::VARCHAR[], term)"
# one term at a time: an equality on the sorted postings reads only the row groups holding it
_CURRENT_POSTINGS = f"SELECT doc_no, s FROM {POSTINGS} WHERE role_id = $role AND term = $term"
# as of an earlier instant: the same quantities over the rows visible then (_recall_visible)
_VISIBLE_DOCS = "SELECT role_id, doc_no, count(*) AS rows FROM _recall_visible GROUP BY ALL"
_POSTINGS_AT = f"""
SELECT t.doc_no, t.s FROM {TERMS} t
SEMI JOIN ({_VISIBLE_DOCS}) c ON t.role_id = c.role_id AND t.doc_no = c.doc_no
WHERE t.role_id = $role AND t.term = $term
"""
_ROWS_AT_WITH_NORMS = f"""
CREATE OR REPLACE TEMP TABLE _recall_visible_df AS
SELECT c.role_id, t.term, sum(c.rows) AS df
FROM ({_VISIBLE_DOCS}) c JOIN {TERMS} t ON t.role_id = c.role_id AND t.doc_no = c.doc_no GROUP BY ALL;
CREATE OR REPLACE TEMP TABLE _recall_visible_n AS SELECT $role AS role_id, count(*) AS n FROM _recall_visible;
CREATE OR REPLACE TEMP TABLE _recall_visible_rows AS
SELECT v.*, b.base2 FROM _recall_visible v LEFT JOIN (
    {base2_sql("_recall_visible", "_recall_visible_df", "_recall_visible_n")}) b USING (role_id, doc_no);
"""
_DF_AT = "SELECT term, df FROM _recall_visible_df WHERE list_contains($terms::VARCHAR[], term)"
_SCRATCH = ("_recall_visible", "_recall_visible_df", "_recall_visible_n", "_recall_visible_rows")


def _ranking_sql(rows: str, columns: str) -> str:
    """SQL: the top ``$k`` of ``rows`` (with ``base2``) by score, then ``tie`` (newest known, then case id)."""
    return f"""
SELECT {columns},
       round(CASE WHEN h.dot > 0 THEN h.dot / ($qnorm * sqrt(r.base2 + h.adj)) ELSE 0 END, 6) AS score
FROM ({rows}) r LEFT JOIN _recall_hits h ON h.doc_no = r.doc_no
WHERE ($symbol::VARCHAR IS NULL OR r.symbol = $symbol) AND ($scenario::VARCHAR IS NULL OR r.scenario = $scenario)
ORDER BY score DESC, r.tie
LIMIT $k
"""


def _hits(
    terms: Counter[str], n: int, df: dict[str, int], postings: dict[str, dict[str, np.ndarray]]
) -> tuple[pa.Table, float]:
    """Per text holding a query term (``postings``: term -> doc_no, s arrays): the dot product with
    the query and the change of its squared norm once the query joins the fit; and the query's norm."""
    squares, docs, dots, adjs = 0.0, [], [], []
    for term, tf in terms.items():
        idf_q = math.log((n + 2) / (df.get(term, 0) + 2)) + 1  # the query counts as a document
        idf_0 = math.log((n + 2) / (df.get(term, 0) + 1)) + 1
        wq = (1 + math.log(tf)) * idf_q
        squares += wq * wq
        if term in postings:
            s = postings[term]["s"]
            docs.append(postings[term]["doc_no"])
            dots.append(s * (wq * idf_q))
            adjs.append(s * s * (idf_q * idf_q - idf_0 * idf_0))
    doc_no = np.concatenate(docs) if docs else np.zeros(0, dtype=np.int32)
    size = int(doc_no.max()) + 1 if doc_no.size else 0
    dot = np.bincount(doc_no, np.concatenate(dots) if dots else None, size)
    adj = np.bincount(doc_no, np.concatenate(adjs) if adjs else None, size)
    held = np.flatnonzero(dot)
    hits = pa.table({"doc_no": held.astype(np.int32), "dot": dot[held], "adj": adj[held]})
    return hits, math.sqrt(squares)


def _postings(con: duckdb.DuckDBPyConnection, sql: str, role_id: str, df: dict[str, int]) -> dict:
    return {t: con.execute(sql, {"role": role_id, "term": t}).fetchnumpy() for t, d in df.items() if d}


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
    found = con.execute(
        f"SELECT n, stable_from FROM {ROLES} WHERE role_id = $role", {"role": role_id}
    ).fetchall()
    if not found:
        return []
    role = found[0]
    terms = query_terms(query)
    select = ", ".join(f"r.{c}" for c in columns)
    ranking = {"role": role_id, "symbol": symbol, "scenario": scenario, "k": k}
    lookup = {"role": role_id, "terms": list(terms)}
    current = as_of is None or role[1] is None or as_of >= role[1]  # the visible set is the current one
    try:
        if current:
            n, rows = role[0], _CURRENT_ROWS
            df = dict(con.execute(_CURRENT_DF, lookup).fetchall())
            postings = _postings(con, _CURRENT_POSTINGS, role_id, df)
        else:
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE _recall_visible AS {_ROWS_AT}",
                {"role": role_id, "as_of": as_of},
            )
            run_script(con, _ROWS_AT_WITH_NORMS, {"role": role_id})
            n = con.execute("SELECT n FROM _recall_visible_n").fetchall()[0][0]
            df = dict(con.execute(_DF_AT, {"terms": list(terms)}).fetchall())
            postings = _postings(con, _POSTINGS_AT, role_id, df)
            ranking.pop("role")
            rows = "SELECT * FROM _recall_visible_rows"
        hits, qnorm = _hits(terms, n, df, postings)
        con.register("_recall_hits", hits)
        return con.execute(_ranking_sql(rows, select), {**ranking, "qnorm": qnorm}).fetchall()
    finally:
        con.unregister("_recall_hits")
        if not current:
            for table in _SCRATCH:
                con.execute(f"DROP TABLE IF EXISTS {table}")
