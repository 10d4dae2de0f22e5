"""Recall's term index and the TF-IDF statistics of each role's current corpus (written side).

Kept beside ``main.role_recall_index`` and brought in line by every rebuild of it:

- ``role_recall_docs``: every distinct (role, text) gets a small number once (``doc_no``);
- ``role_recall_terms``: the terms of each text with their count ``tf`` in it (only texts new to a
  role are tokenized; texts no row carries any more are dropped);
- for each role's current corpus (the rows with no end of validity): ``role_recall_roles`` (``n``,
  the instant ``stable_from`` of its last validity change, a fingerprint of the corpus),
  ``role_recall_df`` (per term: how many current rows hold it, and a number for the (role, term)
  unique in the table), ``role_recall_postings`` (the terms of the current texts with their ``tf``,
  keyed and sorted by that number: one integer filter reads one term's rows) and
  ``role_recall_norms`` (``base2`` of each current text, copied onto the current index rows). Only
  roles whose corpus fingerprint changed are recomputed.

Terms are scikit-learn's for ``token_pattern=r"(?u)\\b\\w+\\b", ngram_range=(1, 2)``: maximal runs of
letters, digits and ``_`` of the lower-cased text (``[\\p{L}\\p{N}_]+``: Python's ``\\w+``, as the query
is tokenized), then each pair of neighbouring tokens joined by one space. The texts new to a role
are counted by Polars (``term_counts``): at SF 10, 99,169 texts' 9.1 million terms took 1.5 s
and 0.9 s to insert, where DuckDB's ``regexp_extract_all``, ``unnest`` and grouping of the same terms took
3.3–3.6 s. See recall_tfidf.py for the arithmetic.
"""

from __future__ import annotations

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import append_rows, run_script, table_columns

INDEX = tables.ROLE_RECALL_INDEX
DOCS = tables.ROLE_RECALL_DOCS
TERMS = tables.ROLE_RECALL_TERMS
POSTINGS = tables.ROLE_RECALL_POSTINGS
NORMS = tables.ROLE_RECALL_NORMS
DF = tables.ROLE_RECALL_DF
ROLES = tables.ROLE_RECALL_ROLES

TOKEN = r"[\p{L}\p{N}_]+"
TERMS_CHUNK = 25_000  # texts counted at a time: about 90 terms each, so 2.3 million terms held at once


def term_counts(docs: pl.DataFrame) -> pl.DataFrame:
    """``(role_id, doc_no, term, tf)``: each term of the texts ``docs`` (``role_id``, ``doc_no``,
    ``doc``, lower-cased) with its count in its text. Empty texts have no terms."""
    numbered = docs.lazy().with_row_index("text")
    tokens = (
        numbered.select("text", pl.col("doc").str.extract_all(TOKEN).alias("term"))
        .explode("term")
        .drop_nulls("term")
    )
    same_text = pl.col("text") == pl.col("text").shift(-1)
    bigrams = tokens.select(
        "text", pl.when(same_text).then(pl.col("term") + " " + pl.col("term").shift(-1)).alias("term")
    ).drop_nulls("term")
    return (
        pl.concat([tokens, bigrams])
        .group_by("text", "term")
        .len("tf")
        .join(numbered.select("text", "role_id", "doc_no"), on="text")
        .select("role_id", "doc_no", "term", pl.col("tf").cast(pl.Int32))
        .collect()
    )


# a text's squared norm before the query joins the fit: over its terms p (tf, so s = 1 + ln tf), their
# df d, corpus size z
BASE2_SUM = "fsum((1 + ln(p.tf)) * (1 + ln(p.tf)) * power(ln((z.n + 2.0) / (d.df + 1.0)) + 1, 2))"


