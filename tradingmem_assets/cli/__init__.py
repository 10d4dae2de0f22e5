"""The `tradingmem` command line: thin commands over the same warehouse and Dagster instance as the UI.

Each module of this package that defines ``register(group)`` adds its commands; every command
takes ``--json`` (one JSON document on stdout), errors go to stderr with a non-zero exit code.
"""

from __future__ import annotations

import importlib
import pkgutil

import click

from tradingmem_assets.cli.common import CliError, cli_group, quiet_library_warnings

quiet_library_warnings()


@click.group(cls=cli_group())
@click.version_option(package_name="tradingmem")
def main() -> None:
    """tradingmem: learned, auditable memory for an AI trading agent and a wealth advisor."""


def _register_all() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "common" or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(main)


_register_all()

__all__ = ["main", "CliError"]
