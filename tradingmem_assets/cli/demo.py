"""`tradingmem demo`: write the demo landing world, optionally run the main job on it.

With ``--run`` the job runs as a native run of the code location (``defs/operations/runs.py``),
tagged ``tradingmem/trigger: demo``, once a day for ``--days`` days ending at the demo's anchor, as
the daily learning schedule would have run it (so the first audit has heartbeats to score). On a
terminal it shows one line per finished asset of the last run with its time under a progress bar,
then a summary; off a terminal only the summary (at most 60 lines); under ``--json`` nothing but
the document. The Dagster event log stays in the run's record in the
instance; ``--verbose`` prints it (stderr) as the run goes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime, timedelta
from pathlib import Path

import click
from rich.console import Console, Group
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from tradingmem_assets.cli.common import (
    CliError,
    console,
    db_path,
    is_terminal,
    json_option,
    landing_dir,
    num,
    show,
    table,
    terminal_console,
)

JOB_NAME = "trading_memory_job"
# the run's console logger: silent (a failed step is reported in one line; its log is in the run)
QUIET = "CRITICAL"


@click.command("demo")
@click.option(
    "--scale", type=float, default=0.01, show_default=True, help="Scale factor (1 ≈ 100,000 decisions)."
)
@click.option("--seed", type=int, default=None, help="Random seed (default: the demo's fixed seed).")
@click.option(
    "--landing-dir",
    "landing",
    type=click.Path(file_okay=False),
    default=None,
    help="Where to write the landing files (default: TRADINGMEM_LANDING_DIR or data/landing).",
)
@click.option(
    "--run", "run_job", is_flag=True, help="Then materialize trading_memory_job into the warehouse."
)
@click.option(
    "--days",
    type=click.IntRange(1, 31),
    default=3,
    show_default=True,
    help="With --run: one run a day for this many days up to the anchor (days already learned are skipped).",
)
@click.option(
    "--verbose", is_flag=True, help="With --run: print the run's Dagster event log (stderr) as it goes."
)
@json_option
def demo(as_json: bool, **options):
    """Write the demo world (seeded, deterministic) and optionally run the main job on it.

    With --run and no TRADINGMEM_AS_OF, the run's as_of is the demo world's anchor, so the
    demo's open windows, active sessions and fresh memory units look the way they were built.
    """
    if not options["scale"] > 0:
        raise click.BadParameter(f"{options['scale']} is not a positive scale factor", param_hint="'--scale'")
    terminal = not as_json and is_terminal()
    with terminal_console() if terminal else nullcontext(None if as_json else console()) as out:
        return _demo(out, terminal, **options)


def _demo(
    out: Console | None,
    terminal: bool,
    *,
    scale: float,
    seed: int | None,
    landing: str | None,
    run_job: bool,
    days: int,
    verbose: bool,
):
    from tradingmem_assets.demo import DEMO_AS_OF, DEMO_SEED, write_demo_world
    from tradingmem_assets.settings import parse_as_of

    if run_job:
        from tradingmem_assets.defs.operations.runs import instance_home

        instance_home()  # a DAGSTER_HOME naming no folder fails before anything is written
        anchor = parse_as_of(os.environ.get("TRADINGMEM_AS_OF") or DEMO_AS_OF.isoformat())

    target = Path(landing or landing_dir())
    with _status(out if terminal else None, f"writing the demo world (scale {scale}) into {target}") as say:
        summary = write_demo_world(
            target, scale=scale, seed=DEMO_SEED if seed is None else seed, progress=say
        )
    document: dict = {
        "landing_dir": str(target),
        "scale": scale,
        "seed": summary.seed,
        "landing_rows": summary.rows,
    }
    world = (
        f"demo world (scale {scale}, seed {summary.seed}): {len(summary.rows)} landing tables, "
        f"{num(sum(summary.rows.values()))} rows in {target}"
    )
    if not run_job:
        rows = table("landing table", "rows", right=("rows",))
        for name, n in sorted(summary.rows.items()):
            rows.add_row(name, num(n))
        return document, [Text(world), rows]

    from tradingmem_assets.defs.operations.queries import warehouse_summary
    from tradingmem_assets.defs.operations.runs import open_instance, run_main_job

    database = db_path()
    rebuilt, instants = _days_to_run(database, anchor, days)
    if out is not None:
        show(Text(world), out=out)
        if rebuilt:
            show(Text(rebuilt, style="yellow"), out=out)
    runs: list[dict] = []
    with open_instance() as instance:
        for n, instant in enumerate(instants, start=1):
            as_of = _iso(instant)
            last = n == len(instants)
            if out is not None:
                day = f"day {n} of {len(instants)}: " if len(instants) > 1 else ""
                show(Text(f"{day}{JOB_NAME} (as_of {as_of}) into {database}", style="bold"), out=out)
            display = RunDisplay(out, live=terminal and not verbose, lines=terminal and last)
            with display:
                report = run_main_job(
                    instance,
                    database=database,
                    landing_dir=str(target),
                    as_of=as_of,
                    trigger="demo",
                    console_level=None if verbose else QUIET,
                    listener=display.hear,
                )
            if out is not None and (last or not report.success):
                failed = frozenset(report.failed_steps)
                grid = summary_table(report.steps, report.step_seconds, detailed=not terminal, failed=failed)
                show(grid, out=out)
            if not report.success:
                steps = ", ".join(report.failed_steps) or "the run"
                raise CliError(
                    f"{JOB_NAME} (as_of {as_of}) failed in {steps}: "
                    f"{(report.error or 'run failed').splitlines()[0]} "
                    f"(run {report.run_id}; its event log is in the Dagster UI, or rerun with --verbose)"
                )
            runs.append({"as_of": as_of, "run_id": report.run_id, "seconds": round(report.seconds, 2)})
            if out is not None and not last:
                show(Text(f"{JOB_NAME} succeeded in {report.seconds:.1f}s; run {report.run_id}"), out=out)
    counts = warehouse_summary(database)
    document.update(
        {
            "warehouse": database,
            "rebuilt": rebuilt,
            "as_of": as_of,
            "run_id": report.run_id,
            "seconds": round(report.seconds, 2),
            "runs": runs,
            "tables": counts,
        }
    )
    assets = sum(len(s.assets) for s in report.steps)
    checks = sum(len(s.checks) for s in report.steps)
    done = Text.assemble(
        ("✓ " if terminal else "", "green"),
        (f"{JOB_NAME} succeeded in {report.seconds:.1f}s", "bold"),
        f": {assets} assets, {checks} checks",
        f", {len(report.skipped_steps)} steps skipped" if report.skipped_steps else "",
        f"; run {report.run_id}",
    )
    return document, [done, warehouse_table(database, counts)]


@contextmanager
def _status(out: Console | None, message: str) -> Iterator:
    """A spinner with the latest progress message on a terminal; silent elsewhere."""
    if out is None:
        yield lambda _msg: None
        return
    with out.status(message) as status:
        yield lambda msg: status.update(f"{message}: {msg}")


class RunDisplay:
    """Hears a run's steps (``runs.StepEvent``): a progress bar and one line per finished asset."""

    def __init__(self, out: Console | None, *, live: bool, lines: bool):
        self.out = out
        self.lines = lines and out is not None
        self.progress = (
            Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=out,
                transient=True,
            )
            if live and out is not None
            else None
        )
        self.task = None

    def __enter__(self) -> RunDisplay:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def _print(self, text: Text) -> None:
        if self.progress is not None:
            self.progress.console.print(text)
        elif self.out is not None:
            show(text, out=self.out)

    def hear(self, event) -> None:
        if event.kind == "planned":
            if self.progress is not None:
                self.task = self.progress.add_task(JOB_NAME, total=len(event.plan))
            return
        step = event.step
        if event.kind == "started":
            if self.progress is not None:
                self.progress.update(self.task, description=f"{JOB_NAME}: {step.key}")
            return
        if self.progress is not None:
            self.progress.advance(self.task)
        if event.kind == "failed" and self.out is not None:
            self._print(Text(f"✗ step {step.key} failed ({_step_label(step)})", style="bold red"))
        elif event.kind == "skipped" and self.lines:
            self._print(Text(f"– skipped {_step_label(step)}", style="dim"))
        elif event.kind == "succeeded" and self.lines and step.assets:
            self._print(
                Text.assemble(
                    ("✓ ", "green"),
                    (f"{event.seconds:6.2f}s  ", "cyan"),
                    (f"{step.group or '':<12}", "dim"),
                    _step_label(step),
                )
            )


