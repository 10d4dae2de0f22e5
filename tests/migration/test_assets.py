"""Legacy role-memory migration: backups, verbatim migration, quarantine, rejects, conservation."""

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from tests.world import DEFS, World, ts
from tradingmem_assets.defs.migration.backup import sha256_hex

MIGRATION = ["legacy_role_memory_backup", "migrated_role_cases", "migration_conservation_report"]
LANDING = ["raw/legacy_role_memory"]

# Non-ASCII, trailing whitespace, tabs and newlines: all must survive byte for byte.
VERBATIM_TEXT = "Bought GOOG below fair value 估值偏低 — café ✓\n\tkeep sizing small.  \n"
VERBATIM_PROVENANCE = '{"source": "legacy-v1", "note": "ré-import 迁移"}  '

LEGACY_ROWS = [
    # 2024-01: one migrated, two quarantined (unknown / differently-cased role), three rejects
    {
        "legacy_id": "L01",
        "role": "valuation",
        "content": VERBATIM_TEXT,
        "score": 0.92,
        "created_at": ts("2024-01-05 10:00"),
        "provenance": VERBATIM_PROVENANCE,
        "symbol": "GOOG",
        "decision_id": "d-old-1",
    },
    {
        "legacy_id": "L02",
        "role": "astrologer",
        "content": "Mercury is retrograde, sell.",
        "score": 0.1,
        "created_at": ts("2024-01-06 10:00"),
        "provenance": "legacy:row/2",
    },
    {
        "legacy_id": "L03",
        "role": "Valuation",
        "content": "case differs from the registry",
        "score": None,
        "created_at": ts("2024-01-07 10:00"),
        "provenance": "legacy:row/3",
    },
    {
        "legacy_id": "L04",
        "role": "valuation",
        "content": "   ",
        "score": 0.5,
        "created_at": ts("2024-01-08 10:00"),
        "provenance": "legacy:row/4",
    },
    {
        "legacy_id": "L05",
        "role": "valuation",
        "content": None,
        "score": 0.5,
        "created_at": ts("2024-01-09 10:00"),
        "provenance": None,
    },
    {
        "legacy_id": "L06",
        "role": None,
        "content": "who wrote this?",
        "score": 0.5,
        "created_at": ts("2024-01-31 23:59:59"),
        "provenance": "legacy:row/6",
    },
    # 2024-02: one migrated, one rejected (no provenance)
    {
        "legacy_id": "L07",
        "role": "trend_follower",
        "content": "BTC trend confirmed by volume",
        "score": 0.7,
        "created_at": ts("2024-02-01 00:00"),
        "provenance": "legacy:row/7",
        "symbol": "BTC",
    },
    {
        "legacy_id": "L08",
        "role": "trend_follower",
        "content": "no provenance here",
        "score": 0.7,
        "created_at": ts("2024-02-10 00:00"),
        "provenance": "",
    },
    # 2024-03: nothing.  2024-04: one migrated
    {
        "legacy_id": "L09",
        "role": "macro_rates",
        "content": "Rates view priced in.",
        "score": None,
        "created_at": ts("2024-04-15 12:00"),
        "provenance": "legacy:row/9",
        "symbol": "EURUSD",
    },
]

EXPECTED_REPORT = [
    # partition_key, rows_in, migrated, quarantined, rejected, checksum_ok, conserved
    ("2024-01-01", 6, 1, 2, 3, True, True),
    ("2024-02-01", 2, 1, 0, 1, True, True),
    ("2024-03-01", 0, 0, 0, 0, True, True),
    ("2024-04-01", 1, 1, 0, 0, True, True),
]


def materialize_range(
    world: World, start: str, end: str, selection=MIGRATION, raise_on_error: bool = True
) -> dg.ExecuteInProcessResult:
    """One run over a partition range, as a single-run backfill or `--partition-range` launches it."""
    return dg.materialize(
        list(DEFS.assets or []) + list(DEFS.asset_checks or []),
        selection=selection,
        resources={"warehouse": world.resource()},
        instance=world.instance,
        raise_on_error=raise_on_error,
        tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end},
    )


