"""The recall term index counts each text's terms as scikit-learn's analyzer finds them (recall's
TF-IDF is scikit-learn's), whatever the script, and however many texts are counted at a time."""

import random
from collections import Counter

import duckdb
import polars as pl
import pytest
from sklearn.feature_extraction.text import CountVectorizer

from tradingmem_assets.defs.role_memory import recall_terms
from tradingmem_assets.defs.role_memory.recall_terms import rebuild_terms_and_stats, term_counts
from tradingmem_assets.lib import tables

# letters of several scripts (precomposed), digits of several kinds (ASCII, Arabic-Indic, fullwidth,
# superscript), the underscore, and what separates terms: spaces, punctuation, symbols, emoji and a
# lone combining mark
PIECES = [*"abcxyzéßøλж趋势กا", *"0729٣７²", "_", " ", "  ", "\t", "\n", *"-,.!'/%€→😀", "\u0301"]
ANALYZER = CountVectorizer(token_pattern=r"(?u)\b\w+\b", ngram_range=(1, 2), lowercase=False).build_analyzer()


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40))) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_texts_terms_and_counts_are_scikit_learns(seed):
    texts = _texts(seed, 300)
    docs = pl.DataFrame({"role_id": ["r"] * len(texts), "doc_no": range(1, len(texts) + 1), "doc": texts})
    got = term_counts(docs)
    assert got.schema == pl.Schema(
        {"role_id": pl.String(), "doc_no": pl.Int64(), "term": pl.String(), "tf": pl.Int32()}
    )
    by_text: dict[int, Counter[str]] = {}
    for doc_no, term, tf in got.select("doc_no", "term", "tf").iter_rows():
        by_text.setdefault(doc_no, Counter())[term] += tf
    want = {no: Counter(ANALYZER(text)) for no, text in enumerate(texts, start=1) if ANALYZER(text)}
    assert by_text == want
    assert got.select("doc_no", "term").is_duplicated().sum() == 0  # one row per (text, term)


def test_the_stored_terms_do_not_depend_on_how_many_texts_are_counted_at_a_time(tmp_path, monkeypatch):
    texts = _texts(4, 120)

    def stored(chunk: int) -> list[tuple]:
        monkeypatch.setattr(recall_terms, "TERMS_CHUNK", chunk)
        with duckdb.connect(str(tmp_path / f"chunk{chunk}.duckdb")) as con:
            con.execute(
                f"CREATE TABLE {tables.ROLE_RECALL_INDEX} AS SELECT 'r' || (i % 2) AS role_id, "
                "NULL::TIMESTAMPTZ AS valid_to, TIMESTAMPTZ '2024-01-01' AS valid_from, doc, "
                "md5_number_upper(doc) AS doc_id, NULL::INTEGER AS doc_no, NULL::DOUBLE AS base2, i AS tie "
                "FROM (SELECT unnest($texts) AS doc, generate_subscripts($texts, 1) AS i)",
                {"texts": texts},
            )
            rebuild_terms_and_stats(con)
            return con.execute(
                f"SELECT d.role_id, d.doc_id, t.term, t.tf FROM {tables.ROLE_RECALL_TERMS} t "
                f"JOIN {tables.ROLE_RECALL_DOCS} d USING (role_id, doc_no) ORDER BY ALL"
            ).fetchall()

    whole = stored(10_000)
    assert whole and stored(7) == whole