def _step_label(step) -> str:
    """An asset's key; a multi-asset step by its name and its assets."""
    if len(step.assets) == 1:
        return step.assets[0]
    return f"{step.key} ({', '.join(step.assets)})" if step.assets else step.key


def summary_table(steps, seconds: dict[str, float], *, detailed: bool, failed: frozenset[str] = frozenset()):
    """Per asset group: assets, checks, seconds (from the run's event log); ``detailed`` lists every
    asset with its time (off a terminal, where no line per asset was printed)."""
    groups: dict[str, list] = {}
    for step in steps:
        groups.setdefault(step.group or "other", []).append(step)
    columns = ["group", "assets", "checks", "seconds", "assets and their seconds" if detailed else "slowest"]
    grid = table(*columns, title="assets by group", right=("assets", "checks", "seconds"))
    for group, members in groups.items():
        timed = [(s, seconds.get(s.key)) for s in members if s.assets]
        total = sum(seconds.get(s.key) or 0.0 for s in members)
        if detailed:
            last = Text(", ".join(f"{_step_label(s)} {_secs(t, s.key in failed)}" for s, t in timed))
        else:
            slow = max(timed, key=lambda st: st[1] or 0.0, default=None)
            name = "" if slow is None else (slow[0].assets[0] if len(slow[0].assets) == 1 else slow[0].key)
            last = Text("" if slow is None else f"{name} {_secs(slow[1])}")
        grid.add_row(
            group,
            str(sum(len(s.assets) for s in members)),
            str(sum(len(s.checks) for s in members)),
            f"{total:.1f}",
            last,
        )
    return grid


