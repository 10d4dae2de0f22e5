"""Print the corpus detection table at the end of a run that included the safety tests."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    ran = any(
        "tests/safety" in str(getattr(r, "nodeid", "")) for rs in terminalreporter.stats.values() for r in rs
    )
    if not ran:
        return
    from tests.safety.corpus_stats import (
        HELD_OUT_SETS,
        TUNED_ATTACKS,
        TUNED_BENIGN,
        detection,
        false_positives,
        load,
    )

    tr = terminalreporter
    tr.section("injection corpus")
    for title, attacks, benign in (
        ("project corpus (rules written on it)", TUNED_ATTACKS, TUNED_BENIGN),
        *((f"{name} ({a}, {b})", (a,), (b,)) for name, (a, b) in HELD_OUT_SETS.items()),
    ):
        rates = detection(load(*attacks))
        rows = load(*benign)
        tr.write_line(f"{title}: {len(rows) - len(false_positives(rows))}/{len(rows)} benign clean")
        for line in rates.table().splitlines():
            tr.write_line("  " + line)
