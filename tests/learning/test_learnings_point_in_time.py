"""Learnings in time (SPEC 8 and 16): arrival-order dedup, known_at, and reads as of an instant.

Real warehouses materialized through Dagster: a build at T2 agrees with a build at T1 on every
decision up to T1, and ``suggest(..., as_of=T1)`` on the later warehouse answers exactly what the
earlier one answers (ids, order, scores, counters, weights).
"""

import json
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from sklearn.feature_extraction.text import TfidfVectorizer

from tests.learning.test_learnings import FUNDING, LEARNING, RESEARCH, TRADE, feedback, turn
from tests.world import World, ts
from tradingmem_assets.defs.learning.arrival_tfidf import ArrivalTfidf
from tradingmem_assets.defs.learning.dedup import TRIGGER_SIMILARITY
from tradingmem_assets.defs.learning.learnings import learnings_as_of
from tradingmem_assets.defs.learning.review import learning_id_for
from tradingmem_assets.defs.learning.suggest import suggest
from tradingmem_assets.lib.similarity import tfidf_vectorizer, tfidf_vectors
from tradingmem_assets.lib.warehouse import connection

QUOTES = [("get_quote", {"symbol": "SOLUSD"}), ("get_order_book", {"symbol": "SOLUSD"}), ("risk_check", {})]
NAMES = {
    "funding": [n for n, _ in FUNDING],
    "research": [n for n, _ in RESEARCH],
    "trade": [n for n, _ in TRADE],
    "quotes": [n for n, _ in QUOTES],
}

# --------------------------------------------------------------------------------------- incremental TF-IDF

HAND_CORPORA = [
    [
        "check BTC funding then size a long",
        "Check BTC funding, then size a long",
        "check btc funding then size a long now please",
        "research AAPLX fundamentals before earnings",
        "research aaplx fundamentals before earnings season",
        "buy eth with a limit order now",
        "buy buy buy eth eth",
        "???",
        "a b c",
        "research AAPLX fundamentals before earnings",
    ],
    ["x", "x y", "y z", "x y z", "z z z z", "", "x x y y z z", "q", "q x"],
    ["funding funding rate", "rate", "rate funding", "the rate of funding", "of the"],
]


def _sklearn_cosines(make, corpus: list[str]) -> np.ndarray:
    """Cosines of the last text to every earlier one, TF-IDF fitted on the whole ``corpus``."""
    try:
        matrix = make().fit_transform(corpus)
    except ValueError:  # empty vocabulary: nothing is similar to anything
        return np.zeros(len(corpus) - 1)
    return (matrix[:-1] @ matrix[-1].T).toarray().ravel()


@pytest.mark.parametrize(
    "make", [TfidfVectorizer, tfidf_vectorizer], ids=["sklearn_defaults", "lib_similarity"]
)
@pytest.mark.parametrize("corpus", HAND_CORPORA, ids=["triggers", "letters", "stopwords"])
def test_arrival_tfidf_matches_sklearn_fitted_on_the_corpus_of_each_instant(make, corpus):
    groups = [i % 2 for i in range(len(corpus))]
    inc = ArrivalTfidf.like(make())
    for i, text in enumerate(corpus):
        doc = inc.document(text)
        ids, cos = inc.cosines(doc, groups[i])
        got = np.zeros(i)
        got[ids] = cos
        want = _sklearn_cosines(make, corpus[: i + 1])  # stored documents (every group) + the candidate
        same_group = np.array([groups[j] == groups[i] for j in range(i)], dtype=bool)
        assert np.abs(got - np.where(same_group, want, 0.0)).max(initial=0.0) < 1e-9, (i, text)
        assert all(groups[j] == groups[i] for j in ids)
        inc.add(doc, groups[i])
    assert inc.size == len(corpus)


