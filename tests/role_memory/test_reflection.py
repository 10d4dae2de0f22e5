"""Reflection: outcome labels around the noise band, the classification ladder, lessons, maturity,
idempotency per primary run, and the optional LLM reflector against a fake endpoint on 127.0.0.1."""

import json
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer

import duckdb
import polars as pl
import pytest

from tests.incremental import materialization_metadata
from tests.role_memory.test_admission import DOWNSTREAM, PIPELINE, REGISTRY
from tests.role_memory.world import CLOSED, Chain, band, bars, fill_price_for
from tests.world import World, ts
from tradingmem_assets.defs.role_memory.llm_reflector import ChatClient, LLMReflector, clean_lesson
from tradingmem_assets.defs.role_memory.reflection import (
    DETERMINISTIC,
    LESSON_MAX_CHARS,
    DeterministicReflector,
    classified,
    deterministic_lesson_expr,
    outcome_sql,
    reflection_inputs,
)
from tradingmem_assets.lib.budget import (
    DEFAULT_LIMITS,
    BudgetExceededError,
    BudgetTracker,
    CategoryLimits,
    Pricing,
)
from tradingmem_assets.settings import SETTINGS

off = pytest.mark.skipif(SETTINGS.role_memory_mode == "off", reason="ROLE_MEMORY_MODE=off: role memory idles")


# --- outcome labels and the ladder (pure) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("factor", "label"),
    [
        (1.01, "win"),
        (0.99, "flat"),
        (1.0, "flat"),
        (0.0, "flat"),
        (-0.99, "flat"),
        (-1.0, "flat"),
        (-1.01, "loss"),
    ],
)
def test_outcome_is_win_above_the_band_loss_below_minus_the_band_flat_within(factor, label):
    b = 0.0265
    sql = f"SELECT {outcome_sql('x', 'b')} FROM (SELECT ?::DOUBLE AS x, ?::DOUBLE AS b)"
    assert duckdb.execute(sql, [factor * b, b]).fetchall() == [(label,)]


def ladder_row(outcome="loss", exogenous=False, missing=(), **extra) -> dict:
    return {
        "case_id": "c",
        "outcome": outcome,
        "exogenous_event": exogenous,
        "missing_evidence": list(missing),
        **extra,
    }


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (ladder_row("flat", exogenous=True, missing=["fundamentals"]), "variance"),
        (ladder_row("loss", exogenous=True, missing=["fundamentals"]), "exogenous"),
        (ladder_row("win", exogenous=True), "exogenous"),
        (ladder_row("loss", missing=["fundamentals"]), "missing_data"),
        (ladder_row("win", missing=["fundamentals"]), "missing_data"),
        (ladder_row("loss"), "logic_error"),
        (ladder_row("win"), "sound"),
    ],
    ids=[
        "flat_first",
        "exogenous_second",
        "exogenous_win",
        "missing_third",
        "missing_even_on_a_win",
        "loss",
        "win",
    ],
)
def test_classification_ladder_first_match_wins(row, expected):
    con = duckdb.connect()
    con.register("ladder", pl.DataFrame([row], schema_overrides={"missing_evidence": pl.List(pl.String)}))
    got = con.sql(classified("ladder")).pl().row(0, named=True)
    assert got["classification"] == expected
    assert got["trainable"] is (expected in ("missing_data", "logic_error"))


def lesson_frame(**overrides) -> pl.DataFrame:
    row = {
        "case_id": "c1",
        "role_id": "valuation",
        "symbol": "AAA",
        "direction": "long",
        "classification": "logic_error",
        "missing_evidence": [],
        "failure_modes": ["overpaid_for_growth", "ignored_dilution"],
        "excess_return": -0.05,
        "noise_band": 0.02,
        "reflection_prompt": "Was the valuation consistent with the evidence?",
    }
    row.update(overrides)
    return pl.DataFrame(
        [row], schema_overrides={"missing_evidence": pl.List(pl.String), "failure_modes": pl.List(pl.String)}
    )


def test_deterministic_lessons_are_short_role_specific_and_name_the_symbol_and_the_fix():
    logic = lesson_frame().select(deterministic_lesson_expr()).item()
    assert "[valuation] AAA" in logic and "overpaid_for_growth" in logic and "Next time" in logic
    missing = (
        lesson_frame(classification="missing_data", missing_evidence=["fundamentals"])
        .select(deterministic_lesson_expr())
        .item()
    )
    assert "fundamentals" in missing and "AAA" in missing and "gather" in missing
    long = lesson_frame(reflection_prompt="why? " * 200).select(deterministic_lesson_expr()).item()
    assert len(long) == LESSON_MAX_CHARS and long.endswith("…")
    assert lesson_frame(classification="sound").select(deterministic_lesson_expr()).item() is None