def _secs(value: float | None, failed: bool = False) -> str:
    if failed:
        return "failed"
    return "not run" if value is None else f"{value:.2f}s"


def warehouse_table(database: str, counts: dict[str, int | None]):
    """Row counts of the main tables, two per line."""
    if not counts:
        return Text(f"warehouse {database}: no table yet")
    grid = table("table", "rows", "table ", "rows ", right=("rows", "rows "))
    items = [(name, "not materialized" if n is None else num(n)) for name, n in counts.items()]
    half = (len(items) + 1) // 2
    for left, right in zip(items[:half], items[half:] + [("", "")], strict=False):
        grid.add_row(*left, *right)
    return Group(Text(f"warehouse {database}", style="bold"), grid)


def _iso(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def _days_to_run(database: str, anchor: datetime, days: int) -> tuple[str | None, list[datetime]]:
    """The daily instants to run, ending at ``anchor``, and the note when the file was rebuilt.

    The demo's warehouse moves forward like any other (SPEC section 16): days it already learned
    are not run again (the anchor's own run is then a replay when nothing changed). When it learned
    past the anchor (say the UI materialized it on the wall clock), a demo run would be refused, so
    the demo rebuilds its own warehouse file from the world it just wrote.
    """
    from tradingmem_assets.defs.operations.ledger import learning_bound
    from tradingmem_assets.lib.warehouse import connection

    instants = [anchor - timedelta(days=back) for back in range(days - 1, -1, -1)]
    path = Path(database)
    if not path.exists():
        return None, instants
    with connection(path, read_only=True) as con:
        bound = learning_bound(con)
    if bound is None:
        return None, instants
    if bound <= anchor:
        return None, [t for t in instants if t >= bound]
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    note = (
        f"rebuilt {database} from scratch: it had learned up to {bound.isoformat()}, later than the "
        f"demo's as_of {_iso(anchor)} (learning runs move forward)"
    )
    return note, instants


def register(group: click.Group) -> None:
    group.add_command(demo)
