"""Recall's TF-IDF, computed set-based in DuckDB over a stored term index (SPEC sections 7, 14, 16).

The scores are exactly scikit-learn's ``TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\\b\\w+\\b",
sublinear_tf=True)`` fitted on the query plus the role's documents visible at ``T``, followed by
cosine similarity (lib/similarity.py is the reference; a test compares the two on varied text):

- terms: maximal runs of letters, digits and ``_`` of the lower-cased text (RE2 ``[\\pL\\pN_]+``,
  Python's ``\\w+``), plus each pair of neighbouring tokens joined by one space;
- a document's weight of a term is ``(1 + ln tf) * idf``, with ``idf = ln((N + 1) / (df + 1)) + 1``,
  ``N`` the documents of the fit (the visible ones and the query) and ``df`` those containing it;
- the score is the cosine of the query's and the document's weight vectors.

The corpus the IDF is fitted on is the role's visible documents at ``T`` (symbol and scenario
filters only narrow what is returned: they never change a score). With ``D`` the visible
documents, ``n = |D|`` and ``idf0(t) = ln((n + 2) / (df_D(t) + 1)) + 1``, a document's squared norm
is ``base2(d) = sum_t (1 + ln tf)^2 * idf0(t)^2`` before the query joins the fit; the query only
raises the df of its own terms by one, so ``norm2(d) = base2(d) + sum_{t in q and d} (1 + ln tf)^2 *
(idf_q(t)^2 - idf0(t)^2)``: a read touches only the postings of the query's terms.

``base2``, the role's ``n`` and ``df`` are stored for the current state (every row with no end of
validity); a read as of an instant at or after the role's last validity change uses them (the
visible set is the current one). An earlier instant computes the same quantities from the term
index, restricted to the rows visible then, with the same SQL: the answer is the same whichever
warehouse is asked, only slower.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import datetime

import duckdb

from tradingmem_assets.lib import tables

TERMS = tables.ROLE_RECALL_TERMS
DOCS = tables.ROLE_RECALL_DOCS
ROLE_DF = tables.ROLE_RECALL_DF
ROLES = tables.ROLE_RECALL_ROLES
INDEX = tables.ROLE_RECALL_INDEX

# RE2's [\pL\pN_] is Python's \w (letters, digits of every script, underscore)
TOKEN_RE2 = r"[\pL\pN_]+"
_TOKEN = re.compile(r"\w+")


def _grams(tokens: str) -> str:
    """SQL: the unigrams then the neighbouring-token bigrams of a token list expression."""
    return f"{tokens} || list_transform(range(1, len({tokens})), lambda i: {tokens}[i] || ' ' || {tokens}[i + 1])"


def query_terms(query: str) -> Counter[str]:
    """The query's terms with their counts, tokenized as the documents are."""
    tokens = _TOKEN.findall((query or "").lower())
    return Counter(tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)])


# The term index, kept across rebuilds: every (role, document text) gets a small number once
# (``role_recall_docs``); only texts new to a role are tokenized, texts no row carries any more are
# dropped. A posting stores ``s = 1 + ln tf``, the sublinear term frequency.
_TERMS_DDL = f"""
CREATE TABLE IF NOT EXISTS {DOCS} (role_id VARCHAR, doc_id UBIGINT, doc_no INTEGER);
CREATE TABLE IF NOT EXISTS {TERMS} (role_id VARCHAR, term VARCHAR, doc_no INTEGER, s DOUBLE);
"""
_TERMS_DROP_SQL = f"""
CREATE OR REPLACE TEMP TABLE _recall_gone AS
SELECT role_id, doc_no FROM {DOCS} d WHERE NOT EXISTS (
    SELECT 1 FROM {INDEX} i WHERE i.role_id = d.role_id AND i.doc_id = d.doc_id);
DELETE FROM {TERMS} t USING _recall_gone g WHERE t.role_id = g.role_id AND t.doc_no = g.doc_no;
DELETE FROM {DOCS} d USING _recall_gone g WHERE d.role_id = g.role_id AND d.doc_no = g.doc_no;
DROP TABLE _recall_gone;
"""
_TERMS_ADD_SQL = f"""
CREATE OR REPLACE TEMP TABLE _recall_new AS
SELECT n.role_id, n.doc_id, n.doc,
       (coalesce(m.top, 0) + row_number() OVER (PARTITION BY n.role_id ORDER BY n.doc_id))::INTEGER AS doc_no
FROM (SELECT DISTINCT role_id, doc_id, doc FROM {INDEX} i
      WHERE NOT EXISTS (SELECT 1 FROM {DOCS} d WHERE d.role_id = i.role_id AND d.doc_id = i.doc_id)) n
LEFT JOIN (SELECT role_id, max(doc_no) AS top FROM {DOCS} GROUP BY role_id) m USING (role_id);
INSERT INTO {DOCS} SELECT role_id, doc_id, doc_no FROM _recall_new;
INSERT INTO {TERMS}
SELECT role_id, term, doc_no, 1 + ln(count(*)) AS s
FROM (SELECT role_id, doc_no, unnest({_grams("tok")}) AS term
      FROM (SELECT role_id, doc_no, regexp_extract_all(doc, '{TOKEN_RE2}') AS tok FROM _recall_new))
GROUP BY ALL
ORDER BY role_id, term;
DROP TABLE _recall_new;
UPDATE {INDEX} i SET doc_no = d.doc_no FROM {DOCS} d WHERE d.role_id = i.role_id AND d.doc_id = i.doc_id;
"""