def test_arrival_tfidf_pruning_keeps_every_document_at_or_above_the_bar():
    rng = random.Random(7)
    words = "btc eth funding rate long short size check the a order book risk buy sell limit now".split()
    corpus = [" ".join(rng.choices(words, k=rng.randint(1, 7))) for _ in range(120)]
    inc = ArrivalTfidf.like(tfidf_vectorizer())
    for i, text in enumerate(corpus):
        doc = inc.document(text)
        all_ids, all_cos = inc.cosines(doc, i % 3)
        ids, cos = inc.cosines(doc, i % 3, min_cosine=0.5)
        expected = dict(zip(all_ids.tolist(), all_cos.tolist(), strict=True))
        assert {d for d, c in expected.items() if c >= 0.5} <= set(ids.tolist())
        assert np.allclose(cos, [expected[d] for d in ids.tolist()], rtol=0, atol=1e-12)
        inc.add(doc, i % 3)


def test_arrival_tfidf_refuses_settings_it_cannot_reproduce():
    with pytest.raises(ValueError, match="smooth_idf"):
        ArrivalTfidf.like(TfidfVectorizer(smooth_idf=False))
    with pytest.raises(ValueError, match="min_df"):
        ArrivalTfidf.like(TfidfVectorizer(min_df=2))


# --------------------------------------------------------------------------------------- worlds

A1 = "check btc funding then size a long"
B1 = "check btc funding then size a long now please"  # cosine to A1 < 0.8 when it arrives
A2 = "research AAPLX fundamentals before earnings"
B2 = "research AAPLX fundamentals before earnings season"  # cosine to A2 >= 0.8 when it arrives

EARLY_TURNS = [
    turn("t01", A1, FUNDING, at="2024-06-01 10:00"),
    turn("t02", B1, FUNDING, at="2024-06-02 10:00"),
    turn("t03", A2, RESEARCH, at="2024-06-03 10:00"),
    turn("t04", B2, RESEARCH, at="2024-06-04 10:00"),
    turn("t05", "Check BTC funding, then size a long", FUNDING, at="2024-06-05 10:00"),
    turn("t06", "buy eth with a limit order now", TRADE, at="2024-06-06 10:00"),
    # not reviewed (not explicit), then reviewed: the learning is known from the reviewed one
    turn("t07", "scan the sol order book for support", QUOTES, at="2024-06-06 12:00", explicit=False),
    turn("t08", "scan the sol order book for support", QUOTES, at="2024-06-07 09:30"),
    # two turns at one instant: arrival order is (started_at, turn_id), so t09a creates it
    turn("t09b", "Quote SOL then check risk", QUOTES, at="2024-06-08 08:00"),
    turn("t09a", "quote sol then check risk", QUOTES, at="2024-06-08 08:00"),
]
# later arrivals: the words that tell B1 from A1 become common (the old global TF-IDF then merged
# B1 into A1), A2's words become common under other tools (it then split B2 from A2), and later
# turns join earlier learnings
LATE_TURNS = [
    *(
        turn(f"u{i:02d}", f"{w} {x}", QUOTES if i % 2 else TRADE, at=f"2024-06-{12 + i % 8:02d} 10:00")
        for i, (w, x) in enumerate(
            (w, x)
            for w in ("now", "please")
            for x in ("eth", "sol", "xrp", "doge", "ada", "dot", "bnb", "ltc")
        )
    ),
    *(
        turn(f"v{i:02d}", f"{A2} {x}", (TRADE, QUOTES, FUNDING)[i % 3], at=f"2024-06-21 {10 + i:02d}:00")
        for i, x in enumerate(("eth", "sol", "xrp", "doge", "ada", "dot", "bnb", "ltc"))
    ),
    turn("w01", "check BTC funding then size a long", FUNDING, at="2024-06-22 10:00"),
    turn("w02", "research aaplx fundamentals before earnings", RESEARCH, at="2024-06-23 10:00"),
    turn("w03", "summarize the macro outlook for eth", RESEARCH, at="2024-06-24 10:00"),
]

T1 = "2024-06-10T00:00:00Z"
T2 = "2024-07-01T00:00:00Z"


def lid(text: str, kind: str) -> str:
    return learning_id_for(text, NAMES[kind])


