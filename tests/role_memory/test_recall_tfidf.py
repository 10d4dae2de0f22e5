"""Recall's set-based TF-IDF gives scikit-learn's scores, on the current state and as of any instant."""

import random
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from tradingmem_assets.defs.role_memory.recall_terms import rebuild_terms_and_stats
from tradingmem_assets.defs.role_memory.recall_tfidf import (
    RecallIndexOutdatedError,
    _round6,
    query_terms,
    ranked,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.similarity import tfidf_cosine

T0 = datetime(2024, 1, 1, tzinfo=UTC)
WORDS = (
    "trend confirmed by volume breakout failed funding flipped rate differential priced in valuation "
    "too rich earnings gap fade short squeeze thin liquidity 50-day moving average café naïve 趋势 确认 x_y"
).split()


def _doc(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return ""  # a text without a single token
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 14))]
    return " ".join(w.upper() if rng.random() < 0.1 else w for w in words)


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    return _built_index(tmp_path_factory.mktemp("tfidf") / "w.duckdb")


def _built_index(path) -> duckdb.DuckDBPyConnection:
    """A recall index of two roles whose rows start, end and repeat texts at different instants."""
    rng = random.Random(7)
    rows = []
    texts: list[str] = []
    for i in range(400):
        text = rng.choice(texts) if texts and rng.random() < 0.15 else _doc(rng)  # repeated texts
        texts.append(text)
        start = T0 + timedelta(days=rng.randint(0, 60))
        end = start + timedelta(days=rng.randint(1, 40)) if rng.random() < 0.3 else None
        rows.append(
            (
                rng.choice(["r1", "r2"]),
                rng.choice(["AAA", "BBB"]),
                rng.choice([None, "cut"]),
                start,
                end,
                f"c{i:04d}",
                start,
                text.lower(),
            )
        )
    con = duckdb.connect(str(path))
    con.execute(
        f"CREATE TABLE {tables.ROLE_RECALL_INDEX} (role_id VARCHAR, symbol VARCHAR, scenario VARCHAR, "
        "valid_from TIMESTAMPTZ, valid_to TIMESTAMPTZ, case_id VARCHAR, known_at TIMESTAMPTZ, doc VARCHAR)"
    )
    con.executemany(f"INSERT INTO {tables.ROLE_RECALL_INDEX} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.execute(
        f"CREATE OR REPLACE TABLE {tables.ROLE_RECALL_INDEX} AS SELECT *, md5_number_upper(doc) AS doc_id, "
        "NULL::INTEGER AS doc_no, NULL::DOUBLE AS base2, "
        f"row_number() OVER (PARTITION BY role_id ORDER BY known_at DESC, case_id) AS tie FROM {tables.ROLE_RECALL_INDEX}"
    )
    rebuild_terms_and_stats(con)
    return con


def _reference(con, role, query, as_of, symbol=None, scenario=None) -> list[tuple[str, float]]:
    """scikit-learn fitted on the query and the role's visible documents, then the filters and the order."""
    visible = con.execute(
        f"SELECT case_id, doc, known_at, symbol, scenario FROM {tables.ROLE_RECALL_INDEX} WHERE role_id = $r AND "
        "CASE WHEN $t::TIMESTAMPTZ IS NULL THEN valid_to IS NULL ELSE valid_from <= $t::TIMESTAMPTZ "
        "AND (valid_to IS NULL OR valid_to > $t::TIMESTAMPTZ) END",
        {"r": role, "t": as_of},
    ).fetchall()
    scores = tfidf_cosine([query], [v[1] for v in visible])[0] if visible else []
    kept = [
        (round(float(s), 6), v)
        for v, s in zip(visible, scores, strict=True)
        if (symbol is None or v[3] == symbol) and (scenario is None or v[4] == scenario)
    ]
    kept.sort(key=lambda sv: (-sv[0], -sv[1][2].timestamp(), sv[1][0]))
    return [(v[0], s) for s, v in kept]


QUERIES = [
    "trend confirmed by volume",
    "Funding flipped, funding FLIPPED",
    "趋势 确认",
    "nothing matches zzz",
    "",
]
INSTANTS = [None, T0 + timedelta(days=20), T0 + timedelta(days=45), T0 + timedelta(days=200)]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("as_of", INSTANTS)
def test_scores_and_order_are_scikit_learns(index, query, as_of):
    for role in ("r1", "r2"):
        for symbol, scenario in ((None, None), ("AAA", None), (None, "cut")):
            got = ranked(
                index,
                ["case_id"],
                role_id=role,
                query=query,
                symbol=symbol,
                scenario=scenario,
                k=400,
                as_of=as_of,
            )
            want = _reference(index, role, query, as_of, symbol, scenario)
            assert [(c, pytest.approx(s, abs=2e-6)) for c, s in want] == [tuple(r) for r in got]


@pytest.mark.parametrize("as_of", [None, T0 + timedelta(days=20)])
def test_the_first_k_are_the_first_k_of_the_whole_order(index, as_of):
    """The ranking keeps only rows scoring at least the k-th best: equal scores still go by tie."""
    for query in QUERIES:
        whole = ranked(
            index, ["case_id"], role_id="r1", query=query, symbol=None, scenario=None, k=400, as_of=as_of
        )
        for k in (1, 3, 7, 60):
            assert (
                ranked(
                    index,
                    ["case_id"],
                    role_id="r1",
                    query=query,
                    symbol=None,
                    scenario=None,
                    k=k,
                    as_of=as_of,
                )
                == whole[:k]
            )


