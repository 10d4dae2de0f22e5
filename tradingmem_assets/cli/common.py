"""What every CLI command shares: --json output, clear errors, the warehouse and the Dagster instance.

Human output is rendered with rich (tables, trees, progress); off a terminal it is plain text of a
fixed width and no colour. ``--json`` prints one JSON document on stdout and nothing else there.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from functools import wraps
from pathlib import Path
from typing import Any

import click
import duckdb
from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

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
            except (WarehouseLockedError, FileNotFoundError, duckdb.Error, ValueError, LookupError) as exc:
                raise CliError(first_line(exc)) from exc

    return Group


def first_line(exc: BaseException) -> str:
    """An exception as one line for stderr (DuckDB's messages carry the offending SQL below)."""
    text = str(exc).strip()
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = str(exc.args[0])
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line or type(exc).__name__


def quiet_library_warnings() -> None:
    """Dagster's beta/preview notices are for the code's authors, not for someone running a command."""
    warnings.filterwarnings("ignore", module=r"dagster")
    warnings.filterwarnings("ignore", message=r".*is currently in (beta|preview)")


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
        elif isinstance(text, str):
            click.echo(text)
        elif text is not None:
            show(*(text if isinstance(text, list | tuple) else (text,)))
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


def require_warehouse() -> str:
    """The warehouse path (TRADINGMEM_DB); a clear error naming it when the file does not exist.

    Checked before any connection is opened: DuckDB would create an empty file for a writer."""
    path = db_path()
    if path != ":memory:" and not Path(path).exists():
        raise CliError(
            f"warehouse {path} does not exist: run `tradingmem demo --run` or trading_memory_job first "
            "(or point TRADINGMEM_DB at a warehouse)"
        )
    return path


@contextmanager
def warehouse(read_only: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to the warehouse the UI uses (TRADINGMEM_DB), which must exist (never created here)."""
    with connection(require_warehouse(), read_only=read_only) as con:
        yield con


def progress(as_json: bool) -> Callable[[str], None]:
    """A progress printer for long commands: stderr on a terminal, silent under --json."""
    if as_json or not is_terminal(err=True):
        return lambda _msg: None
    err = console(err=True)
    return lambda msg: err.print(Text(f"… {msg}", style="dim"))


# --- human output ---------------------------------------------------------------------------------

PLAIN_WIDTH = 120  # off a terminal: lines no longer than this (COLUMNS overrides)


def is_terminal(err: bool = False) -> bool:
    stream = sys.stderr if err else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def console(err: bool = False) -> Console:
    """A rich console on stdout (or stderr); off a terminal: plain text, a fixed width, no colour.

    Markup is off: text from the warehouse (``[tag]``-like findings, ids) prints as it is."""
    terminal = is_terminal(err)
    width = None
    if not terminal:
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 20 else PLAIN_WIDTH
    return Console(stderr=err, markup=False, highlight=False, emoji=False, width=width, soft_wrap=False)


@contextmanager
def terminal_console() -> Iterator[Console]:
    """A console on a duplicate of the terminal's stdout descriptor, for progress while a Dagster
    run goes: the run captures file descriptor 1 for its compute logs, and a progress display on
    ``sys.stdout`` would lose the terminal (and land in the run's logs)."""
    sys.stdout.flush()
    stream = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", errors="replace")
    try:
        yield Console(file=stream, markup=False, highlight=False, emoji=False, force_terminal=True)
    finally:
        stream.close()


def show(*renderables: RenderableType, out: Console | None = None) -> None:
    """Print human output (stdout unless ``out``); off a terminal without trailing blanks.

    Tables fit the width; a line of text is printed whole (a path in it is never broken)."""
    out = out or console()
    if out.is_terminal:
        for item in renderables:
            out.print(item, soft_wrap=isinstance(item, str | Text))
        return
    with out.capture() as captured:
        for item in renderables:
            out.print(item, soft_wrap=isinstance(item, str | Text))  # a line of text is never cut
    text = "\n".join(line.rstrip() for line in captured.get().splitlines())
    out.file.write(text + "\n")
    out.file.flush()


def table(*columns: str, title: str | None = None, right: tuple[str, ...] = ()) -> Table:
    """A compact table; ``right`` names the columns to right-align (numbers)."""
    grid = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        header_style="bold",
    )
    for name in columns:
        grid.add_column(name, justify="right" if name in right else "left", overflow="fold")
    return grid


def num(value: Any, digits: int = 1) -> str:
    """A number for people: integers with thousands separators, floats rounded; None is n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float | Decimal):
        return f"{float(value):,.{digits}f}"
    return str(value)


def usd(value: Any) -> str:
    """Dollars: cents, or four decimals for amounts below a cent."""
    if value is None:
        return "n/a"
    amount = float(value)
    return f"${amount:,.4f}" if 0 < abs(amount) < 0.01 else f"${amount:,.2f}"


STATUS_STYLES = {
    "ok": "green",
    "healthy": "green",
    "info": "cyan",
    "watch": "yellow",
    "soft": "yellow",
    "action": "bold red",
    "degraded": "red",
    "alarm": "bold red",
    "exhausted": "bold red",
    "not_materialized": "dim",
}


def status_text(status: Any, label: str | None = None) -> Text:
    """A status word coloured by what it means (no colour off a terminal)."""
    return Text(label or str(status), style=STATUS_STYLES.get(str(status), ""))
