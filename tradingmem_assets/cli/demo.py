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
            "as_of": as_of,
            "run_id": report.run_id,
            "seconds": round(report.seconds, 2),
            "tables": counts,
        }
    )
    lines += [
        "",
        f"trading_memory_job succeeded in {report.seconds:.1f}s (run {report.run_id}, as_of {as_of})",
        f"warehouse {database}:",
    ]
    lines += [
        f"  {table:<28} {'not materialized' if n is None else f'{n:>10,}'}" for table, n in counts.items()
    ]
    return document, "\n".join(lines)


def register(group: click.Group) -> None:
    group.add_command(demo)
