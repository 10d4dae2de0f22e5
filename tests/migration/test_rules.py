"""Pure migration logic: deterministic backups, verification, classification, conservation."""

from datetime import UTC, datetime

import duckdb
import polars as pl
import pytest

from tradingmem_assets.defs.migration.backup import (
    LEGACY_ROLE_MEMORY_DTYPES,
    BackupIntegrityError,
    MigrationInputError,
    decode_backup,
    encode_backup,
    load_verified_backups,
    prepare_backups,
    sha256_hex,
    verify_backup,
)
from tradingmem_assets.defs.migration.classification import classify, partition_key_expr, partition_key_sql
from tradingmem_assets.defs.migration.conservation import conservation_report, inspect_backups
from tradingmem_assets.defs.migration.partitions import (
    LEGACY_MONTHLY_PARTITIONS,
    first_month,
    monthly_partitions,
)

ROLES = {"valuation": "equity_research", "trend_follower": "crypto_trading"}


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def legacy(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(
        [{c: r.get(c) for c in LEGACY_ROLE_MEMORY_DTYPES.names()} for r in rows],
        schema=LEGACY_ROLE_MEMORY_DTYPES,
        orient="row",
    )


def backed_up(frame: pl.DataFrame, key: str = "2024-01-01") -> pl.DataFrame:
    return frame.with_columns(pl.lit(key).alias("partition_key"), pl.lit("0" * 64).alias("backup_sha256"))


ROWS = legacy(
    {
        "legacy_id": "b",
        "role": "valuation",
        "content": "ü  \n",
        "score": 1.5,
        "created_at": t("2024-01-02"),
        "provenance": "p-b ",
    },
    {
        "legacy_id": "a",
        "role": "trend_follower",
        "content": "x",
        "score": None,
        "created_at": t("2024-01-31 23:59"),
        "provenance": "p-a",
    },
)


def test_same_rows_in_any_order_give_the_same_backup_bytes():
    one = encode_backup(ROWS)
    assert encode_backup(ROWS.reverse()) == one
    assert encode_backup(decode_backup(one)) == one
    assert encode_backup(ROWS.with_columns(pl.lit(None, dtype=pl.String).alias("symbol"))) == one
    assert encode_backup(ROWS.with_columns(pl.col("content") + "!")) != one


def test_backup_bytes_round_trip_every_value_exactly():
    back = decode_backup(encode_backup(ROWS))
    assert back.equals(ROWS.sort("legacy_id"))
    assert back.schema == LEGACY_ROLE_MEMORY_DTYPES


def test_empty_partition_gets_an_empty_but_valid_backup(tmp_path):
    rows = backed_up(ROWS).drop("backup_sha256")
    backups = prepare_backups(rows, ["2024-01-01", "2024-02-01"], tmp_path)
    assert [(b.partition_key, b.row_count) for b in backups] == [("2024-01-01", 2), ("2024-02-01", 0)]
    assert decode_backup(backups[1].data).height == 0
    assert backups[1].path == (tmp_path / "legacy_role_memory" / "2024-02-01.parquet").resolve()


def test_verification_names_file_expected_and_actual_checksums(tmp_path):
    path = tmp_path / "2024-01-01.parquet"
    data = encode_backup(ROWS)
    path.write_bytes(data)
    assert verify_backup("2024-01-01", path, sha256_hex(data)) == data
    path.write_bytes(data[:-1] + b"X")
    with pytest.raises(BackupIntegrityError) as err:
        verify_backup("2024-01-01", path, sha256_hex(data))
    assert str(path) in str(err.value)
    assert sha256_hex(data) in str(err.value) and sha256_hex(path.read_bytes()) in str(err.value)
    assert err.value.problems[0]["actual_sha256"] == sha256_hex(path.read_bytes())
    path.unlink()
    with pytest.raises(BackupIntegrityError, match="is missing"):
        verify_backup("2024-01-01", path, sha256_hex(data))


def test_loading_backups_refuses_partitions_without_a_manifest_row():
    manifest = pl.DataFrame(schema={"partition_key": pl.String, "path": pl.String, "sha256": pl.String})
    with pytest.raises(MigrationInputError, match="2024-03-01"):
        load_verified_backups(manifest, ["2024-03-01"])


def test_classification_rejects_malformed_rows_with_all_reasons_and_quarantines_unknown_roles():
    rows = backed_up(
        legacy(
            {
                "legacy_id": "ok",
                "role": "valuation",
                "content": " text ",
                "created_at": t("2024-01-01"),
                "provenance": "p",
            },
            {
                "legacy_id": "unk",
                "role": "valuation ",
                "content": "c",
                "created_at": t("2024-01-01"),
                "provenance": "p",
            },
            {
                "legacy_id": "bad",
                "role": " ",
                "content": None,
                "created_at": t("2024-02-01"),
                "provenance": "\t",
            },
        )
    )
    cases, rejects = classify(rows, ROLES)
    assert cases.select(
        "legacy_id", "role_id", "skill_id", "status", "reason", "scoring_eligible"
    ).rows() == [
        ("ok", "valuation", "equity_research", "migrated", None, False),
        ("unk", "valuation ", None, "quarantined", "unknown_role", False),
    ]
    assert cases.get_column("content").to_list()[0] == " text "
    assert rejects.select("legacy_id", "reason").rows() == [
        ("bad", "missing_content; missing_provenance; missing_role; wrong_partition")
    ]
    assert cases.height + rejects.height == rows.height


def test_partition_keys_in_sql_and_polars_match_dagsters_monthly_keys():
    stamps = [t("2024-01-01 00:00"), t("2024-01-31 23:59:59.999999"), t("2024-02-29 12:00"), t("2020-01-01")]
    dagster_keys = [LEGACY_MONTHLY_PARTITIONS.get_partition_key_for_timestamp(s.timestamp()) for s in stamps]
    frame = pl.DataFrame({"created_at": stamps}, schema={"created_at": pl.Datetime("us", "UTC")})
    assert frame.select(partition_key_expr()).to_series().to_list() == dagster_keys
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("f", frame)
    assert [r[0] for r in con.execute(f"SELECT {partition_key_sql()} FROM f").fetchall()] == dagster_keys


def test_migration_start_is_truncated_to_its_month_and_a_bad_value_is_named():
    assert first_month("2020-01-15") == "2020-01-01"
    assert first_month("2021-03") == "2021-03-01"
    assert monthly_partitions("2023-05-20").get_first_partition_key() == "2023-05-01"
    with pytest.raises(ValueError, match="TRADINGMEM_MIGRATION_START='yesterday'"):
        first_month("yesterday")


def _inspected(tmp_path, rows: int = 2, tamper: bool = False) -> tuple[pl.DataFrame, str]:
    data = encode_backup(ROWS.head(rows))
    path = tmp_path / "k.parquet"
    path.write_bytes(data + (b"!" if tamper else b""))
    manifest = pl.DataFrame(
        {
            "partition_key": ["2024-01-01"],
            "path": [str(path)],
            "row_count": [rows],
            "sha256": [sha256_hex(data)],
        }
    )
    return inspect_backups(manifest, ["2024-01-01"]), sha256_hex(data)


def _counts(m: int, q: int, r: int, shas: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "partition_key": ["2024-01-01"],
            "migrated": [m],
            "quarantined": [q],
            "rejected": [r],
            "source_shas": [shas],
        }
    )