def test_scores_are_rounded_as_duckdb_rounds_them():
    """Six places by the double's exact value, halves up; checked against DuckDB's own round()."""
    rng = np.random.default_rng(5)
    halves = (np.arange(20_000) + 0.5) / 1e6
    x = np.concatenate(
        [rng.random(20_000), halves, np.nextafter(halves, 1), np.nextafter(halves, 0), [0.0, 1.0, 0.0078125]]
    )
    con = duckdb.connect()
    con.register("x", pa.table({"x": x}))
    want = con.execute("SELECT round(x, 6) FROM x").fetchnumpy()["round(x, 6)"]
    assert np.array_equal(_round6(x), want)
    assert _round6(np.array([0.0078125]))[0] == 0.007813  # an exact half goes up


def test_a_read_at_or_after_the_last_change_uses_the_current_state_and_agrees_with_computing_it(index):
    last = index.execute(f"SELECT max(stable_from) FROM {tables.ROLE_RECALL_ROLES}").fetchone()[0]
    current = ranked(
        index, ["case_id"], role_id="r1", query=QUERIES[0], symbol=None, scenario=None, k=50, as_of=None
    )
    at_last = ranked(
        index, ["case_id"], role_id="r1", query=QUERIES[0], symbol=None, scenario=None, k=50, as_of=last
    )
    before = last - timedelta(microseconds=1)
    assert current == at_last
    assert ranked(
        index, ["case_id"], role_id="r1", query=QUERIES[0], symbol=None, scenario=None, k=50, as_of=before
    ) == [tuple(r) for r in _reference_rows(index, before)]


def _reference_rows(con, as_of):
    return [(c, pytest.approx(s, abs=2e-6)) for c, s in _reference(con, "r1", QUERIES[0], as_of)][:50]


def test_an_unknown_role_recalls_nothing(index):
    assert (
        ranked(
            index, ["case_id"], role_id="nobody", query="trend", symbol=None, scenario=None, k=5, as_of=None
        )
        == []
    )


def test_query_terms_are_unigrams_and_neighbouring_bigrams():
    assert query_terms("Trend-confirmed  by trend") == {
        "trend": 2,
        "confirmed": 1,
        "by": 1,
        "trend confirmed": 1,
        "confirmed by": 1,
        "by trend": 1,
    }


_S_NOT_TF = [  # each term's s = 1 + ln tf stored instead of its tf
    f"CREATE OR REPLACE TABLE {t} AS SELECT * EXCLUDE (tf), 1 + ln(tf) AS s FROM {t}"
    for t in (tables.ROLE_RECALL_TERMS, tables.ROLE_RECALL_POSTINGS)
]
OLDER_LAYOUTS = {
    "s instead of tf": _S_NOT_TF,
    "no term numbers, postings by role and term": [
        *_S_NOT_TF,
        f"ALTER TABLE {tables.ROLE_RECALL_DF} DROP COLUMN term_no",
        f"CREATE OR REPLACE TABLE {tables.ROLE_RECALL_POSTINGS} AS SELECT d.role_id, d.term, t.doc_no, t.s "
        f"FROM {tables.ROLE_RECALL_TERMS} t JOIN {tables.ROLE_RECALL_DF} d USING (role_id, term)",
    ],
}


@pytest.mark.parametrize("statements", OLDER_LAYOUTS.values(), ids=OLDER_LAYOUTS.keys())
@pytest.mark.parametrize("as_of", [None, INSTANTS[1]], ids=["current", "earlier"])
def test_an_index_of_an_older_layout_is_refused_clearly_and_the_next_rebuild_renews_it(
    tmp_path, statements, as_of
):
    con = _built_index(tmp_path / "old.duckdb")
    read = dict(role_id="r1", query=QUERIES[0], symbol=None, scenario=None, k=20, as_of=as_of)
    want = ranked(con, ["case_id"], **read)
    for statement in statements:
        con.execute(statement)
    with pytest.raises(RecallIndexOutdatedError, match="older version of tradingmem.*materialize role_cases"):
        ranked(con, ["case_id"], **read)
    rebuild_terms_and_stats(con)
    assert ranked(con, ["case_id"], **read) == want and want


def test_a_rebuild_after_rows_come_and_go_keeps_the_scores_exact(index):
    index.execute(
        f"DELETE FROM {tables.ROLE_RECALL_INDEX} WHERE case_id < 'c0100'"
    )  # texts that no row carries now
    index.execute(
        f"INSERT INTO {tables.ROLE_RECALL_INDEX} SELECT * REPLACE ('n' || case_id AS case_id, "
        "doc || ' breakout failed again' AS doc, md5_number_upper(doc || ' breakout failed again') AS doc_id) "
        f"FROM {tables.ROLE_RECALL_INDEX} WHERE case_id < 'c0150'"
    )
    index.execute(
        f"CREATE OR REPLACE TABLE {tables.ROLE_RECALL_INDEX} AS SELECT * REPLACE (row_number() OVER "
        f"(PARTITION BY role_id ORDER BY known_at DESC, case_id) AS tie) FROM {tables.ROLE_RECALL_INDEX}"
    )
    rebuild_terms_and_stats(index)
    for as_of in INSTANTS:
        for query in QUERIES[:3] + ["breakout failed again"]:
            got = ranked(
                index, ["case_id"], role_id="r2", query=query, symbol=None, scenario=None, k=400, as_of=as_of
            )
            want = _reference(index, "r2", query, as_of)
            assert [(c, pytest.approx(s, abs=2e-6)) for c, s in want] == [tuple(r) for r in got]
    orphans = index.execute(
        f"SELECT count(*) FROM {tables.ROLE_RECALL_DOCS} d ANTI JOIN {tables.ROLE_RECALL_INDEX} i USING (role_id, doc_id)"
    ).fetchone()[0]
    assert orphans == 0