# visible documents of a role with their terms (multiplicity: two rows with one text are two documents)
_VISIBLE_POSTINGS = f"""
SELECT v.role_id, v.doc_no, t.term, t.s FROM {{visible}} v
JOIN {TERMS} t ON t.role_id = v.role_id AND t.doc_no = v.doc_no
"""

_STATS_SQL = f"""
CREATE OR REPLACE TABLE {ROLES} AS
SELECT role_id, count(*) FILTER (WHERE valid_to IS NULL) AS n,
       max(greatest(valid_from, coalesce(valid_to, valid_from))) AS stable_from
FROM {INDEX} GROUP BY role_id;
CREATE OR REPLACE TABLE {ROLE_DF} AS
SELECT role_id, term, count(*) AS df
FROM ({_VISIBLE_POSTINGS.format(visible=f"(SELECT * FROM {INDEX} WHERE valid_to IS NULL)")})
GROUP BY ALL ORDER BY role_id, term;
"""


def _base2_sql(visible: str, df: str, sizes: str) -> str:
    """SQL: (role_id, doc_no, base2) of the distinct visible texts, under ``df`` and ``sizes`` (role_id, n)."""
    return f"""
SELECT p.role_id, p.doc_no, fsum(p.s * p.s * power(ln((z.n + 2.0) / (d.df + 1.0)) + 1, 2)) AS base2
FROM (SELECT t.role_id, t.doc_no, t.term, t.s FROM {TERMS} t
      SEMI JOIN (SELECT DISTINCT role_id, doc_no FROM {visible}) v ON v.role_id = t.role_id AND v.doc_no = t.doc_no) p
JOIN {df} d ON d.role_id = p.role_id AND d.term = p.term
JOIN {sizes} z ON z.role_id = p.role_id
GROUP BY ALL
"""


_BASE2_SQL = f"""
UPDATE {INDEX} i SET base2 = b.base2
FROM ({_base2_sql(f"(SELECT * FROM {INDEX} WHERE valid_to IS NULL)", ROLE_DF, ROLES)}) b
WHERE i.valid_to IS NULL AND i.role_id = b.role_id AND i.doc_no = b.doc_no
"""


def _statements(script: str) -> list[str]:
    return [s for s in (part.strip() for part in script.split(";\n")) if s]


def rebuild_terms_and_stats(con: duckdb.DuckDBPyConnection) -> None:
    """Bring the term index and the current-state statistics in line with a rebuilt recall index."""
    for script in (_TERMS_DDL, _TERMS_DROP_SQL, _TERMS_ADD_SQL, _STATS_SQL, _BASE2_SQL):
        for statement in _statements(script):
            con.execute(statement)


# ---- reads ------------------------------------------------------------------------------------
# The query's few weights are computed in Python (from the role's n and the df of its terms); the
# SQL that ranks stays small, because planning a long query would cost more than running it.