def snapshot(world: World) -> tuple[dict, dict]:
    learned = {
        r[0]: (r[1], r[2])
        for r in world.rows("SELECT learning_id, known_at, created_at FROM learnings ORDER BY learning_id")
    }
    reviews = {
        r[0]: (r[1], r[2]) for r in world.rows("SELECT turn_id, outcome, learning_id FROM learning_reviews")
    }
    return learned, reviews


def _global_cosine(turns: list[dict], a: str, b: str) -> float:
    """What the old dedup did: one TF-IDF fitted on the triggers of every distinct candidate ever seen."""
    candidates: dict[str, str] = {}
    for t in sorted(turns, key=lambda t: (t["started_at"], t["turn_id"])):
        if t["explicit_learn"]:
            names = [c["tool_name"] for c in json.loads(t["tool_calls"])]
            candidates.setdefault(learning_id_for(t["user_message"], names), t["user_message"].strip())
    texts = list(candidates.values())
    vectors = tfidf_vectors(texts)
    return float((vectors[texts.index(a)] @ vectors[texts.index(b)].T).toarray()[0, 0])


def test_later_candidates_never_change_an_earlier_merge_id_or_known_at(world: World):
    # the premise: fitted on every candidate (the old way) B1 would join A1 and B2 would not join A2
    assert _global_cosine(EARLY_TURNS + LATE_TURNS, A1, B1) >= TRIGGER_SIMILARITY
    assert _global_cosine(EARLY_TURNS + LATE_TURNS, A2, B2) < TRIGGER_SIMILARITY

    world.write("agent_turns", EARLY_TURNS)
    world.write("learning_feedback", [])
    world.materialize(LEARNING, as_of=T1)
    learned_1, reviews_1 = snapshot(world)

    world.write("agent_turns", EARLY_TURNS + LATE_TURNS)
    world.materialize(LEARNING, as_of=T2)
    learned_2, reviews_2 = snapshot(world)

    assert {k: learned_2[k] for k in learned_1} == learned_1  # same ids, same known_at and created_at
    # every earlier turn: same outcome, same learning
    assert {k: reviews_2[k] for k in reviews_1} == reviews_1
    assert reviews_1["t02"] == ("created", lid(B1, "funding"))  # B1 was not similar enough when it came
    assert reviews_1["t04"] == ("merged", lid(A2, "research"))  # B2 was, and stays merged
    assert reviews_1["t05"] == ("merged", lid(A1, "funding"))
    assert reviews_2["w01"] == ("merged", lid(A1, "funding"))  # later turns still join earlier learnings
    assert reviews_2["w02"] == ("merged", lid(A2, "research"))
    assert len(learned_2) > len(learned_1)
    turn_counts = dict(world.rows("SELECT learning_id, turn_count FROM learnings"))
    assert turn_counts[lid(A1, "funding")] == 3 and turn_counts[lid(A2, "research")] == 3


def test_known_at_is_the_first_reviewed_turn(world: World):
    world.write("agent_turns", EARLY_TURNS + LATE_TURNS)
    world.write("learning_feedback", [])
    world.materialize(LEARNING, as_of=T2)
    known = dict(world.rows("SELECT learning_id, known_at FROM learnings"))
    created = dict(world.rows("SELECT learning_id, created_at FROM learnings"))
    expected = {
        lid(A1, "funding"): ts("2024-06-01 10:00"),  # t05 and w01 joined later
        lid(B1, "funding"): ts("2024-06-02 10:00"),
        lid(A2, "research"): ts("2024-06-03 10:00"),  # t04 and w02 joined later
        lid("scan the sol order book for support", "quotes"): ts("2024-06-07 09:30"),  # t07 not reviewed
        lid("quote sol then check risk", "quotes"): ts("2024-06-08 08:00"),  # t09a, before t09b
        lid(f"{A2} eth", "trade"): ts("2024-06-21 10:00"),
        lid("summarize the macro outlook for eth", "research"): ts("2024-06-24 10:00"),
    }
    assert {k: known[k] for k in expected} == expected
    assert known == created  # created_at already was the first turn's started_at: kept as is
    reviews = dict(world.rows("SELECT turn_id, outcome FROM learning_reviews WHERE turn_id LIKE 't09%'"))
    assert reviews == {"t09a": "created", "t09b": "merged"}