def test_conservation_requires_balance_and_an_intact_backup(tmp_path):
    backups, sha = _inspected(tmp_path)
    ok = conservation_report(backups, _counts(1, 0, 1, [sha])).row(0, named=True)
    assert (ok["rows_in"], ok["checksum_ok"], ok["conserved"], ok["detail"]) == (2, True, True, None)

    lost = conservation_report(backups, _counts(1, 0, 0, [sha])).row(0, named=True)
    assert (lost["checksum_ok"], lost["conserved"]) == (True, False)
    assert lost["detail"] == "rows_in 2 != migrated 1 + quarantined 0 + rejected 0"

    stale = conservation_report(backups, _counts(1, 0, 1, ["f" * 64])).row(0, named=True)
    assert (stale["checksum_ok"], stale["conserved"]) == (False, False)

    tampered, _ = _inspected(tmp_path, tamper=True)
    bad = conservation_report(tampered, _counts(1, 0, 1, [sha])).row(0, named=True)
    assert (bad["checksum_ok"], bad["conserved"]) == (False, False)
    assert "expected sha256" in bad["detail"]


def test_a_partition_without_any_backup_is_not_conserved():
    backups = inspect_backups(pl.DataFrame(schema={"partition_key": pl.String}), ["2024-01-01"])
    row = conservation_report(backups, _counts(0, 0, 0, [])).row(0, named=True)
    assert (row["rows_in"], row["checksum_ok"], row["conserved"]) == (0, False, False)
    assert "no backup" in row["detail"]


def test_partitions_end_at_the_newest_legacy_month_not_the_wall_clock(tmp_path):
    import polars as pl

    from tradingmem_assets.defs.migration.partitions import newest_legacy_month

    pl.DataFrame(
        {"legacy_id": ["a", "b"], "created_at": ["2021-03-04T10:00:00Z", "2021-11-30T23:00:00Z"]}
    ).write_csv(tmp_path / "legacy_role_memory.csv")
    last = newest_legacy_month(tmp_path)
    assert last == "2021-11-01"
    keys = monthly_partitions("2020-01-01", last).get_partition_keys()
    assert keys[0] == "2020-01-01" and keys[-1] == "2021-11-01" and len(keys) == 23
    assert newest_legacy_month(tmp_path / "nothing") is None


def test_a_malformed_legacy_timestamp_does_not_extend_the_partitions(tmp_path):
    import polars as pl

    from tradingmem_assets.defs.migration.partitions import newest_legacy_month

    pl.DataFrame({"created_at": ["2021-03-04T10:00:00Z", "2021-13-45T25:61:00Z", "not a time"]}).write_csv(
        tmp_path / "legacy_role_memory.csv"
    )
    assert newest_legacy_month(tmp_path) == "2021-03-01"