# --- the ladder over real evaluation runs, numbers near the band ------------------------------------


def near_band_chain() -> Chain:
    b = band()
    bb = b * 1.05
    return (
        Chain()
        .add("sound", fill_price=fill_price_for(bb))
        .add("variance_hi", fill_price=fill_price_for(b * 0.95))
        .add("variance_lo", fill_price=fill_price_for(-b * 0.95))
        .add("logic_error", fill_price=fill_price_for(-bb))
        .add("missing_data", fill_price=fill_price_for(-bb), evidence='["price_history"]')
        .add("missing_on_win", fill_price=fill_price_for(bb), evidence=None)
        .add("exogenous", symbol="BBB", fill_price=fill_price_for(-bb))
        .add("exogenous_over_missing", symbol="BBB", fill_price=fill_price_for(-bb), evidence="[]")
        .add("flat_over_exogenous", symbol="BBB", fill_price=fill_price_for(b * 0.95))
        .add("event_outside_window", symbol="CCC", fill_price=fill_price_for(-bb))
        # funding_arbitrage: noise_k 1.5 on the 30-day profile; 1.2 bands of k=1 is still flat for it
        .add(
            "wide_band_flat",
            role_id="funding_arbitrage",
            skill_id="crypto_trading",
            evidence='["funding_rate", "order_book"]',
            fill_price=fill_price_for(1.2 * band(1.0, 30), 30),
        )
    )


EVENTS = [
    {
        "event_id": "ev1",
        "symbol": "BBB",
        "ts": datetime(2024, 2, 5, 9, tzinfo=UTC),
        "kind": "exchange_halt",
        "exogenous": True,
    },
    {
        "event_id": "ev2",
        "symbol": "CCC",
        "ts": datetime(2024, 2, 9, 9, tzinfo=UTC),
        "kind": "exchange_halt",
        "exogenous": True,
    },  # after the 7-day window
    {
        "event_id": "ev3",
        "symbol": "CCC",
        "ts": datetime(2024, 2, 5, 9, tzinfo=UTC),
        "kind": "earnings",
        "exogenous": False,
    },
]


@pytest.fixture(scope="module")
def ladder_world(tmp_path_factory, instance) -> World:
    world = World(tmp_path_factory.mktemp("ladder"), instance)
    near_band_chain().write_world(
        world, extra={"market_events": EVENTS, "price_bars": bars() + bars("BBB") + bars("CCC")}
    )
    world.materialize(PIPELINE)
    return world


@off
def test_every_branch_of_the_ladder_near_the_noise_band(ladder_world: World):
    got = dict(
        ladder_world.rows(
            "SELECT rc.decision_id, rr.classification "
            "FROM role_reflections rr JOIN role_cases rc USING (case_id)"
        )
    )
    assert got == {
        "sound": "sound",
        "variance_hi": "variance",
        "variance_lo": "variance",
        "logic_error": "logic_error",
        "missing_data": "missing_data",
        "missing_on_win": "missing_data",
        "exogenous": "exogenous",
        "exogenous_over_missing": "exogenous",
        "flat_over_exogenous": "variance",
        "event_outside_window": "logic_error",
        "wide_band_flat": "variance",
    }


@off
def test_only_trainable_classes_get_a_lesson_and_it_names_role_and_symbol(ladder_world: World):
    rows = ladder_world.query(
        "SELECT rc.decision_id, rc.symbol, rr.* FROM role_reflections rr JOIN role_cases rc USING (case_id)"
    )
    for r in rows.iter_rows(named=True):
        if r["classification"] in ("missing_data", "logic_error"):
            assert r["trainable"] and r["lesson"] and len(r["lesson"]) <= LESSON_MAX_CHARS
            assert r["symbol"] in r["lesson"] and f"[{r['role_id']}]" in r["lesson"]
        else:
            assert not r["trainable"] and r["lesson"] is None
        assert r["reflector"] == DETERMINISTIC
    missing = rows.filter(pl.col("decision_id") == "missing_data").row(0, named=True)
    assert "fundamentals" in missing["lesson"]