def legacy_world(world: World, rows=LEGACY_ROWS) -> World:
    world.write("legacy_role_memory", rows)
    world.materialize(LANDING)
    return world


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    failure = [e for e in result.all_events if e.is_step_failure][0]
    data = failure.step_failure_data
    return str(data.error.message if data.error else "") + str(data.user_failure_data)


def check_evaluations(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


@pytest.fixture(scope="module")
def instance():
    """An in-memory instance: a real Dagster instance, ten times faster than the sqlite one here."""
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture(scope="module")
def migrated(tmp_path_factory, instance) -> tuple[World, dg.ExecuteInProcessResult]:
    """One world, migrated once over 2024-01-01...2024-04-01 in a single run."""
    world = legacy_world(World(tmp_path_factory.mktemp("migration"), instance))
    return world, materialize_range(world, "2024-01-01", "2024-04-01")


def test_a_partition_range_runs_in_one_run_and_materializes_every_partition(migrated):
    world, result = migrated
    assert result.success
    materialized = {
        (m.asset_key.to_user_string(), m.partition)
        for m in (e.event_specific_data.materialization for e in result.get_asset_materialization_events())
    }
    months = ["2024-01-01", "2024-02-01", "2024-03-01", "2024-04-01"]
    assert materialized == {(a, p) for a in MIGRATION for p in months}
    # a single run: one step per asset, each over the whole range
    assert sorted(e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS") == sorted(
        MIGRATION
    )
    for month in months:
        assert (world.root / "backups" / "legacy_role_memory" / f"{month}.parquet").exists()


def test_each_partition_of_a_range_run_records_only_its_own_rows_in_its_metadata(migrated):
    _, result = migrated
    metadata = {
        (m.asset_key.to_user_string(), m.partition): {k: v.value for k, v in m.metadata.items()}
        for m in (e.event_specific_data.materialization for e in result.get_asset_materialization_events())
    }
    for month, rows_in, migrated_n, quarantined, rejected, _, conserved in EXPECTED_REPORT:
        for asset in ("migrated_role_cases", "migration_conservation_report"):
            meta = metadata[(asset, month)]
            assert meta["partition"] == month
            assert (meta["rows_in"], meta["migrated"], meta["quarantined"], meta["rejected"]) == (
                rows_in,
                migrated_n,
                quarantined,
                rejected,
            ), (asset, month)
        assert metadata[("migrated_role_cases", month)]["dagster/row_count"] == migrated_n + quarantined
        assert metadata[("migration_conservation_report", month)]["dagster/row_count"] == 1
        assert metadata[("migration_conservation_report", month)]["conserved"] is conserved
        backup = metadata[("legacy_role_memory_backup", month)]
        assert backup["rows_backed_up"] == rows_in and backup["dagster/row_count"] == 1
        assert backup["backup_file"].endswith(f"{month}.parquet")
    # what is about the whole run says so in its name
    assert metadata[("migrated_role_cases", "2024-02-01")]["run_partitions"] == (
        "2024-01-01...2024-04-01 (4 partitions)"
    )


def test_every_partition_is_conserved_including_malformed_rows_and_empty_months(migrated):
    world, result = migrated
    report = world.rows(
        "SELECT partition_key, rows_in, migrated, quarantined, rejected, checksum_ok, conserved "
        "FROM migration_conservation_report ORDER BY partition_key"
    )
    assert report == EXPECTED_REPORT
    checks = check_evaluations(result)
    assert checks["migration_partitions_conserved"] is True
    assert checks["migrated_role_cases_invariants"] is True
    assert checks["backup_holds_every_raw_row_of_its_month"] is True
    # rows in the backups = rows in raw = rows accounted for
    total = world.rows(
        "SELECT (SELECT count(*) FROM raw.legacy_role_memory),"
        " (SELECT sum(row_count) FROM migration_backups),"
        " (SELECT count(*) FROM migrated_role_cases) + (SELECT count(*) FROM migration_rejects)"
    )
    assert total == [(len(LEGACY_ROWS), len(LEGACY_ROWS), len(LEGACY_ROWS))]


def test_malformed_rows_are_rejected_with_every_reason_and_stay_visible(migrated):
    world, _ = migrated
    rejects = world.rows("SELECT legacy_id, partition_key, reason FROM migration_rejects ORDER BY legacy_id")
    assert rejects == [
        ("L04", "2024-01-01", "missing_content"),
        ("L05", "2024-01-01", "missing_content; missing_provenance"),
        ("L06", "2024-01-01", "missing_role"),
        ("L08", "2024-02-01", "missing_provenance"),
    ]
    # the original values are kept for the operator
    assert world.rows("SELECT content, legacy_score FROM migration_rejects WHERE legacy_id = 'L06'") == [
        ("who wrote this?", 0.5)
    ]


def test_unknown_roles_go_to_quarantine_and_are_never_mapped_to_another_role(migrated):
    world, _ = migrated
    quarantined = world.rows(
        "SELECT legacy_id, role_id, skill_id, reason FROM migrated_role_cases "
        "WHERE status = 'quarantined' ORDER BY legacy_id"
    )
    # 'Valuation' is not 'valuation': no trimming, no case folding, no generic fallback
    assert quarantined == [
        ("L02", "astrologer", None, "unknown_role"),
        ("L03", "Valuation", None, "unknown_role"),
    ]
    migrated_rows = world.rows(
        "SELECT legacy_id, role_id, skill_id FROM migrated_role_cases "
        "WHERE status = 'migrated' ORDER BY legacy_id"
    )
    assert migrated_rows == [
        ("L01", "valuation", "equity_research"),
        ("L07", "trend_follower", "crypto_trading"),
        ("L09", "macro_rates", "fx_macro"),
    ]


def test_known_roles_keep_text_and_provenance_byte_for_byte(migrated):
    world, _ = migrated
    (content, provenance, symbol, decision_id, created_at) = world.rows(
        "SELECT content, provenance, symbol, decision_id, created_at "
        "FROM migrated_role_cases WHERE legacy_id = 'L01'"
    )[0]
    assert content.encode("utf-8") == VERBATIM_TEXT.encode("utf-8")
    assert provenance.encode("utf-8") == VERBATIM_PROVENANCE.encode("utf-8")
    assert (symbol, decision_id, created_at) == ("GOOG", "d-old-1", ts("2024-01-05 10:00"))
    # the backup file holds the same bytes too
    backup = pl.read_parquet(world.root / "backups" / "legacy_role_memory" / "2024-01-01.parquet")
    row = backup.filter(pl.col("legacy_id") == "L01").row(0, named=True)
    assert row["content"].encode("utf-8") == VERBATIM_TEXT.encode("utf-8")


def test_migrated_cases_are_never_scoring_eligible_and_keep_the_legacy_score_for_audit(migrated):
    world, _ = migrated
    rows = world.rows(
        "SELECT legacy_id, scoring_eligible, legacy_score FROM migrated_role_cases ORDER BY legacy_id"
    )
    assert {eligible for _, eligible, _ in rows} == {False}
    assert [(lid, score) for lid, _, score in rows] == [
        ("L01", 0.92),
        ("L02", 0.1),
        ("L03", None),
        ("L07", 0.7),
        ("L09", None),
    ]


def test_manifest_records_path_row_count_and_sha256_of_each_backup_file(migrated):
    world, _ = migrated
    manifest = world.rows(
        "SELECT partition_key, path, row_count, sha256, created_at FROM migration_backups ORDER BY 1"
    )
    assert [(k, n) for k, _, n, _, _ in manifest] == [
        ("2024-01-01", 6),
        ("2024-02-01", 2),
        ("2024-03-01", 0),
        ("2024-04-01", 1),
    ]
    for key, path, _, sha, created_at in manifest:
        assert Path(path) == (world.root / "backups" / "legacy_role_memory" / f"{key}.parquet").resolve()
        assert sha256_hex(Path(path).read_bytes()) == sha
        assert created_at == ts("2024-07-01 00:00")  # the run's as_of, not the wall clock


def test_migration_tables_feed_no_other_asset():
    """Legacy scores never reach statistics or methodologies: nothing outside the group reads them."""
    graph = DEFS.resolve_asset_graph()
    migration = {dg.AssetKey(k) for k in MIGRATION}
    for key in graph.get_all_asset_keys():
        if key in migration:
            continue
        assert not (graph.get(key).parent_keys & migration), f"{key.to_user_string()} reads a migration table"
    job = DEFS.resolve_job_def("legacy_migration_job")
    assert job.partitions_def is not None
    assert not (set(DEFS.resolve_job_def("trading_memory_job").asset_layer.selected_asset_keys) & migration)


def test_rerunning_partitions_replaces_their_rows_and_changes_nothing(world: World):
    legacy_world(world)
    materialize_range(world, "2024-01-01", "2024-04-01")
    tables = [
        "migration_backups",
        "migrated_role_cases",
        "migration_rejects",
        "migration_conservation_report",
    ]
    before = {t: world.query(f"SELECT * FROM {t} ORDER BY ALL") for t in tables}
    files_before = {p.name: p.read_bytes() for p in (world.root / "backups" / "legacy_role_memory").iterdir()}

    world.materialize(MIGRATION, partition_key="2024-01-01")  # one partition again
    materialize_range(world, "2024-01-01", "2024-04-01")  # and the whole range again, later
    for table in tables:
        after = world.query(f"SELECT * FROM {table} ORDER BY ALL")
        assert after.equals(before[table]), f"{table} changed on re-run"
    files_after = {p.name: p.read_bytes() for p in (world.root / "backups" / "legacy_role_memory").iterdir()}
    assert files_after == files_before


def test_rerun_after_legacy_rows_change_replaces_the_partition_without_duplicates(world: World):
    legacy_world(world)
    world.materialize(MIGRATION, partition_key="2024-02-01")
    # the legacy export is corrected: L08 gets provenance, a new row appears
    rows = [r for r in LEGACY_ROWS if r["legacy_id"] != "L08"] + [
        {**LEGACY_ROWS[7], "provenance": "legacy:row/8"},
        {
            "legacy_id": "L10",
            "role": "trend_follower",
            "content": "added",
            "created_at": ts("2024-02-20"),
            "provenance": "legacy:row/10",
        },
    ]
    legacy_world(world, rows)
    world.materialize(MIGRATION, partition_key="2024-02-01")
    assert world.rows("SELECT legacy_id FROM migrated_role_cases ORDER BY 1") == [
        ("L07",),
        ("L08",),
        ("L10",),
    ]
    assert world.rows("SELECT count(*) FROM migration_rejects") == [(0,)]
    assert world.rows("SELECT rows_in, migrated, rejected, conserved FROM migration_conservation_report") == [
        (3, 3, 0, True)
    ]
    assert world.rows("SELECT count(*), max(row_count) FROM migration_backups") == [(1, 3)]


def test_tampered_backup_stops_the_migration_naming_file_and_both_checksums(world: World):
    legacy_world(world)
    world.materialize(["legacy_role_memory_backup"], partition_key="2024-01-01")
    path = world.root / "backups" / "legacy_role_memory" / "2024-01-01.parquet"
    expected = sha256_hex(path.read_bytes())
    # a well-formed but edited backup: a score rewritten
    edited = pl.read_parquet(path).with_columns(pl.lit(1.0).alias("score"))
    edited.write_parquet(path)
    actual = sha256_hex(path.read_bytes())

    result = world.materialize(["migrated_role_cases"], partition_key="2024-01-01", raise_on_error=False)
    assert not result.success
    message = failure_message(result)
    assert str(path.resolve()) in message and expected in message and actual in message
    with pytest.raises(Exception, match="does not exist"):
        world.rows("SELECT count(*) FROM migrated_role_cases")  # nothing was migrated


def test_backup_tampered_after_migration_fails_the_blocking_conservation_check(world: World):
    legacy_world(world)
    world.materialize(MIGRATION, partition_key="2024-04-01")
    path = world.root / "backups" / "legacy_role_memory" / "2024-04-01.parquet"
    path.write_bytes(path.read_bytes() + b"\0")

    result = world.materialize(
        ["migration_conservation_report"], partition_key="2024-04-01", raise_on_error=False
    )
    assert not result.success
    assert check_evaluations(result)["migration_partitions_conserved"] is False
    (checksum_ok, conserved, detail) = world.rows(
        "SELECT checksum_ok, conserved, detail FROM migration_conservation_report"
    )[0]
    assert (checksum_ok, conserved) == (False, False)
    assert "changed: expected sha256" in detail


def test_migration_older_than_its_backup_is_not_conserved(world: World):
    legacy_world(world)
    world.materialize(MIGRATION, partition_key="2024-04-01")
    legacy_world(
        world,
        LEGACY_ROWS
        + [
            {
                "legacy_id": "L11",
                "role": "macro_rates",
                "content": "late row",
                "created_at": ts("2024-04-30"),
                "provenance": "legacy:row/11",
            }
        ],
    )
    world.materialize(["legacy_role_memory_backup"], partition_key="2024-04-01")  # new backup, not migrated
    result = world.materialize(
        ["migration_conservation_report"], partition_key="2024-04-01", raise_on_error=False
    )
    assert not result.success
    row = world.query("SELECT * FROM migration_conservation_report").row(0, named=True)
    assert (row["rows_in"], row["migrated"], row["checksum_ok"], row["conserved"]) == (2, 1, False, False)
    assert "re-run migrated_role_cases" in row["detail"]


def test_an_empty_month_succeeds_with_a_zero_report_and_an_empty_backup(world: World):
    legacy_world(world)
    result = world.materialize(MIGRATION, partition_key="2020-01-01")
    assert result.success
    assert world.rows("SELECT * EXCLUDE (backup_sha256, detail) FROM migration_conservation_report") == [
        ("2020-01-01", 0, 0, 0, 0, True, True)
    ]
    path = world.root / "backups" / "legacy_role_memory" / "2020-01-01.parquet"
    assert pl.read_parquet(path).height == 0
    assert world.rows("SELECT row_count, sha256 FROM migration_backups") == [
        (0, sha256_hex(path.read_bytes()))
    ]


def test_migration_before_landing_fails_with_a_clear_message(world: World):
    result = world.materialize(
        ["legacy_role_memory_backup"], partition_key="2024-01-01", raise_on_error=False
    )
    assert not result.success
    assert "materialize the landing asset raw/legacy_role_memory first" in failure_message(result)


def test_migrating_without_a_backup_names_the_missing_partition(world: World):
    legacy_world(world)
    result = world.materialize(["migrated_role_cases"], partition_key="2024-02-01", raise_on_error=False)
    assert not result.success
    assert "2024-02-01" in failure_message(result) and "legacy_role_memory_backup" in failure_message(result)


def test_legacy_rows_outside_every_partition_are_reported_not_lost(world: World):
    legacy_world(
        world,
        LEGACY_ROWS
        + [
            {
                "legacy_id": "L00",
                "role": "valuation",
                "content": "too old",
                "created_at": ts("2019-06-01"),
                "provenance": "legacy:row/0",
            }
        ],
    )
    result = world.materialize(["legacy_role_memory_backup"], partition_key="2024-04-01")
    assert result.success  # a warning, not a failure of this month
    evaluation = [
        e for e in result.get_asset_check_evaluations() if e.check_name == "every_legacy_row_has_a_partition"
    ]
    assert evaluation[0].passed is False
    assert evaluation[0].metadata["rows_outside_partitions"].value == 1