def base2_sql(visible: str, df: str, n: str) -> str:
    """SQL: (role_id, doc_no, base2) of the distinct texts of ``visible`` rows, under ``df`` (role_id,
    term, df) and ``n`` (role_id, n): the squared norm of a text before the query joins the fit."""
    return f"""
SELECT p.role_id, p.doc_no, {BASE2_SUM} AS base2
FROM (SELECT t.role_id, t.doc_no, t.term, t.tf FROM {TERMS} t
      SEMI JOIN (SELECT DISTINCT role_id, doc_no FROM {visible}) v ON v.role_id = t.role_id AND v.doc_no = t.doc_no) p
JOIN {df} d ON d.role_id = p.role_id AND d.term = p.term
JOIN {n} z ON z.role_id = p.role_id
GROUP BY ALL
"""


_DDL = f"""
CREATE TABLE IF NOT EXISTS {DOCS} (role_id VARCHAR, doc_id UBIGINT, doc_no INTEGER);
CREATE TABLE IF NOT EXISTS {TERMS} (role_id VARCHAR, doc_no INTEGER, term VARCHAR, tf INTEGER);
CREATE TABLE IF NOT EXISTS {POSTINGS} (term_no BIGINT, doc_no INTEGER, tf INTEGER);
CREATE TABLE IF NOT EXISTS {DF} (role_id VARCHAR, term VARCHAR, df HUGEINT, term_no BIGINT);
CREATE TABLE IF NOT EXISTS {NORMS} (role_id VARCHAR, doc_no INTEGER, base2 DOUBLE);
CREATE TABLE IF NOT EXISTS {ROLES} (role_id VARCHAR, n BIGINT, stable_from TIMESTAMPTZ, corpus HUGEINT);
"""

_TERMS_SQL = f"""
CREATE OR REPLACE TEMP TABLE _recall_gone AS
SELECT role_id, doc_no FROM {DOCS} d
WHERE NOT EXISTS (SELECT 1 FROM {INDEX} i WHERE i.role_id = d.role_id AND i.doc_id = d.doc_id);
DELETE FROM {TERMS} t USING _recall_gone g WHERE t.role_id = g.role_id AND t.doc_no = g.doc_no;
DELETE FROM {DOCS} d USING _recall_gone g WHERE d.role_id = g.role_id AND d.doc_no = g.doc_no;
CREATE OR REPLACE TEMP TABLE _recall_new AS
SELECT n.role_id, n.doc_id, n.doc,
       (coalesce(m.top, 0) + row_number() OVER (PARTITION BY n.role_id ORDER BY n.doc_id))::INTEGER AS doc_no
FROM (SELECT DISTINCT role_id, doc_id, doc FROM {INDEX} i
      WHERE NOT EXISTS (SELECT 1 FROM {DOCS} d WHERE d.role_id = i.role_id AND d.doc_id = i.doc_id)) n
LEFT JOIN (SELECT role_id, max(doc_no) AS top FROM {DOCS} GROUP BY role_id) m USING (role_id);
INSERT INTO {DOCS} SELECT role_id, doc_id, doc_no FROM _recall_new;
"""

# (``_recall_new``'s terms are inserted in between: ``_insert_terms``)
_INDEXED_SQL = f"""
DROP TABLE _recall_new;
DROP TABLE _recall_gone;
UPDATE {INDEX} i SET doc_no = d.doc_no FROM {DOCS} d WHERE d.role_id = i.role_id AND d.doc_id = i.doc_id;
"""

# roles whose current corpus (the multiset of its current texts) changed since the last rebuild
_CHANGED_SQL = f"""
CREATE OR REPLACE TEMP TABLE _recall_roles AS
SELECT role_id, count(*) FILTER (WHERE valid_to IS NULL) AS n,
       max(greatest(valid_from, coalesce(valid_to, valid_from))) AS stable_from,
       coalesce(sum(hash(doc_id)::HUGEINT) FILTER (WHERE valid_to IS NULL), 0) AS corpus
FROM {INDEX} GROUP BY role_id;
CREATE OR REPLACE TEMP TABLE _recall_changed AS
SELECT role_id FROM _recall_roles r
WHERE NOT EXISTS (SELECT 1 FROM {ROLES} o WHERE o.role_id = r.role_id AND o.n = r.n AND o.corpus = r.corpus)
UNION SELECT role_id FROM {ROLES} o WHERE NOT EXISTS (SELECT 1 FROM _recall_roles r WHERE r.role_id = o.role_id);
"""

