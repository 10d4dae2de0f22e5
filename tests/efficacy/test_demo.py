"""The demo world shows learning that helps and learning that makes no difference (SPEC section 17)."""

import dagster as dg
import pytest

from tests.world import World
from tradingmem_assets.defs.operations.runs import run_main_job
from tradingmem_assets.demo import DEMO_AS_OF, METHODOLOGY_TEMPLATES, write_demo_world

BTC_TREND_RIDE = METHODOLOGY_TEMPLATES[0].methodology_id


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("efficacy_demo")
    write_demo_world(root / "landing")  # the default scale, as `tradingmem demo --run` builds it
    with dg.instance_for_test() as instance:
        report = run_main_job(
            instance,
            database=str(root / "tradingmem.duckdb"),
            landing_dir=str(root / "landing"),
            as_of=DEMO_AS_OF.isoformat(),
        )
        assert report.success, report.error
        return World(root, instance)


def verdicts(world: World, where: str) -> set[str]:
    return {v for (v,) in world.rows(f"SELECT verdict FROM memory_efficacy WHERE {where}")}


def test_macro_rates_lessons_help(demo):
    # macro_rates' later decisions wait for a clear rate view (demo/efficacy.py)
    assert verdicts(demo, "subject_kind = 'lesson' AND role_id = 'macro_rates' AND scope = 'role'") == {
        "helps"
    }
    [(before, after)] = demo.rows(
        "SELECT before_win_rate, after_win_rate FROM memory_efficacy "
        "WHERE role_id = 'macro_rates' AND subject_id = 'logic_error' AND scope = 'role'"
    )
    assert after > 2 * before


def test_funding_arbitrage_lessons_make_no_difference(demo):
    role = "subject_kind = 'lesson' AND role_id = 'funding_arbitrage' AND scope = 'role'"
    assert verdicts(demo, role) == {"no_evidence"}
    assert demo.rows(
        f"SELECT min(before_n) >= 10 AND min(after_n) >= 10 FROM memory_efficacy WHERE {role}"
    ) == [(True,)]


def test_injecting_btc_trend_ride_helps(demo):
    assert verdicts(demo, f"subject_kind = 'injection' AND subject_id = '{BTC_TREND_RIDE}'") == {"helps"}
    [(scope,)] = demo.rows(
        "SELECT scope FROM memory_efficacy WHERE subject_kind = 'injection' AND subject_id = ?",
        [BTC_TREND_RIDE],
    )
    assert scope == "asset_class:crypto_major"


def test_every_subject_kind_and_the_main_verdicts_show(demo):
    kinds = {k for (k,) in demo.rows("SELECT DISTINCT subject_kind FROM memory_efficacy")}
    assert kinds == {"lesson", "methodology", "injection"}
    assert {"helps", "no_evidence", "insufficient_data"} <= verdicts(demo, "true")
    assert demo.rows("SELECT DISTINCT as_of FROM memory_efficacy") == [(DEMO_AS_OF,)]
