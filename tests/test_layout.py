"""The package layout holds: rules stay pure (no Dagster import), wiring lives in its named files."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tradingmem_assets"
# The only files that may import Dagster: a domain's wiring, the entry point, the resource,
# the one Dagster-side helper module of lib/ and the run launcher of the CLI and the benchmark.
WIRING_NAMES = {
    "assets.py",
    "checks.py",
    "jobs.py",
    "sensors.py",
    "schedules.py",
    "partitions.py",
    "hooks.py",
}
WIRING_FILES = {"definitions.py", "defs/resources.py", "lib/dagster_kit.py", "defs/operations/runs.py"}
MAX_LINES = 400


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _is_wiring(path: Path) -> bool:
    rel = path.relative_to(PACKAGE).as_posix()
    return rel in WIRING_FILES or (rel.startswith("defs/") and path.name in WIRING_NAMES)


def test_only_wiring_files_import_dagster():
    offenders = [
        path.relative_to(PACKAGE).as_posix()
        for path in _modules()
        if not _is_wiring(path)
        and any(name == "dagster" or name.startswith(("dagster.", "dagster_")) for name in _imports(path))
    ]
    assert offenders == [], f"pure modules import dagster: {offenders}"


def test_rules_never_import_wiring():
    offenders = [
        f"{path.relative_to(PACKAGE).as_posix()} -> {name}"
        for path in _modules()
        if not _is_wiring(path)
        for name in _imports(path)
        if name.startswith("tradingmem_assets.defs.")
        and name.rsplit(".", 1)[-1] + ".py" in WIRING_NAMES
        and not path.relative_to(PACKAGE).as_posix().startswith("cli/")
    ]
    assert offenders == [], f"rule modules import Dagster wiring: {offenders}"


def test_every_domain_is_one_folder_without_prefixed_modules():
    domains = sorted(p.name for p in (PACKAGE / "defs").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert {
        "landing",
        "evaluation",
        "role_memory",
        "learning",
        "profile",
        "memory",
        "audit",
        "migration",
    } <= set(domains)
    assert not (PACKAGE / "core").exists() and not (PACKAGE / "schemas").exists()
    for domain in domains:
        for path in (PACKAGE / "defs" / domain).glob("*.py"):
            assert not path.name.startswith(f"{domain}_"), f"{path}: name it for what it decides"


def test_no_module_is_over_the_size_of_one_concept():
    long = {
        path.relative_to(PACKAGE).as_posix(): n
        for path in _modules()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


def test_tables_are_named_once():
    """Python code names tables through lib/tables.py, never by a quoted "main.<table>" literal."""
    offenders = []
    for path in _modules():
        if path.relative_to(PACKAGE).as_posix() == "lib/tables.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "." in node.value
                and node.value.split(".", 1)[0] in ("main", "raw")
                and node.value.split(".", 1)[-1].replace("_", "").isalpha()
            ):
                offenders.append(f"{path.relative_to(PACKAGE).as_posix()}: {node.value}")
    assert offenders == []


# --- names say what a thing is ---------------------------------------------------------------------


def _module_constants(path: Path) -> list[tuple[str, ast.expr]]:
    """The module-level UPPER_CASE assignments of a module: (name, value)."""
    out: list[tuple[str, ast.expr]] = []
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id.lstrip("_").isupper():
                out.append((target.id, value))
    return out


def _call_name(value: ast.expr) -> str:
    """``pl.Schema`` for ``pl.Schema(...)``, ``pa.DataFrameSchema`` for ``pa.DataFrameSchema(...)``,
    and so on through ``.add_columns(...)``-style chains; "" for anything else."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Call)
    ):
        value = value.func.value
    if isinstance(value, ast.Call):
        return ast.unparse(value.func)
    return ""


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def test_no_constant_is_called_a_schema():
    """A Polars dtype schema is ``<TABLE>_DTYPES``, a Pandera schema ``<TABLE>_INVARIANTS``."""
    offenders = [
        f"{_rel(path)}: {name}"
        for path in _modules()
        for name, _ in _module_constants(path)
        if name.endswith("_SCHEMA")
    ]
    assert offenders == [], f"name them _DTYPES (Polars) or _INVARIANTS (Pandera): {offenders}"


def test_polars_schemas_are_dtypes_and_pandera_schemas_are_invariants():
    offenders = []
    for path in _modules():
        for name, value in _module_constants(path):
            call = _call_name(value)
            if call == "pl.Schema" and not name.endswith("_DTYPES"):
                offenders.append(f"{_rel(path)}: {name} is a pl.Schema")
            chain = ast.unparse(value) if isinstance(value, ast.Call) else ""
            is_pandera = call == "pa.DataFrameSchema" or (
                chain.endswith(")")
                and ".add_columns(" in chain
                and chain.split(".", 1)[0].endswith("_INVARIANTS")
            )
            if is_pandera and not name.endswith("_INVARIANTS"):
                offenders.append(f"{_rel(path)}: {name} is a Pandera DataFrameSchema")
    assert offenders == [], offenders


def _reexport(name: str, value: ast.expr) -> bool:
    """``NAME = module.NAME``: the constant is another module's object under its own name."""
    return isinstance(value, ast.Attribute) and value.attr == name


def test_no_two_modules_export_one_name_for_different_things():
    by_name: dict[str, dict[str, str]] = {}
    for path in _modules():
        for name, value in _module_constants(path):
            if name.startswith("_") or _reexport(name, value):
                continue
            by_name.setdefault(name, {})[_rel(path)] = ast.dump(value)
    clashes = {name: sorted(defs) for name, defs in by_name.items() if len(set(defs.values())) > 1}
    assert clashes == {}, f"one name, different things: {clashes}"
