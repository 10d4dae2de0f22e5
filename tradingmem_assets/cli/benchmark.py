"""`tradingmem benchmark`: measured performance at a scale factor (SPEC section 14)."""

from __future__ import annotations

from pathlib import Path

import click

from tradingmem_assets.cli.common import json_option, progress


@click.command("benchmark")
@click.option(
    "--scale", type=float, default=0.1, show_default=True, help="Scale factor (1 ≈ 100,000 decisions)."
)
@click.option("--repeat", "repeats", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), default=None, help="Keep the data here.")
@click.option(
    "--incremental/--no-incremental",
    default=True,
    show_default=True,
    help="Also time a replay (same files and as_of) and a run one day later.",
)
@click.option(
    "--write-docs",
    "page",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the report beside this page (benchmarks/scale-SF.json) and rewrite the page's measured "
    "block from every report kept there (e.g. docs/performance.md).",
)
@json_option
def benchmark_cmd(
    scale: float, repeats: int, workdir: str | None, incremental: bool, page: Path | None, as_json: bool
):
    """Generate data at a scale factor, run the main job REPEAT times, report medians."""
    from tradingmem_assets.benchmark import benchmark, format_report

    report = benchmark(
        scale, repeats, Path(workdir) if workdir else None, say=progress(as_json), incremental=incremental
    )
    text = format_report(report)
    if page is not None:
        from tradingmem_assets.benchmark.docs import write_docs

        text += f"\nreport kept in {write_docs(page, report)}; {page} rewritten between its markers"
    return report, text


def register(group: click.Group) -> None:
    group.add_command(benchmark_cmd)