# --- maturity and once per primary run ------------------------------------------------------------


@off
def test_reflection_waits_for_maturity_and_happens_once_per_primary_run(world: World):
    Chain().add("d", fill_price=fill_price_for(-band() * 2)).write_world(world)
    matures = "2024-02-15T15:00:00Z"  # position closed 2024-02-08 15:00 + 7 maturity days
    world.materialize(PIPELINE, as_of="2024-02-15T14:59:00Z")
    assert world.rows("SELECT status FROM role_cases") == [("eligible",)]
    assert world.rows("SELECT count(*) FROM role_reflections") == [(0,)]

    world.materialize(DOWNSTREAM, as_of=matures)
    first = world.rows("SELECT case_id, run_id, classification, reflected_at FROM role_reflections")
    assert len(first) == 1 and first[0][2] == "logic_error" and first[0][3] == CLOSED.replace(day=15)

    result = world.materialize(DOWNSTREAM, as_of="2024-02-20T00:00:00Z")  # same primary run: nothing new
    assert world.rows("SELECT case_id, run_id, classification, reflected_at FROM role_reflections") == first
    meta = materialization_metadata(world.instance, result.run_id, "role_reflections")
    assert (meta["appended"], meta["already_reflected"], meta["not_yet_matured"]) == (0, 1, 0)
    # a pair reflected before is left out of the inputs at their first stage; a manual re-run of
    # its case still reads it
    con = duckdb.connect(str(world.db))
    try:
        con.execute("SET TimeZone = 'UTC'")
        inputs = reflection_inputs(con, REGISTRY, ts("2024-02-20T00:00:00Z"))
        pending = con.execute(f"SELECT count(*) FROM {inputs.table}").fetchall()
        assert (pending, inputs.already_reflected) == ([(0,)], 1)
        one = reflection_inputs(con, REGISTRY, ts("2024-02-20T00:00:00Z"), case_id=first[0][0])
        assert con.execute(f"SELECT run_id, matured FROM {one.table}").fetchall() == [(first[0][1], True)]
        assert one.already_reflected == 0
    finally:
        con.close()

    # promoting the settled 30-day run (version 1; version 0 is its open window) changes the
    # primary run: the case is reflected again and the first reflection is kept
    world.write(
        "evaluation_promotions",
        [
            {
                "decision_id": "d",
                "profile_id": "abs_30d",
                "run_version": 1,
                "promoted_at": datetime(2024, 3, 4, tzinfo=UTC),
                "promoted_by": "ops",
            }
        ],
    )
    world.materialize(["raw/evaluation_promotions", *DOWNSTREAM], as_of="2024-03-05T00:00:00Z")
    rows = world.rows("SELECT run_id, reflected_at FROM role_reflections ORDER BY reflected_at")
    assert len(rows) == 2 and rows[0] == (first[0][1], first[0][3]) and rows[1][0] != first[0][1]
    assert world.rows("SELECT primary_run_id FROM role_cases") == [(rows[1][0],)]


# --- the LLM reflector against a fake OpenAI-compatible endpoint ------------------------------------


