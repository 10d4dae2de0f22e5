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

import re
from collections import Counter
from datetime import datetime

import duckdb

from tradingmem_assets.lib import tables

TERMS = tables.ROLE_RECALL_TERMS
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


# The term index: one row per (role, document text, term), kept across rebuilds: only texts new to
# a role are tokenized, texts no row carries any more are dropped.
_TERMS_DDL = f"""
CREATE TABLE IF NOT EXISTS {TERMS} (role_id VARCHAR, term VARCHAR, doc_id UBIGINT, tf INTEGER)
"""
_TERMS_DROP_SQL = f"""
DELETE FROM {TERMS} t WHERE NOT EXISTS (
    SELECT 1 FROM {INDEX} i WHERE i.role_id = t.role_id AND i.doc_id = t.doc_id)
"""
_TERMS_ADD_SQL = f"""
INSERT INTO {TERMS}
WITH new_docs AS (
    SELECT DISTINCT role_id, doc_id, doc FROM {INDEX} i
    WHERE NOT EXISTS (SELECT 1 FROM {TERMS} t WHERE t.role_id = i.role_id AND t.doc_id = i.doc_id)
),
tokens AS (SELECT role_id, doc_id, regexp_extract_all(doc, '{TOKEN_RE2}') AS tok FROM new_docs)
SELECT role_id, term, doc_id, count(*)::INTEGER AS tf
FROM (SELECT role_id, doc_id, unnest({_grams("tok")}) AS term FROM tokens)
GROUP BY ALL
ORDER BY role_id, term
"""

# visible documents of a role with their terms (multiplicity: two rows with one text are two documents)
_VISIBLE_POSTINGS = f"""
SELECT v.role_id, v.doc_id, t.term, t.tf FROM {{visible}} v
JOIN {TERMS} t ON t.role_id = v.role_id AND t.doc_id = v.doc_id
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
    """SQL: (role_id, doc_id, base2) of the distinct visible texts, under ``df`` and ``sizes`` (role_id, n)."""
    return f"""
SELECT p.role_id, p.doc_id, fsum(power(1 + ln(p.tf), 2) * power(ln((s.n + 2.0) / (d.df + 1.0)) + 1, 2)) AS base2
FROM (SELECT t.role_id, t.doc_id, t.term, t.tf FROM {TERMS} t
      SEMI JOIN (SELECT DISTINCT role_id, doc_id FROM {visible}) v ON v.role_id = t.role_id AND v.doc_id = t.doc_id) p
JOIN {df} d ON d.role_id = p.role_id AND d.term = p.term
JOIN {sizes} s ON s.role_id = p.role_id
GROUP BY ALL
"""


_BASE2_SQL = f"""
UPDATE {INDEX} i SET base2 = b.base2
FROM ({_base2_sql(f"(SELECT * FROM {INDEX} WHERE valid_to IS NULL)", ROLE_DF, ROLES)}) b
WHERE i.valid_to IS NULL AND i.role_id = b.role_id AND i.doc_id = b.doc_id
"""


def rebuild_terms_and_stats(con: duckdb.DuckDBPyConnection) -> None:
    """Bring the term index and the current-state statistics in line with a rebuilt recall index."""
    con.execute(_TERMS_DDL)
    con.execute(_TERMS_DROP_SQL)
    con.execute(_TERMS_ADD_SQL)
    con.execute(_STATS_SQL)
    con.execute(_BASE2_SQL)


# ---- reads ------------------------------------------------------------------------------------

_FILTERS = """
  AND ($symbol::VARCHAR IS NULL OR r.symbol = $symbol)
  AND ($scenario::VARCHAR IS NULL OR r.scenario = $scenario)
