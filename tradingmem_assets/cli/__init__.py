"""The `tradingmem` command line: thin commands over the same warehouse and Dagster instance as the UI.

Each module of this package that defines ``register(group)`` adds its commands; every command
takes ``--json`` (one JSON document on stdout), errors go to stderr with a non-zero exit code.
A command's module is imported only when that command runs (``COMMANDS``), so a cold
``tradingmem recall`` never pays for Dagster, scikit-learn or the other domains.
"""

from __future__ import annotations

import importlib

import click

from tradingmem_assets.cli.common import CliError, cli_group, quiet_library_warnings

quiet_library_warnings()

# command -> the module of this package that registers it (tests/cli checks this map is complete)
COMMANDS = {
    "audit": "audit",
    "benchmark": "benchmark",
    "budget": "role_memory",
    "demo": "demo",
    "doctor": "doctor",
    "efficacy": "efficacy",
    "explain": "explain",
    "learnings": "learning",
    "methodologies": "methodologies",
    "recall": "role_memory",
    "reflect": "role_memory",
}


def registered_commands(module_name: str) -> dict[str, click.Command]:
    """The commands a module of this package registers."""
    collected = click.Group()
    importlib.import_module(f"{__name__}.{module_name}").register(collected)
    return dict(collected.commands)


class LazyGroup(cli_group()):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        return registered_commands(module).get(cmd_name) if module else None


@click.group(cls=LazyGroup)
@click.version_option(package_name="tradingmem")
def main() -> None:
    """tradingmem: learned, auditable memory for an AI trading agent and a wealth advisor."""


__all__ = ["main", "CliError", "COMMANDS"]
