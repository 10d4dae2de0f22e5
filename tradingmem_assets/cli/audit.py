"""`tradingmem audit run|show|trend|findings`: the methodology audit from the command line.

`audit run` materializes ``methodology_audit_reports`` through ``methodology_audit_job`` on the
same Dagster instance as the UI, so a CLI pass is a recorded run like any other (and the isolation
sensor checks it). The other commands read the report table read-only.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import click
from rich.text import Text

from tradingmem_assets.cli.common import CliError, json_option, num, progress, status_text, table, warehouse
from tradingmem_assets.defs.audit.findings import SEVERITIES
from tradingmem_assets.defs.audit.scoring import DIMENSIONS
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import read_frame, table_exists

JSON_COLUMNS = ("dimension_scores", "dimension_weights_used", "findings", "advisory_actions")
SPARK = "▁▂▃▄▅▆▇█"
NO_SCORE = "·"
TREND_ROWS = 10
SEVERITY_STYLES = {"high": "bold red", "medium": "yellow", "low": "dim"}


def sparkline(values: list[float | None]) -> str:
    """One character per pass on an absolute 0-100 scale; a pass without a composite is a dot."""
    out = []
    for v in values:
        if v is None:
            out.append(NO_SCORE)
        else:
            out.append(SPARK[min(len(SPARK) - 1, max(0, int(float(v) / 100 * len(SPARK))))])
    return "".join(out)


def _document(row: dict[str, Any]) -> dict[str, Any]:
    doc = dict(row)
    for col in JSON_COLUMNS:
        doc[col] = json.loads(doc[col]) if doc.get(col) else ({} if "dimension" in col else [])
    if isinstance(doc.get("ran_at"), datetime):
        doc["ran_at"] = doc["ran_at"].astimezone(UTC).isoformat()
    return doc


def _render(doc: dict[str, Any]) -> list:
    """One report for people: the score, each dimension, the findings and the advisory actions."""
    head = Text.assemble(
        (f"audit pass {doc['pass_id']}", "bold"),
        f"  ran {_when(doc['ran_at'])}  window {doc['window_days']} d\ncomposite ",
        (num(doc.get("composite")), "bold"),
        "  tier ",
        status_text(doc["tier"]),
        "  isolation ",
        status_text("ok", "ok") if doc["isolation_ok"] else status_text("action", "VIOLATED"),
    )
    weights = doc.get("dimension_weights_used") or {}
    dims = table("dimension", "score", "weight", right=("score", "weight"))
    for dim in DIMENSIONS:
        value = (doc.get("dimension_scores") or {}).get(dim)
        if value is None:
            dims.add_row(dim, Text("n/a", style="dim"), Text("too little data", style="dim"))
        else:
            dims.add_row(dim, num(value), num(weights.get(dim, 0), 3))
    out: list = [head, dims, _findings_table(doc.get("findings") or [])]
    actions = doc.get("advisory_actions") or []
    if actions:
        grid = table("advisory action", "because", title="advisory actions")
        for a in actions:
            grid.add_row(a["action"], a["reason"])
        out.append(grid)
    return out


def _when(iso: str) -> str:
    """An instant to the second, for people (the document keeps its full precision)."""
    try:
        return datetime.fromisoformat(iso).isoformat(timespec="seconds")
    except (TypeError, ValueError):
        return str(iso)


def _findings_table(findings: list[dict]):
    grid = table("severity", "dimension", "finding", title=f"findings: {len(findings)}")
    for f in findings:
        grid.add_row(
            Text(f["severity"], style=SEVERITY_STYLES.get(f["severity"], "")), f["dimension"], f["message"]
        )
    return grid


def _require_reports(con) -> None:
    if not table_exists(con, tables.METHODOLOGY_AUDIT_REPORTS):
        raise CliError(
            "no audit report yet: methodology_audit_reports is not materialized (run `tradingmem audit run`)"
        )


def _read_reports():
    return warehouse(read_only=True)  # a missing warehouse: one line naming it, nothing created


def _report(pass_id: str | None) -> dict[str, Any]:
    with _read_reports() as con:
        _require_reports(con)
        if pass_id is None:
            frame = read_frame(
                con,
                f"SELECT * FROM {tables.METHODOLOGY_AUDIT_REPORTS} "
                "ORDER BY ran_at DESC, pass_id DESC LIMIT 1",
            )
            if frame.height == 0:
                raise CliError("no audit report yet (run `tradingmem audit run`)")
        else:
            frame = read_frame(
                con, f"SELECT * FROM {tables.METHODOLOGY_AUDIT_REPORTS} WHERE pass_id = ?", [pass_id]
            )
            if frame.height == 0:
                raise CliError(f"no audit pass with id {pass_id!r}")
    return _document(frame.row(0, named=True))


def run_audit_pass(window_days: int) -> tuple[str, str]:
    """One audit pass as a run of methodology_audit_job on the UI's instance: (run_id, pass_id)."""
    from tradingmem_assets.defs.operations.runs import audit_yielded_to, first_failure_message, open_instance
    from tradingmem_assets.defs.operations.runs import run_audit_pass as launch

    with open_instance() as instance:
        result, pass_id = launch(instance, window_days)
        yielded_to = audit_yielded_to(instance, result.run_id) if result.success else None
    if yielded_to is not None:
        raise CliError(
            f"audit run {result.run_id} yielded to learning run {yielded_to} and wrote no report; "
            "run it again once learning is done"
        )
    if pass_id is None:
        raise CliError(f"audit run {result.run_id} failed: {first_failure_message(result)}")
    return result.run_id, pass_id


