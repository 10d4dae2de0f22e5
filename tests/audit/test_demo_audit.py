"""The demo world's first audit scores all six dimensions and lands in the tier it was built for."""

import json

import dagster as dg
import pytest

from tests.world import World
from tradingmem_assets.defs.audit.scoring import DIMENSIONS
from tradingmem_assets.demo import DEMO_AS_OF, write_demo_world

SCALE = 0.002  # as tests/cli and tests/demo build it; the institution is the same up to 0.0075
# docs/audit.md, "The demo world": a healthy learning loop whose findings still show
BUILT_FOR = "healthy"


@pytest.fixture(scope="module")
def first_audit(tmp_path_factory) -> dict:
    with dg.DagsterInstance.ephemeral() as instance:
        world = World(tmp_path_factory.mktemp("demo_audit"), instance, as_of=DEMO_AS_OF.isoformat())
        write_demo_world(world.landing, scale=SCALE)
        assert world.materialize().success
        assert world.materialize(["methodology_audit_reports"]).success
        [row] = world.query("SELECT * FROM main.methodology_audit_reports").to_dicts()
        return row


def test_the_demo_first_audit_scores_every_dimension(first_audit):
    scores = json.loads(first_audit["dimension_scores"])
    assert set(scores) == set(DIMENSIONS)
    assert {d for d, s in scores.items() if s is None} == set()
    assert set(json.loads(first_audit["dimension_weights_used"])) == set(DIMENSIONS)


def test_the_demo_first_audit_lands_in_the_tier_it_was_built_for(first_audit):
    assert first_audit["tier"] == BUILT_FOR
    assert first_audit["isolation_ok"]


def test_the_demo_first_audit_still_reports_what_the_world_plants(first_audit):
    codes = {f["code"] for f in json.loads(first_audit["findings"])}
    # bogus methodology ids cited, injections of quarantined methodologies, rejected injections
    assert {"unknown_methodology", "injected_while_quarantined", "injection_attempts"} <= codes