# --------------------------------------------------------------------------------------- as-of reads

FEEDBACK = [
    # before T1
    feedback("f01", lid(A1, "funding"), True, True, at="2024-06-02 12:00"),
    feedback("f02", lid(A1, "funding"), False, None, at="2024-06-03 12:00"),
    feedback("f03", lid(A2, "research"), True, False, at="2024-06-05 12:00"),
    feedback("f04", lid("buy eth with a limit order now", "trade"), False, None, at="2024-06-07 12:00"),
    feedback("f05", lid("buy eth with a limit order now", "trade"), False, None, at="2024-06-08 12:00"),
    feedback("f06", lid(B1, "funding"), True, None, at="2024-06-09 12:00"),
    # after T1: ignores that would reorder, adoptions, feedback on learnings only B knows
    *(feedback(f"g{i:02d}", lid(A1, "funding"), False, None, at="2024-06-15 12:00") for i in range(12)),
    feedback("g20", lid(A2, "research"), True, True, at="2024-06-16 12:00"),
    feedback("g21", lid(B1, "funding"), True, True, at="2024-06-17 12:00"),
    feedback("g22", lid(f"{A2} eth", "trade"), True, True, at="2024-06-25 12:00"),
    feedback("g23", "l_0000000000000000", True, True, at="2024-06-26 12:00"),
]
MESSAGES = [
    "check btc funding then size a long",
    "research aaplx fundamentals before earnings",
    "buy eth now",
    "sol order book",
    "summarize the macro outlook",
    "please now",
]


def two_warehouses(tmp_path: Path, instance) -> tuple[World, World]:
    a, b = World(tmp_path / "a", instance), World(tmp_path / "b", instance)
    for w in (a, b):
        w.write("agent_turns", EARLY_TURNS + LATE_TURNS)
        w.write("learning_feedback", FEEDBACK)
    a.materialize(LEARNING, as_of=T1)
    b.materialize(LEARNING, as_of=T2)
    return a, b


def test_suggest_as_of_t1_on_a_later_warehouse_equals_the_warehouse_built_at_t1(tmp_path, instance):
    a, b = two_warehouses(tmp_path, instance)
    answered = 0
    for message in MESSAGES:
        for max_tier in (None, 3):
            on_a = suggest(message, k=5, max_tier=max_tier, database=a.db)
            on_b = suggest(message, k=5, max_tier=max_tier, as_of=T1, database=b.db)
            assert on_b == on_a, message  # every field: ids, order, scores, counters, weights
            answered += len(on_a)
    assert answered >= 8

    # the later warehouse answers differently today: the as-of read is not the stored one
    now = suggest(MESSAGES[0], k=5, database=b.db)
    then = suggest(MESSAGES[0], k=5, as_of=T1, database=b.db)
    top_now = {r["learning_id"]: r for r in now}[lid(A1, "funding")]
    top_then = {r["learning_id"]: r for r in then}[lid(A1, "funding")]
    assert (top_then["ignored_count"], top_then["turn_count"], top_then["success_count"]) == (1, 2, 3)
    assert (top_now["ignored_count"], top_now["turn_count"]) == (13, 3)
    assert top_then["weight"] == pytest.approx(0.95) and top_now["weight"] == pytest.approx(0.95**13)
    assert [r["learning_id"] for r in now] != [r["learning_id"] for r in then]
    ids_then = {r["learning_id"] for m in MESSAGES for r in suggest(m, k=10, as_of=T1, database=b.db)}
    assert lid(f"{A2} eth", "trade") not in ids_then  # known only after T1

    # the whole table as of T1 on B is A's table; A read as of its own as_of is its stored table
    with connection(a.db, read_only=True) as con:
        stored_a = con.sql("SELECT * FROM learnings ORDER BY learning_id").pl()
        a_as_of = learnings_as_of(con, ts("2024-06-10"))
    with connection(b.db, read_only=True) as con:
        b_as_of = learnings_as_of(con, ts("2024-06-10"))
    assert b_as_of.equals(a_as_of)
    assert a_as_of.equals(stored_a.select(a_as_of.columns).cast(a_as_of.schema))


