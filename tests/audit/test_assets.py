"""The audit pass as a real materialization: the report row, its isolation, and the isolation sensor."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
import duckdb
import pytest
from pydantic import PrivateAttr

from tests.audit.world import EXPECTED, EXPECTED_COMPOSITE, healthy_learning_state, write_learning_state
from tests.world import World
from tradingmem_assets.defs.audit import assets as audit_assets
from tradingmem_assets.defs.audit.assets import methodology_audit_reports
from tradingmem_assets.defs.audit.checks import AUDIT_ASSET_KEY, ISOLATION_CHECK, REPORT_INVARIANTS_CHECK
from tradingmem_assets.defs.audit.jobs import audit_isolation_alert_job
from tradingmem_assets.defs.audit.sensors import audit_isolation_sensor
from tradingmem_assets.defs.audit.table_hash import LEARNING_TABLES, tables_sha256
from tradingmem_assets.defs.resources import WarehouseResource

AUDIT_AS_OF = "2024-07-01T00:00:00Z"


class InterferingWarehouse(WarehouseResource):
    """The real warehouse, plus a learning-table write landing between the pass's read and write phases.

    It stands for a learning run that slipped in while the audit was scoring (the audit holds no
    connection then): the write phase's connection is opened after the write.
    """

    _opened: int = PrivateAttr(default=0)

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with super().connect() as con:
            self._opened += 1
            if self._opened == 2:
                con.execute("UPDATE main.methodologies SET updated_at = updated_at + INTERVAL 1 SECOND")
            yield con


def materialize_audit(
    world: World,
    *,
    resource: WarehouseResource | None = None,
    window_days: int | None = None,
    instance: dg.DagsterInstance | None = None,
    raise_on_error: bool = True,
):
    run_config = (
        {"ops": {"methodology_audit_reports": {"config": {"window_days": window_days}}}}
        if window_days
        else None
    )
    return dg.materialize(
        [methodology_audit_reports],
        resources={"warehouse": resource or world.resource(AUDIT_AS_OF)},
        instance=instance or world.instance,
        run_config=run_config,
        raise_on_error=raise_on_error,
    )


def learning_contents(world: World) -> dict[str, list[tuple]]:
    return {t: world.rows(f"SELECT * FROM {t} ORDER BY ALL") for t in LEARNING_TABLES}


@pytest.fixture(scope="module")
def audited(tmp_path_factory, instance):
    """One healthy world audited twice (window 30 d, then 7 d)."""
    world = World(tmp_path_factory.mktemp("audit"), instance)
    write_learning_state(world.db, healthy_learning_state())
    contents_before = learning_contents(world)
    first = materialize_audit(world)
    second = materialize_audit(world, window_days=7)
    return world, contents_before, first, second


def test_an_audit_pass_writes_one_report_row_with_the_hand_computed_scores(audited):
    world, _, first, _ = audited
    pass_id = first.asset_materializations_for_node("methodology_audit_reports")[0].metadata["pass_id"].value
    row = world.query("SELECT * FROM main.methodology_audit_reports WHERE pass_id = ?", [pass_id]).row(
        0, named=True
    )
    assert row["window_days"] == 30
    assert row["composite"] == pytest.approx(EXPECTED_COMPOSITE)
    assert row["tier"] == "healthy"
    assert json.loads(row["dimension_scores"]) == pytest.approx(EXPECTED)
    weights = json.loads(row["dimension_weights_used"])
    assert sum(weights.values()) == pytest.approx(1.0) and set(weights) == set(EXPECTED)
    assert row["isolation_ok"] is True
    assert row["learning_tables_sha256_before"] == row["learning_tables_sha256_after"]
    assert {f["severity"] for f in json.loads(row["findings"])} <= {"high", "medium", "low"}
    assert json.loads(row["advisory_actions"])


def test_an_audit_pass_leaves_the_four_learning_tables_byte_identical(audited):
    world, contents_before, first, second = audited
    assert learning_contents(world) == contents_before
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        now = tables_sha256(con).combined
    finally:
        con.close()
    for result in (first, second):
        meta = result.asset_materializations_for_node("methodology_audit_reports")[0].metadata
        assert (
            meta["learning_tables_sha256_before"].value == meta["learning_tables_sha256_after"].value == now
        )


def test_the_report_table_is_append_only_one_row_per_pass(audited):
    world, *_ = audited
    rows = world.rows("SELECT pass_id, window_days FROM main.methodology_audit_reports ORDER BY ran_at")
    assert [w for _, w in rows] == [30, 7]
    assert len({p for p, _ in rows}) == 2


def test_the_materialization_carries_composite_and_hashes_as_metadata(audited):
    _, _, first, _ = audited
    meta = first.asset_materializations_for_node("methodology_audit_reports")[0].metadata
    assert isinstance(meta["composite"], dg.FloatMetadataValue)
    assert meta["composite"].value == pytest.approx(EXPECTED_COMPOSITE)
    assert len(meta["learning_tables_sha256_before"].value) == 64
    assert meta["tier"].value == "healthy"


def test_a_clean_pass_passes_its_isolation_and_invariant_checks(audited):
    _, _, first, _ = audited
    checks = {c.check_name: c.passed for c in first.get_asset_check_evaluations()}
    assert checks == {ISOLATION_CHECK: True, REPORT_INVARIANTS_CHECK: True}


def test_the_window_ends_at_as_of_and_spans_window_days(audited):
    world, _, _, second = audited
    pass_id = second.asset_materializations_for_node("methodology_audit_reports")[0].metadata["pass_id"].value
    scores = json.loads(
        world.rows(
            "SELECT dimension_scores FROM main.methodology_audit_reports WHERE pass_id = ?", [pass_id]
        )[0][0]
    )
    # 7 days: candidates (22-25 d ago) and graduations (20 d ago) fall outside; the demotion (5 d) is in
    assert scores["synthesis_quality"] is None
    assert scores["quarantine_churn"] == pytest.approx(100.0)
    assert scores["cron_health"] == pytest.approx(100.0)


def test_a_learning_write_during_the_pass_marks_it_isolation_not_ok_and_fails_the_check(tmp_path, instance):
    world = World(tmp_path, instance)
    write_learning_state(world.db, healthy_learning_state())
    result = materialize_audit(
        world, resource=InterferingWarehouse(**world.resource(AUDIT_AS_OF).model_dump()), raise_on_error=False
    )
    assert not result.success  # the blocking isolation check fails the pass's run
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    assert checks[ISOLATION_CHECK].passed is False
    assert "main.methodologies" in checks[ISOLATION_CHECK].metadata["changed_tables"].value
    meta = result.asset_materializations_for_node("methodology_audit_reports")[0].metadata
    assert meta["learning_tables_sha256_before"].value != meta["learning_tables_sha256_after"].value
    row = world.query("SELECT isolation_ok, findings FROM main.methodology_audit_reports").row(0, named=True)
    assert row["isolation_ok"] is False
    assert json.loads(row["findings"])[0]["code"] == "isolation_violation"


def test_a_switched_off_audit_records_a_disabled_pass(tmp_path, instance, monkeypatch):
    world = World(tmp_path, instance)
    write_learning_state(world.db, healthy_learning_state())
    off = dataclasses.replace(audit_assets.SETTINGS, audit_enabled=False)
    monkeypatch.setattr(audit_assets, "SETTINGS", off)
    materialize_audit(world)
    row = world.query(
        "SELECT tier, composite, dimension_weights_used, isolation_ok FROM main.methodology_audit_reports"
    ).row(0, named=True)
    assert row["tier"] == "disabled"
    assert row["composite"] is None
    assert json.loads(row["dimension_weights_used"]) == {}
    assert row["isolation_ok"] is True


def test_an_audit_of_an_empty_warehouse_is_insufficient_data_not_a_crash(tmp_path, instance):
    world = World(tmp_path, instance)
    materialize_audit(world)
    row = world.query("SELECT tier, composite FROM main.methodology_audit_reports").row(0, named=True)
    assert row == {"tier": "insufficient_data", "composite": None}


def test_a_learning_table_missing_a_column_fails_the_pass_with_its_name(tmp_path, instance):
    world = World(tmp_path, instance)
    write_learning_state(world.db, healthy_learning_state())
    con = duckdb.connect(str(world.db))
    con.execute("ALTER TABLE main.methodology_cases DROP COLUMN recorded_at")
    con.close()
    result = materialize_audit(world, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "main.methodology_cases" in failure.step_failure_data.error.message
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        assert not con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'methodology_audit_reports'"
        ).fetchall()[0][0]
    finally:
        con.close()


# --- isolation sensor -----------------------------------------------------------------------------


@pytest.fixture
def own_instance():
    with dg.instance_for_test() as inst:
        yield inst


def sensor_tick(instance: dg.DagsterInstance, cursor: str | None):
    context = dg.build_sensor_context(instance=instance, cursor=cursor)
    return audit_isolation_sensor(context)


def test_the_isolation_sensor_accepts_a_clean_pass(tmp_path, own_instance):
    world = World(tmp_path, own_instance)
    write_learning_state(world.db, healthy_learning_state())
    materialize_audit(world)
    result = sensor_tick(own_instance, None)
    assert not result.run_requests
    assert "unchanged" in result.skip_reason.skip_message
    assert int(result.cursor) > 0
    # nothing new: the next tick says so and keeps the cursor
    again = sensor_tick(own_instance, result.cursor)
    assert not again.run_requests and again.cursor == result.cursor
    assert "no new audit pass" in again.skip_reason.skip_message


def test_the_isolation_sensor_catches_a_pass_that_changed_learning_tables_and_raises_an_alert(
    tmp_path, own_instance
):
    world = World(tmp_path, own_instance)
    write_learning_state(world.db, healthy_learning_state())
    materialize_audit(world)  # clean
    first = sensor_tick(own_instance, None)
    materialize_audit(
        world, resource=InterferingWarehouse(**world.resource(AUDIT_AS_OF).model_dump()), raise_on_error=False
    )
    result = sensor_tick(own_instance, first.cursor)
    assert len(result.run_requests) == 1
    request = result.run_requests[0]
    config = request.run_config["ops"]["record_audit_isolation_violation"]["config"]
    violated = world.rows("SELECT pass_id FROM main.methodology_audit_reports WHERE NOT isolation_ok")
    assert [config["pass_id"]] == [p for (p,) in violated]
    assert config["sha256_before"] != config["sha256_after"]

    # the alert run: records the violation, fails the audit_isolation check, and fails as the alert
    alert = audit_isolation_alert_job.execute_in_process(
        run_config=request.run_config,
        resources={"warehouse": world.resource(AUDIT_AS_OF)},
        instance=own_instance,
        raise_on_error=False,
    )
    assert not alert.success
    check_key = dg.AssetCheckKey(AUDIT_ASSET_KEY, ISOLATION_CHECK)
    latest = own_instance.event_log_storage.get_latest_asset_check_execution_by_key([check_key])[check_key]
    assert latest.status.value == "FAILED"
    assert latest.run_id == alert.run_id
    # excluded from trends: the pass is (still) isolation_ok = false, the clean one is untouched
    assert world.rows("SELECT isolation_ok FROM main.methodology_audit_reports ORDER BY ran_at") == [
        (True,),
        (False,),
    ]


def test_a_reported_materialization_with_differing_hashes_is_recorded_by_the_alert_run(
    tmp_path, own_instance
):
    world = World(tmp_path, own_instance)
    own_instance.report_runless_asset_event(
        dg.AssetMaterialization(
            asset_key=AUDIT_ASSET_KEY,
            metadata={
                "pass_id": "ap_reported",
                "learning_tables_sha256_before": "a" * 64,
                "learning_tables_sha256_after": "b" * 64,
                "window_days": 30,
                "tier": "healthy",
                "composite": 90.0,
            },
        )
    )
    result = sensor_tick(own_instance, None)
    assert len(result.run_requests) == 1
    audit_isolation_alert_job.execute_in_process(
        run_config=result.run_requests[0].run_config,
        resources={"warehouse": world.resource(AUDIT_AS_OF)},
        instance=own_instance,
        raise_on_error=False,
    )
    row = world.query(
        "SELECT pass_id, tier, composite, isolation_ok FROM main.methodology_audit_reports"
    ).row(0, named=True)
    assert row == {"pass_id": "ap_reported", "tier": "healthy", "composite": 90.0, "isolation_ok": False}


def test_a_materialization_without_hashes_cannot_prove_isolation_and_is_flagged(own_instance):
    own_instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=AUDIT_ASSET_KEY, metadata={}))
    result = sensor_tick(own_instance, None)
    assert len(result.run_requests) == 1
    config = result.run_requests[0].run_config["ops"]["record_audit_isolation_violation"]["config"]
    assert config["sha256_before"] == "missing"
