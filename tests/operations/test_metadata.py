"""What the UI shows of every materialization and check: numbers rounded for people, and every stored
column declared with a description before the first materialization (SPEC section 18)."""

from __future__ import annotations

import fnmatch
import math
import re
import tomllib
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from tests.world import DEFS, World
from tradingmem_assets import docs_tables
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import columns

MAX_DECIMALS = 4
# a number with 5+ decimals in markdown or text (not the fraction of a timestamp's seconds)
LONG_DECIMAL = re.compile(r"(?<![\w:.])\d+\.\d{5,}(?![\w])")
AS_OF = "2024-07-01T00:00:00Z"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[World, list[dg.ExecuteInProcessResult]]:
    """A small demo warehouse: the main job, then one audit pass and the migration of one month."""
    with dg.DagsterInstance.ephemeral() as instance:
        world = World(tmp_path_factory.mktemp("metadata"), instance, as_of=AS_OF)
        write_demo_world(world.landing, scale=0.002, seed=3)
        results = [world.materialize()]
        results.append(world.materialize(["methodology_audit_reports"]))
        results.append(
            world.materialize(
                ["legacy_role_memory_backup", "migrated_role_cases", "migration_conservation_report"],
                partition_key="2021-03-01",
            )
        )
        assert all(r.success for r in results)
        yield world, results


def _floats(value: Any) -> list[float]:
    """Every float a metadata value shows (plain, float metadata, or inside JSON)."""
    if isinstance(value, dg.FloatMetadataValue):
        return _floats(value.value)
    if isinstance(value, dg.JsonMetadataValue):
        return _floats(value.data)
    if isinstance(value, dg.MarkdownMetadataValue | dg.TextMetadataValue):
        return [float(n) for n in LONG_DECIMAL.findall(value.value or "")]
    if isinstance(value, dg.MetadataValue):
        return []
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list | tuple):
        return [f for v in value for f in _floats(v)]
    return []


def _too_precise(x: float) -> bool:
    return math.isfinite(x) and round(x, MAX_DECIMALS) != x


def test_no_metadata_number_shows_more_than_four_decimals(built):
    _, results = built
    offenders = []
    for result in results:
        for event in result.get_asset_materialization_events():
            m = event.event_specific_data.materialization
            offenders += [
                (m.asset_key.to_user_string(), k, f)
                for k, v in m.metadata.items()
                for f in _floats(v)
                if _too_precise(f)
            ]
        for evaluation in result.get_asset_check_evaluations():
            offenders += [
                (evaluation.check_name, k, f)
                for k, v in evaluation.metadata.items()
                for f in _floats(v)
                if _too_precise(f)
            ]
    assert offenders == []
    # the audit's numbers are there, rounded (the UI plots them across passes)
    audit = [e.event_specific_data.materialization for e in results[1].get_asset_materialization_events()][0]
    assert isinstance(audit.metadata["composite"], dg.FloatMetadataValue)


def test_every_asset_declares_its_table_and_described_columns_before_any_materialization():
    graph = DEFS.resolve_asset_graph()  # loaded definitions only: nothing materialized
    undeclared = []
    for key in graph.get_all_asset_keys():
        metadata = graph.get(key).metadata
        schema = metadata.get("dagster/column_schema")
        table = docs_tables.asset_table(key.to_user_string())
        if (
            schema is None
            or metadata.get("dagster/table_name") != table
            or [c.name for c in schema.columns] != docs_tables.TABLE_DOCS[table].column_names
            or not all(c.description and c.type for c in schema.columns)
        ):
            undeclared.append(key.to_user_string())
    assert undeclared == []
    assert len(list(graph.get_all_asset_keys())) == 50


def test_every_stored_table_and_column_is_declared_with_its_type(built):
    world, _ = built
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        rows = con.execute(
            "SELECT table_schema || '.' || table_name, column_name, data_type "
            "FROM information_schema.columns ORDER BY table_schema, table_name, ordinal_position"
        ).fetchall()
    finally:
        con.close()
    stored: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        stored.setdefault(table, []).append((column, dtype))
    declared = {t: [(c, ty) for c, ty, _ in doc.columns] for t, doc in docs_tables.TABLE_DOCS.items()}
    assert stored == declared
    assert all(d.strip() for doc in docs_tables.TABLE_DOCS.values() for _, _, d in doc.columns)
    assert all(doc.description for doc in docs_tables.TABLE_DOCS.values())


def test_a_materialization_shows_the_declared_descriptions(built):
    _, results = built
    for event in results[0].get_asset_materialization_events():
        m = event.event_specific_data.materialization
        schema = m.metadata.get("dagster/column_schema")
        if schema is not None:
            assert all(c.description for c in schema.schema.columns), m.asset_key


def test_docs_tables_md_is_generated_from_the_declared_columns():
    assert docs_tables.DOC_PATH.read_text(encoding="utf-8") == docs_tables.render(), (
        "docs/tables.md is stale: run python -m tradingmem_assets.docs_tables"
    )
    assert docs_tables.main(["--check"]) == 0


def test_every_domains_data_dictionary_is_read_and_ships_with_the_package():
    """Each ``defs/<domain>/columns.toml`` feeds docs_tables, and pyproject's package-data installs
    every data file the code reads (a non-editable install has no source tree to read them from)."""
    package = Path(docs_tables.__file__).parent
    dictionaries = sorted(p.parent.name for p in package.glob(f"defs/*/{columns.COLUMNS_FILE}"))
    assert dictionaries == sorted(domain for domain, _ in docs_tables.DOMAINS)
    data_files = [p.relative_to(package).as_posix() for p in package.rglob("*.toml")]
    pyproject = tomllib.loads((package.parent / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["tradingmem_assets"]
    unshipped = [f for f in data_files if not any(fnmatch.fnmatch(f, pattern) for pattern in patterns)]
    assert "defs/landing/tables.toml" in data_files and unshipped == [], patterns


def test_a_column_row_is_name_type_and_meaning():
    text = '[main.t]\ndescription = "T."\ncolumns = [["a", "VARCHAR", "A."]]\n'
    assert columns.parse_table_docs(text, "x.toml") == (
        columns.TableDoc("main.t", "T.", (("a", "VARCHAR", "A."),)),
    )
    with pytest.raises(ValueError, match="main.t: a column is"):
        columns.parse_table_docs(text.replace(', "A."', ""), "x.toml")
    with pytest.raises(ValueError, match="x.toml: tables live in"):
        columns.parse_table_docs(text.replace("main.t", "other.t"), "x.toml")