_CURRENT_ROWS = f"SELECT * FROM {INDEX} WHERE role_id = $role AND valid_to IS NULL"
_ROWS_AT = (
    f"SELECT * EXCLUDE (base2) FROM {INDEX} WHERE role_id = $role "
    "AND valid_from <= $as_of::TIMESTAMPTZ AND (valid_to IS NULL OR valid_to > $as_of::TIMESTAMPTZ)"
)
_CURRENT_DF = (
    f"SELECT term, df FROM {ROLE_DF} WHERE role_id = $role AND term IN (SELECT unnest($terms::VARCHAR[]))"
)
_DF_AT = f"""
SELECT t.term, count(*) AS df FROM _recall_visible v JOIN {TERMS} t ON t.role_id = v.role_id AND t.doc_no = v.doc_no
WHERE t.term IN (SELECT unnest($terms::VARCHAR[])) GROUP BY t.term
"""
_BASE2_AT = f"""
CREATE OR REPLACE TEMP TABLE _recall_visible_df AS
SELECT v.role_id, t.term, count(*) AS df FROM _recall_visible v
JOIN {TERMS} t ON t.role_id = v.role_id AND t.doc_no = v.doc_no GROUP BY ALL;
CREATE OR REPLACE TEMP TABLE _recall_visible_n AS SELECT $role AS role_id, count(*) AS n FROM _recall_visible;
CREATE OR REPLACE TEMP TABLE _recall_visible_rows AS
SELECT v.*, b.base2 FROM _recall_visible v LEFT JOIN (
    {_base2_sql("_recall_visible", "_recall_visible_df", "_recall_visible_n")}) b USING (role_id, doc_no);
"""


def _ranking_sql(rows: str, columns: str) -> str:
    """SQL: the top ``$k`` of ``rows`` (with ``base2``) by score, then ``tie`` (newest known, then case id)."""
    return f"""
WITH qi AS (SELECT unnest($terms::VARCHAR[]) AS term, unnest($dot_w::DOUBLE[]) AS dot_w, unnest($adj_w::DOUBLE[]) AS adj_w),
hits AS (
    SELECT t.doc_no, sum(qi.dot_w * t.s) AS dot, sum(t.s * t.s * qi.adj_w) AS adj
    FROM {TERMS} t JOIN qi ON qi.term = t.term
    WHERE t.role_id = $role AND t.term IN (SELECT unnest($terms::VARCHAR[]))
    GROUP BY t.doc_no
)
SELECT {columns},
       round(CASE WHEN h.dot > 0 THEN h.dot / ($qnorm * sqrt(r.base2 + h.adj)) ELSE 0 END, 6) AS score
FROM ({rows}) r LEFT JOIN hits h ON h.doc_no = r.doc_no
WHERE ($symbol::VARCHAR IS NULL OR r.symbol = $symbol) AND ($scenario::VARCHAR IS NULL OR r.scenario = $scenario)
ORDER BY score DESC, r.tie
LIMIT $k
"""


def _query_weights(terms: Counter[str], n: int, df: dict[str, int]) -> dict:
    """Per query term: its weight in the dot product and the change of a document's squared norm."""
    dot_w, adj_w, squares = [], [], 0.0
    for term, tf in terms.items():
        idf_q = math.log((n + 2) / (df.get(term, 0) + 2)) + 1  # the query counts as a document
        idf_0 = math.log((n + 2) / (df.get(term, 0) + 1)) + 1
        wq = (1 + math.log(tf)) * idf_q
        squares += wq * wq
        dot_w.append(wq * idf_q)
        adj_w.append(idf_q * idf_q - idf_0 * idf_0)
    return {"terms": list(terms), "dot_w": dot_w, "adj_w": adj_w, "qnorm": math.sqrt(squares)}


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
    role = con.execute(f"SELECT n, stable_from FROM {ROLES} WHERE role_id = $role", {"role": role_id}).fetchone()
    if role is None:
        return []
    terms = query_terms(query)
    params = {"role": role_id, "terms": list(terms)}
    select = ", ".join(f"r.{c}" for c in columns)
    filters = {"role": role_id, "symbol": symbol, "scenario": scenario, "k": k}
    if as_of is None or role[1] is None or as_of >= role[1]:  # the visible set is the current one
        df = dict(con.execute(_CURRENT_DF, params).fetchall())
        weights = _query_weights(terms, role[0], df)
        return con.execute(_ranking_sql(_CURRENT_ROWS, select), {**filters, **weights}).fetchall()
    con.execute(f"CREATE OR REPLACE TEMP TABLE _recall_visible AS {_ROWS_AT}", {"role": role_id, "as_of": as_of})
    try:
        n = con.execute("SELECT count(*) FROM _recall_visible").fetchone()[0]
        df = dict(con.execute(_DF_AT, {"terms": list(terms)}).fetchall())
        for statement in _statements(_BASE2_AT):
            con.execute(statement, {"role": role_id} if "$role" in statement else None)
        weights = _query_weights(terms, n, df)
        return con.execute(_ranking_sql("SELECT * FROM _recall_visible_rows", select), {**filters, **weights}).fetchall()
    finally:
        for table in ("_recall_visible", "_recall_visible_df", "_recall_visible_n", "_recall_visible_rows"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
