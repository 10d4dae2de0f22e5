"""The audit test world itself: it writes the learning tables with the SPEC section 8 columns."""

import duckdb

from tests.audit.world import healthy_learning_state, write_learning_state


def test_the_audit_test_world_uses_the_spec_learning_columns(tmp_path):
    db = tmp_path / "w.duckdb"
    write_learning_state(db, healthy_learning_state())
    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = {
            t: [r[0] for r in con.execute(f"DESCRIBE {t}").fetchall()]
            for t in ("main.methodologies", "main.methodology_cases", "main.methodology_case_hints")
        }
    finally:
        con.close()
    assert cols["main.methodology_cases"] == [
        "case_id",
        "methodology_id",
        "run_id",
        "window",
        "correct",
        "recorded_at",
    ]
    assert {"injection_id", "injected_at", "injectable_at_injection"} <= set(
        cols["main.methodology_case_hints"]
    )
    assert cols["main.methodologies"][-3:] == ["created_at", "graduated_at", "updated_at"]