def register(group: click.Group) -> None:
    @group.group("audit")
    def audit() -> None:
        """The methodology audit: a 0-100 health score of the learning loop (never writes learning state)."""

    @audit.command("run")
    @click.option(
        "--window-days", type=click.IntRange(min=1), default=30, show_default=True, help="Days before as_of."
    )
    @json_option
    def run_cmd(window_days: int, as_json: bool):
        """Run one audit pass now (a real materialization recorded in the Dagster instance)."""
        say = progress(as_json)
        say(f"running one audit pass over the last {window_days} day(s) ...")
        run_id, pass_id = run_audit_pass(window_days)
        say(f"run {run_id} recorded pass {pass_id}")
        doc = {"run_id": run_id, **_report(pass_id)}
        return doc, _render(doc)

    @audit.command("show")
    @click.option("--latest", "latest", is_flag=True, help="The newest pass (the default).")
    @click.option("--pass", "pass_id", default=None, help="A pass id (ap_...).")
    @json_option
    def show_cmd(latest: bool, pass_id: str | None, as_json: bool):
        """Show one audit report."""
        if latest and pass_id:
            raise CliError("give either --latest or --pass ID, not both")
        doc = _report(pass_id)
        return doc, _render(doc)

    @audit.command("trend")
    @click.option(
        "--days", type=click.IntRange(min=1), default=30, show_default=True, help="Passes ran since."
    )
    @json_option
    def trend_cmd(days: int, as_json: bool):
        """Composite history with a sparkline; passes that changed learning tables are excluded."""
        since = datetime.now(UTC) - timedelta(days=days)  # ran_at is the wall clock of each pass
        with _read_reports() as con:
            _require_reports(con)
            frame = read_frame(
                con,
                "SELECT pass_id, ran_at, composite, tier, isolation_ok "
                f"FROM {tables.METHODOLOGY_AUDIT_REPORTS} WHERE ran_at >= ? ORDER BY ran_at, pass_id",
                [since],
            )
        kept = frame.filter(frame.get_column("isolation_ok").fill_null(False))
        excluded = frame.height - kept.height
        passes = [
            {
                "pass_id": r["pass_id"],
                "ran_at": r["ran_at"].astimezone(UTC).isoformat(),
                "composite": r["composite"],
                "tier": r["tier"],
            }
            for r in kept.to_dicts()
        ]
        scores = [p["composite"] for p in passes]
        scored = [s for s in scores if s is not None]
        doc = {
            "days": days,
            "since": since.isoformat(),
            "passes": passes,
            "excluded_isolation_violations": excluded,
            "sparkline": sparkline(scores),
            "latest": passes[-1] if passes else None,
            "min": min(scored) if scored else None,
            "max": max(scored) if scored else None,
            "mean": sum(scored) / len(scored) if scored else None,
        }
        return doc, _render_trend(doc)

    @audit.command("findings")
    @click.option("--severity", type=click.Choice(SEVERITIES), default=None, help="Only this severity.")
    @click.option("--pass", "pass_id", default=None, help="A pass id (default: the newest pass).")
    @json_option
    def findings_cmd(severity: str | None, pass_id: str | None, as_json: bool):
        """Drill into the findings of the newest (or a given) pass."""
        doc = _report(pass_id)
        findings = [f for f in doc["findings"] if severity is None or f["severity"] == severity]
        out = {"pass_id": doc["pass_id"], "ran_at": doc["ran_at"], "severity": severity, "findings": findings}
        if not findings:
            return out, f"no {severity + ' ' if severity else ''}finding in pass {doc['pass_id']}"
        grid = _findings_table(findings)
        grid.title = (
            f"{len(findings)} {severity + ' ' if severity else ''}finding(s) in pass {doc['pass_id']}"
        )
        return out, grid


def _render_trend(doc: dict[str, Any]) -> list:
    """The sparkline, the latest pass, min / mean / max and the passes (newest last), rounded."""
    passes, days, excluded = doc["passes"], doc["days"], doc["excluded_isolation_violations"]
    out: list = []
    if not passes:
        out.append(Text(f"no audit pass in the last {days} day(s)"))
    else:
        last = passes[-1]
        out.append(
            Text.assemble(
                (doc["sparkline"], "bold cyan"),
                f"  {len(passes)} pass(es) in {days} d; latest {num(last['composite'])} (",
                status_text(last["tier"]),
                f"); min {num(doc['min'])}, mean {num(doc['mean'])}, max {num(doc['max'])}",
            )
        )
        grid = table("pass", "ran at", "composite", "tier", right=("composite",))
        for p in passes[-TREND_ROWS:]:
            grid.add_row(p["pass_id"], _when(p["ran_at"]), num(p["composite"]), status_text(p["tier"]))
        if len(passes) > TREND_ROWS:
            grid.caption = f"the last {TREND_ROWS} of {len(passes)} passes (--json has all)"
        out.append(grid)
    if excluded:
        out.append(
            Text(f"{excluded} pass(es) excluded: learning tables changed during the pass", style="yellow")
        )
    return out
