"""`tradingmem efficacy [--as-of TS] [--json]` on the crafted world."""

import json

import duckdb
import pytest
from click.testing import CliRunner

from tradingmem_assets.cli import main


def cli(db, *args: str, code: int = 0):
    result = CliRunner().invoke(
        main, ["efficacy", *args], env={"TRADINGMEM_DB": str(db), "TRADINGMEM_AS_OF": None}
    )
    assert result.exit_code == code, (result.output, result.exception)
    return result


def test_json_is_the_stored_rows(efficacy_world):
    world, _ = efficacy_world
    rows = json.loads(cli(world.db, "--json").stdout)
    stored = world.query("SELECT * FROM memory_efficacy").to_dicts()
    assert len(rows) == len(stored) == 8
    for got, want in zip(rows, stored, strict=True):
        assert got.keys() == want.keys()
        assert {k: v for k, v in got.items() if k != "as_of"} == {
            k: v for k, v in want.items() if k != "as_of"
        }
        assert got["as_of"] == want["as_of"].isoformat() == "2024-07-01T00:00:00+00:00"


def test_human_output_is_a_table_with_rounded_intervals(efficacy_world):
    world, _ = efficacy_world
    text = cli(world.db).stdout
    lines = text.splitlines()
    assert lines[0] == "memory efficacy as of 2024-07-01T00:00:00+00:00: 8 subjects"
    assert "rate [95% interval]" in lines[1]
    valuation = next(
        line for line in lines if "valuation" in line and " role " in line and "logic_error" in line
    )
    assert "3/12 0.25 [0.09, 0.53]" in valuation and "10/12 0.83 [0.55, 0.95]" in valuation
    assert valuation.endswith("helps")
    assert any("0/0 - [0.00, 1.00]" in line and line.endswith("insufficient_data") for line in lines)
    assert lines[-1] == "verdicts: helps 3, hurts 2, insufficient_data 2, no_evidence 1"


def test_as_of_recomputes_from_the_rows_known_then(efficacy_world):
    world, _ = efficacy_world
    rows = json.loads(cli(world.db, "--as-of", "2024-02-14T00:00:00Z", "--json").stdout)
    lessons = [r for r in rows if r["subject_kind"] == "lesson"]
    assert [(r["role_id"], r["before_n"], r["after_n"], r["verdict"]) for r in lessons] == [
        ("trend_follower", 6, 0, "insufficient_data"),
        ("trend_follower", 6, 0, "insufficient_data"),
        ("valuation", 6, 0, "insufficient_data"),
        ("valuation", 6, 0, "insufficient_data"),
    ]
    assert {r["as_of"] for r in rows} == {"2024-02-14T00:00:00+00:00"}
    same = json.loads(cli(world.db, "--as-of", "2024-07-01", "--json").stdout)
    assert same == json.loads(cli(world.db, "--json").stdout)
    human = cli(world.db, "--as-of", "2024-02-14T00:00:00Z").stdout
    assert human.splitlines()[0].startswith("memory efficacy as of 2024-02-14T00:00:00+00:00:")


def test_bad_as_of_names_the_option(efficacy_world):
    world, _ = efficacy_world
    result = cli(world.db, "--as-of", "yesterday-ish", code=2)
    assert "--as-of" in result.output and "ISO-8601" in result.output


@pytest.mark.parametrize("state", ["missing", "empty"])
def test_a_warehouse_without_the_table_says_what_to_run(tmp_path, state):
    db = tmp_path / "w.duckdb"
    if state == "empty":
        duckdb.connect(str(db)).close()
    result = cli(db, code=1)
    message = result.output
    if state == "missing":
        assert "does not exist" in message and str(db) in message
    else:
        assert "main.memory_efficacy is not materialized yet" in message
    if state == "empty":
        assert "not materialized yet" in cli(db, "--as-of", "2024-07-01", code=1).output


def test_explain_of_a_methodology_shows_its_efficacy_rows(efficacy_world):
    world, _ = efficacy_world
    [(mid,)] = world.rows(
        "SELECT subject_id FROM memory_efficacy WHERE subject_kind = 'methodology' ORDER BY subject_id LIMIT 1"
    )
    result = CliRunner().invoke(
        main,
        ["explain", "methodology", mid, "--json"],
        env={"TRADINGMEM_DB": str(world.db), "TRADINGMEM_AS_OF": None},
    )
    assert result.exit_code == 0, (result.output, result.exception)
    rows = json.loads(result.stdout)["efficacy"]
    assert rows and all(r["subject_id"] == mid for r in rows)
    assert {r["subject_kind"] for r in rows} <= {"methodology", "injection"}
