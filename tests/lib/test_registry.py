"""The role registry is validated when the code location loads, with messages that name the problem."""

import os
import subprocess
import sys
import textwrap

import pytest

from tradingmem_assets.lib.registry import RegistryError, load_registry, parse_registry
from tradingmem_assets.settings import PACKAGE_DIR

ROLE = {
    "role_id": "valuation",
    "maturity_days": 7,
    "primary_profile": "abs_7d",
    "required_evidence": ["fundamentals"],
    "failure_modes": ["overpaid"],
    "reflection_prompt": "?",
}


def test_the_shipped_registry_loads_with_defaults():
    registry = load_registry(PACKAGE_DIR / "roles.yaml")
    assert registry.get("valuation").skill_id == "equity_research"
    assert registry.get("trend_follower").noise_k == 1.0
    assert registry.get("funding_arbitrage").noise_k == 1.5


def test_unknown_role_is_never_mapped_to_a_generic_role():
    registry = parse_registry({"skills": [{"skill_id": "s", "roles": [ROLE]}]})
    assert registry.get("generic") is None and registry.get(None) is None


def test_duplicate_role_id_names_both_skills():
    doc = {"skills": [{"skill_id": "alpha", "roles": [ROLE]}, {"skill_id": "beta", "roles": [ROLE]}]}
    with pytest.raises(RegistryError, match="duplicate role_id 'valuation'.*'alpha' and 'beta'"):
        parse_registry(doc)


@pytest.mark.parametrize(
    "field", ["maturity_days", "primary_profile", "required_evidence", "reflection_prompt"]
)
def test_missing_field_is_named(field):
    role = {k: v for k, v in ROLE.items() if k != field}
    with pytest.raises(RegistryError, match=f"skill 's' role 'valuation' is missing field\\(s\\): {field}"):
        parse_registry({"skills": [{"skill_id": "s", "roles": [role]}]})


def test_bad_types_are_refused():
    with pytest.raises(RegistryError, match="maturity_days"):
        parse_registry({"skills": [{"skill_id": "s", "roles": [{**ROLE, "maturity_days": "soon"}]}]})
    with pytest.raises(RegistryError, match="top-level 'skills:'"):
        parse_registry({"roles": []})


def test_a_broken_roles_file_stops_the_code_location_from_loading(tmp_path):
    bad = tmp_path / "roles.yaml"
    bad.write_text(
        textwrap.dedent(
            """
            skills:
              - skill_id: a
                roles: [{role_id: r, maturity_days: 1, primary_profile: p, required_evidence: [],
                         failure_modes: [], reflection_prompt: x}]
              - skill_id: b
                roles: [{role_id: r, maturity_days: 1, primary_profile: p, required_evidence: [],
                         failure_modes: [], reflection_prompt: x}]
            """
        )
    )
    env = {**os.environ, "TRADINGMEM_ROLES_FILE": str(bad)}
    proc = subprocess.run(
        [sys.executable, "-c", "from tradingmem_assets.definitions import defs; defs()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "duplicate role_id 'r' declared by skills 'a' and 'b'" in proc.stderr