_CURRENT = (
    f"(SELECT * FROM {INDEX} WHERE valid_to IS NULL AND role_id IN (SELECT role_id FROM _recall_changed))"
)

_STATS_SQL = f"""
CREATE OR REPLACE TEMP TABLE _recall_current AS
SELECT role_id, doc_no, count(*) AS rows FROM {_CURRENT} GROUP BY ALL;
DELETE FROM {DF} WHERE role_id IN (SELECT role_id FROM _recall_changed);
CREATE OR REPLACE TEMP TABLE _recall_postings AS  -- the unchanged roles' (their terms are still in df)
SELECT * FROM {POSTINGS} WHERE term_no IN (SELECT term_no FROM {DF});
INSERT INTO {DF}  -- new numbers above every kept one
SELECT role_id, term, df,
       (SELECT coalesce(max(term_no), 0) FROM {DF}) + row_number() OVER (ORDER BY role_id, term) AS term_no
FROM (SELECT t.role_id, t.term, sum(c.rows) AS df
      FROM _recall_current c JOIN {TERMS} t ON t.role_id = c.role_id AND t.doc_no = c.doc_no
      GROUP BY t.role_id, t.term);
INSERT INTO _recall_postings
SELECT d.term_no, t.doc_no, t.tf FROM {TERMS} t
SEMI JOIN _recall_current c ON c.role_id = t.role_id AND c.doc_no = t.doc_no
JOIN {DF} d ON d.role_id = t.role_id AND d.term = t.term;
CREATE OR REPLACE TABLE {POSTINGS} AS  -- sorted by term number: a read's term lookup skips the rest
SELECT * FROM _recall_postings ORDER BY term_no, doc_no;
DROP TABLE _recall_postings;
DELETE FROM {NORMS} WHERE role_id IN (SELECT role_id FROM _recall_changed);
INSERT INTO {NORMS}
{base2_sql("_recall_current", DF, "_recall_roles")};
DELETE FROM {ROLES};
INSERT INTO {ROLES} SELECT role_id, n, stable_from, corpus FROM _recall_roles;
CREATE OR REPLACE TABLE {INDEX} AS  -- rewritten in its order: updating every current row cost twice that
SELECT i.* REPLACE (
    CASE WHEN i.valid_to IS NULL AND b.doc_no IS NOT NULL THEN b.base2 ELSE i.base2 END AS base2)
FROM {INDEX} i LEFT JOIN {NORMS} b ON b.role_id = i.role_id AND b.doc_no = i.doc_no
ORDER BY i.role_id, i.tie;
DROP TABLE _recall_current;
DROP TABLE _recall_changed;
DROP TABLE _recall_roles;
"""


def layout_outdated(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the stored term index was written by an older version of this code (terms without
    numbers, or with ``s`` instead of ``tf``)."""
    terms, df = table_columns(con, TERMS), table_columns(con, DF)
    return bool((terms and "tf" not in terms) or (df and "term_no" not in df))


def rebuild_terms_and_stats(con: duckdb.DuckDBPyConnection) -> None:
    """Bring the term index and the current-state statistics in line with a just rebuilt recall index."""
    if layout_outdated(con):  # computed anew, every text tokenized again
        for table in (DOCS, TERMS, DF, POSTINGS, NORMS, ROLES):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    run_script(con, _DDL)
    run_script(con, _TERMS_SQL)
    _insert_terms(con)
    for script in (_INDEXED_SQL, _CHANGED_SQL, _STATS_SQL):
        run_script(con, script)


def _insert_terms(con: duckdb.DuckDBPyConnection) -> None:
    """The terms of the texts new to a role (``_recall_new``) into the term index, some at a time."""
    docs = con.sql("SELECT role_id, doc_no, doc FROM _recall_new ORDER BY role_id, doc_no").pl()
    for start in range(0, docs.height, TERMS_CHUNK):
        append_rows(con, TERMS, term_counts(docs.slice(start, TERMS_CHUNK)))
