"""`tradingmem demo`: write the demo landing world, optionally run the main job on it."""

from __future__ import annotations

import os
from pathlib import Path

import click

from tradingmem_assets.cli.common import (
    CliError,
    db_path,
    json_option,
    landing_dir,
    progress,
)


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
@json_option
def demo(scale: float, seed: int | None, landing: str | None, run_job: bool, as_json: bool):
    """Write the demo world (seeded, deterministic) and optionally run the main job on it.

    With --run and no TRADINGMEM_AS_OF, the run's as_of is the demo world's anchor, so the
    demo's open windows, active sessions and fresh memory units look the way they were built.
    """
    from tradingmem_assets.demo import DEMO_AS_OF, DEMO_SEED, write_demo_world

    say = progress(as_json)
    target = Path(landing or landing_dir())
    say(f"writing demo world at scale {scale} into {target}")
    summary = write_demo_world(target, scale=scale, seed=DEMO_SEED if seed is None else seed, progress=say)
    document: dict = {
        "landing_dir": str(target),
        "scale": scale,
        "seed": summary.seed,
        "landing_rows": summary.rows,
    }
    lines = [f"demo world (scale {scale}, seed {summary.seed}) written to {target}:"]
    lines += [f"  {table:<28} {n:>10,}" for table, n in sorted(summary.rows.items())]
    if not run_job:
        return document, "\n".join(lines)

    from tradingmem_assets.defs.operations.queries import warehouse_summary
    from tradingmem_assets.defs.operations.runs import open_instance, run_main_job

    as_of = os.environ.get("TRADINGMEM_AS_OF") or DEMO_AS_OF.isoformat()
    database = db_path()
    rebuilt = _rebuild_if_ahead(database, as_of)
    if rebuilt:
        say(rebuilt)
    say(f"running trading_memory_job (as_of {as_of}) into {database}")
    report = run_main_job(open_instance(), database=database, landing_dir=str(target), as_of=as_of)
    if not report.success:
        raise CliError(
            f"trading_memory_job failed in step(s) {', '.join(report.failed_steps)}: {report.error}"
        )
    counts = warehouse_summary(database)
    document.update(
        {
            "warehouse": database,
            "rebuilt": rebuilt,
            "as_of": as_of,
            "run_id": report.run_id,
            "seconds": round(report.seconds, 2),
            "tables": counts,
        }
    )
    lines += ["", rebuilt] if rebuilt else []
    lines += [
        "",
        f"trading_memory_job succeeded in {report.seconds:.1f}s (run {report.run_id}, as_of {as_of})",
        f"warehouse {database}:",
    ]
    lines += [
        f"  {table:<28} {'not materialized' if n is None else f'{n:>10,}'}" for table, n in counts.items()
    ]
    return document, "\n".join(lines)


def _rebuild_if_ahead(database: str, as_of: str) -> str | None:
    """The demo's warehouse moves forward like any other (SPEC section 16). When it already learned
    past the demo's anchor (say the UI materialized it on the wall clock), a demo run would be
    refused, so the demo rebuilds its own warehouse file from the world it just wrote."""
    from tradingmem_assets.defs.operations.ledger import learning_bound
    from tradingmem_assets.lib.warehouse import connection
    from tradingmem_assets.settings import parse_as_of

    path = Path(database)
    if not path.exists():
        return None
    with connection(path, read_only=True) as con:
        bound = learning_bound(con)
    if bound is None or bound <= parse_as_of(as_of):
        return None
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    return (
        f"rebuilt {database} from scratch: it had learned up to {bound.isoformat()}, later than the "
        f"demo's as_of {as_of} (learning runs move forward)"
    )


def register(group: click.Group) -> None:
    group.add_command(demo)