def test_tradingmem_as_of_is_the_default_instant_of_suggest(tmp_path, instance, monkeypatch):
    a, b = two_warehouses(tmp_path, instance)
    monkeypatch.setenv("TRADINGMEM_AS_OF", T1)
    assert suggest(MESSAGES[0], k=5, database=b.db) == suggest(MESSAGES[0], k=5, database=a.db)
    monkeypatch.delenv("TRADINGMEM_AS_OF")
    stored = suggest(MESSAGES[0], k=5, database=b.db)
    then = suggest(MESSAGES[0], k=5, as_of=T1, database=b.db)
    assert stored != then
    with pytest.raises(ValueError, match="as_of 'soon'"):
        suggest(MESSAGES[0], as_of="soon", database=b.db)


def test_cli_suggest_as_of_reads_the_past_and_refuses_a_bad_instant(tmp_path, instance):
    from tradingmem_assets.cli import main

    a, b = two_warehouses(tmp_path, instance)
    runner = CliRunner()
    message = MESSAGES[1]
    expected = json.loads(json.dumps(suggest(message, k=3, database=a.db), default=str))

    got = runner.invoke(
        main, ["learnings", "suggest", message, "--as-of", T1, "--json"], env={"TRADINGMEM_DB": str(b.db)}
    )
    assert got.exit_code == 0, got.output
    document = json.loads(got.stdout)
    assert document["as_of"] == "2024-06-10T00:00:00+00:00"
    assert [r["learning_id"] for r in document["suggestions"]] == [r["learning_id"] for r in expected]
    for got_row, want_row in zip(document["suggestions"], expected, strict=True):
        for field in ("score", "similarity", "weight", "success_count", "failure_count", "ignored_count"):
            assert got_row[field] == want_row[field], field

    text = runner.invoke(
        main, ["learnings", "suggest", message, "--as-of", "2024-06-10"], env={"TRADINGMEM_DB": str(b.db)}
    )
    assert text.exit_code == 0 and "as of 2024-06-10T00:00:00+00:00" in text.stdout
    assert expected[0]["learning_id"] in text.stdout

    bad = runner.invoke(
        main, ["learnings", "suggest", message, "--as-of", "last tuesday"], env={"TRADINGMEM_DB": str(b.db)}
    )
    assert bad.exit_code != 0
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "--as-of" in lines[0] and "'last tuesday'" in lines[0], bad.stderr
    assert "TRADINGMEM_AS_OF" not in bad.stderr
    assert bad.stdout == ""


def test_rebuilding_at_the_same_as_of_keeps_known_at_and_counters(world: World):
    world.write("agent_turns", EARLY_TURNS + LATE_TURNS)
    world.write("learning_feedback", FEEDBACK)
    world.materialize(LEARNING, as_of=T2)
    before = world.query("SELECT * FROM learnings ORDER BY learning_id")
    world.materialize(LEARNING, as_of=T2)
    assert world.query("SELECT * FROM learnings ORDER BY learning_id").equals(before)
    assert before.get_column("known_at").null_count() == 0
    assert (before.get_column("known_at") == before.get_column("created_at")).all()
    assert before.schema["known_at"] == pl.Datetime("us", "UTC")


def test_an_instant_after_the_build_reads_as_of_the_build(tmp_path, instance):
    a, _b = two_warehouses(tmp_path, instance)  # A built at T1; raw holds turns and feedback up to T2
    for message in MESSAGES[:3]:
        assert suggest(message, k=5, as_of=T2, database=a.db) == suggest(message, k=5, database=a.db)