class FakeLLM:
    """http.server on 127.0.0.1 that records every request and answers a fixed lesson."""

    def __init__(self, answer: str = "Check the funding curve before sizing AAA.", tool_call: bool = False):
        self.requests: list[dict] = []
        self.answer, self.tool_call = answer, tool_call
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                message = {"role": "assistant", "content": None if outer.tool_call else outer.answer}
                if outer.tool_call:
                    message["tool_calls"] = [
                        {"type": "function", "function": {"name": "transfer_funds", "arguments": "{}"}}
                    ]
                payload = json.dumps(
                    {
                        "choices": [{"message": message}],
                        "usage": {"prompt_tokens": 120, "completion_tokens": 30},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def trainable_rows() -> pl.DataFrame:
    rows = []
    for role, case in [("valuation", "c2"), ("trend_follower", "c3"), ("valuation", "c1")]:
        rows.append(
            {
                "case_id": case,
                "run_id": f"er_{case}",
                "role_id": role,
                "symbol": "AAA",
                "direction": "long",
                "classification": "logic_error",
                "missing_evidence": [],
                "failure_modes": ["chased"],
                "excess_return": -0.05,
                "noise_band": 0.02,
                "reflection_prompt": "Why?",
                "decision_text": "t",
            }
        )
    return pl.DataFrame(rows, schema_overrides={"missing_evidence": pl.List(pl.String)})


def client(url: str, con, limits=None) -> ChatClient:
    tracker = BudgetTracker(
        con, limits=limits or DEFAULT_LIMITS, clock=lambda: datetime(2024, 5, 1, tzinfo=UTC)
    )
    return ChatClient(url, "fake-model", tracker, api_key="sk-test", pricing=Pricing(1.0, 2.0))


def test_llm_reflector_writes_lessons_role_after_role_with_no_tools_and_records_usage():
    con = duckdb.connect()
    with FakeLLM() as fake:
        reflector = LLMReflector(client(fake.url, con))
        got = reflector.write_lessons(trainable_rows())
    assert [r["path"] for r in fake.requests] == ["/v1/chat/completions"] * 3
    assert all("tools" not in r["body"] and r["auth"] == "Bearer sk-test" for r in fake.requests)
    # serial, grouped by role: trend_follower's case, then valuation's two cases in order
    asked = [json.loads(r["body"]["messages"][1]["content"]) for r in fake.requests]
    roles = [r["body"]["messages"][0]["content"].split("'")[1] for r in fake.requests]
    assert roles == ["trend_follower", "valuation", "valuation"] and all(a["symbol"] == "AAA" for a in asked)
    assert set(got.get_column("reflector")) == {"llm:fake-model"}
    assert got.get_column("lesson").to_list()[0] == "Check the funding curve before sizing AAA."
    usage = con.execute(
        "SELECT category, model, input_tokens, output_tokens, cost_usd FROM llm_usage"
    ).fetchall()
    assert len(usage) == 3 and usage[0] == (
        "reflection",
        "fake-model",
        120,
        30,
        pytest.approx((120 + 60) / 1e6),
    )


def test_llm_budget_cap_refuses_before_the_request_and_the_batch_falls_back_offline():
    con = duckdb.connect()
    tiny = {c: CategoryLimits(daily_usd=1e-9, monthly_usd=1.0, soft_usd=1e-9) for c in DEFAULT_LIMITS}
    with FakeLLM() as fake:
        reflector = LLMReflector(client(fake.url, con, tiny))
        got = reflector.write_lessons(trainable_rows())
        assert fake.requests == []
        assert set(got.get_column("reflector")) == {DETERMINISTIC} and reflector.refused == 1
        assert all(lesson and "AAA" in lesson for lesson in got.get_column("lesson"))
        strict = LLMReflector(client(fake.url, con, tiny), strict=True)
        with pytest.raises(BudgetExceededError):
            strict.write_lessons(trainable_rows())
        assert fake.requests == []
    assert con.execute("SELECT count(*) FROM llm_usage").fetchall() == [(0,)]


def test_an_answer_without_text_such_as_a_tool_call_falls_back_to_the_offline_lesson():
    con = duckdb.connect()
    with FakeLLM(tool_call=True) as fake:
        got = LLMReflector(client(fake.url, con)).write_lessons(trainable_rows())
    assert len(fake.requests) == 3 and set(got.get_column("reflector")) == {DETERMINISTIC}
    expected = DeterministicReflector().write_lessons(trainable_rows())
    assert sorted(got.get_column("lesson").to_list()) == sorted(expected.get_column("lesson").to_list())


def test_llm_lessons_are_cut_to_280_characters_and_always_name_the_symbol():
    assert clean_lesson("Wait for volume confirmation.", "BTC") == "BTC: Wait for volume confirmation."
    long = clean_lesson("x " * 400, "BTC")
    assert len(long) == LESSON_MAX_CHARS and long.startswith("BTC")
    assert clean_lesson("   \n ", "BTC") is None


def test_an_unreachable_endpoint_is_not_asked_for_every_case_and_lessons_fall_back():
    con = duckdb.connect()
    with FakeLLM() as fake:
        dead = fake.url  # the port is closed once the server stops
    rows = pl.concat([trainable_rows().with_columns(pl.col("case_id") + f"_{i}") for i in range(3)])
    reflector = LLMReflector(client(dead, con))
    reflector.client.timeout_s = 2
    got = reflector.write_lessons(rows)
    assert len(reflector.errors) == 3 and reflector.calls == 0
    assert got.height == 9 and set(got.get_column("reflector")) == {DETERMINISTIC}
    assert con.execute("SELECT count(*) FROM llm_usage").fetchall() == [(0,)]
