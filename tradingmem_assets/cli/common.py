"""What every CLI command shares: --json output, clear errors, the warehouse and the Dagster instance."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from functools import wraps
from pathlib import Path
from typing import Any

import click
import duckdb

from tradingmem_assets.lib.warehouse import WarehouseLockedError, connection
from tradingmem_assets.settings import (
    default_as_of,
    default_db_path,
    default_landing_dir,
    parse_as_of,
    resolve_as_of,
)


class CliError(click.ClickException):
    """An error for the user: printed to stderr as one line, exit code 1 (or the given code)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:  # noqa: ARG002 - click's signature
        click.echo(f"tradingmem: {self.message}", err=True)


def cli_group() -> type[click.Group]:
    class Group(click.Group):
        def invoke(self, ctx: click.Context):
            try:
                return super().invoke(ctx)
            except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
                raise
            except (WarehouseLockedError, FileNotFoundError, duckdb.Error, ValueError) as exc:
                raise CliError(str(exc)) from exc

    return Group


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def to_json(document: Any) -> str:
    return json.dumps(document, default=_default, ensure_ascii=False, indent=2, sort_keys=False)


def json_option(fn: Callable) -> Callable:
    """Add ``--json``; the command returns (document, human_text) and this prints the right one."""

    @click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
    @wraps(fn)
    def wrapper(*args, as_json: bool, **kwargs):
        result = fn(*args, as_json=as_json, **kwargs)
        if result is None:
            return
        document, text, *rest = result if isinstance(result, tuple) else (result, None)
        if as_json:
            click.echo(to_json(document))
        elif text is not None:
            click.echo(text)
        else:
            click.echo(to_json(document))
        exit_code = rest[0] if rest else 0
        if exit_code:
            sys.exit(exit_code)

    return wrapper


class InstantParam(click.ParamType):
    """An ISO-8601 instant (naive: UTC), for ``--as-of``; a bad value names the option, not an env var."""

    name = "ISO-8601 instant"

    def convert(self, value, param, ctx):
        if isinstance(value, datetime):
            return value
        try:
            return parse_as_of(str(value))
        except ValueError:
            self.fail(f"{value!r} is not an ISO-8601 instant (e.g. 2024-06-30T00:00:00Z)", param, ctx)


INSTANT = InstantParam()


def as_of_option(help_text: str) -> Callable:
    return click.option("--as-of", "as_of", type=INSTANT, default=None, help=help_text)


def db_path() -> str:
    return default_db_path()


def landing_dir() -> str:
    return default_landing_dir()


def as_of_now(text: str | None = None) -> datetime:
    return resolve_as_of(text or default_as_of())


@contextmanager
def warehouse(read_only: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to the warehouse the UI uses (TRADINGMEM_DB)."""
    with connection(db_path(), read_only=read_only) as con:
        yield con


def progress(as_json: bool) -> Callable[[str], None]:
    """A progress printer for long commands: stderr on a terminal, silent under --json."""
    if as_json or not sys.stderr.isatty():
        return lambda _msg: None
    return lambda msg: click.echo(f"... {msg}", err=True)