"""

_CURRENT = f"(SELECT * FROM {INDEX} WHERE role_id = $role AND valid_to IS NULL)"
_AT = (
    f"(SELECT * EXCLUDE (base2) FROM {INDEX} WHERE role_id = $role "
    "AND valid_from <= $as_of::TIMESTAMPTZ AND (valid_to IS NULL OR valid_to > $as_of::TIMESTAMPTZ))"
)


def _ranking_sql(visible: str, n: str, df_of_query: str, columns: str, base2: str | None = None) -> str:
    """SQL: the top ``$k`` of ``visible`` by score; ``base2`` (doc_id, base2) when not a column of ``visible``."""
    norms = "" if base2 is None else f"LEFT JOIN ({base2}) b ON b.doc_id = r.doc_id"  # no terms: no row
    return f"""
WITH q AS (SELECT unnest($terms::VARCHAR[]) AS term, unnest($tfs::INTEGER[]) AS tf),
qi AS (  -- the query's terms: their weight and the change of their idf once the query joins the fit
    SELECT q.term, (1 + ln(q.tf)) * (ln(({n} + 2.0) / (coalesce(d.df, 0) + 2.0)) + 1) AS wq,
           ln(({n} + 2.0) / (coalesce(d.df, 0) + 2.0)) + 1 AS idf_q,
           ln(({n} + 2.0) / (coalesce(d.df, 0) + 1.0)) + 1 AS idf_0
    FROM q LEFT JOIN ({df_of_query}) d ON d.term = q.term
),
qn AS (SELECT sqrt(fsum(wq * wq)) AS qnorm FROM qi),
hits AS (
    SELECT t.doc_id, sum(qi.wq * qi.idf_q * (1 + ln(t.tf))) AS dot,
           sum(power(1 + ln(t.tf), 2) * (qi.idf_q * qi.idf_q - qi.idf_0 * qi.idf_0)) AS adj
    FROM {TERMS} t JOIN qi ON qi.term = t.term
    WHERE t.role_id = $role AND t.term IN (SELECT unnest($terms::VARCHAR[]))
    GROUP BY t.doc_id
)
SELECT {columns},
       round(CASE WHEN qn.qnorm > 0 AND h.dot > 0
                  THEN h.dot / (qn.qnorm * sqrt(base2 + h.adj)) ELSE 0 END, 6) AS score
FROM {visible} r
{norms}
LEFT JOIN hits h ON h.doc_id = r.doc_id
CROSS JOIN qn
WHERE TRUE {_FILTERS}
ORDER BY score DESC, r.known_at DESC, r.case_id
LIMIT $k
"""


def _current_sql(columns: str) -> str:
    return _ranking_sql(
        visible=_CURRENT,
        n=f"(SELECT n FROM {ROLES} WHERE role_id = $role)",
        df_of_query=f"SELECT term, df FROM {ROLE_DF} WHERE role_id = $role AND term IN (SELECT unnest($terms::VARCHAR[]))",
        columns=columns,
    )


def _at_sql(columns: str) -> str:
    df = f"SELECT role_id, term, count(*) AS df FROM ({_VISIBLE_POSTINGS.format(visible='visible_at')}) GROUP BY ALL"
    body = _ranking_sql(
        visible="visible_at",
        n="(SELECT count(*) FROM visible_at)",
        df_of_query="SELECT term, df FROM df_at",
        base2=f"SELECT doc_id, base2 FROM ({_base2_sql('visible_at', 'df_at', '(SELECT $role AS role_id, count(*) AS n FROM visible_at)')})",
        columns=columns,
    )
    return (
        f"WITH visible_at AS MATERIALIZED {_AT},\ndf_at AS MATERIALIZED ({df}),\n" + body.removeprefix("\nWITH ")
    )


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
    stable = con.execute(f"SELECT stable_from FROM {ROLES} WHERE role_id = $role", {"role": role_id}).fetchone()
    if stable is None:
        return []
    terms = query_terms(query)
    params = {
        "role": role_id,
        "symbol": symbol,
        "scenario": scenario,
        "k": k,
        "terms": list(terms),
        "tfs": list(terms.values()),
    }
    select = ", ".join(f"r.{c}" for c in columns)
    if as_of is None or stable[0] is None or as_of >= stable[0]:
        return con.execute(_current_sql(select), params).fetchall()
    return con.execute(_at_sql(select), {**params, "as_of": as_of}).fetchall()
