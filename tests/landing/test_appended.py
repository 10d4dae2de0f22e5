"""A landing file that grew at its end is read from its first new row, and leaves ``raw.<table>``
and its rejects exactly as ingesting the whole file would; anything else is ingested whole."""

from pathlib import Path

import duckdb
import polars as pl

from tests.world import World, ts

TABLE = "trading_decisions"


def decision(decision_id: str, direction: str = "long", hour: int = 10) -> dict:
    return {
        "decision_id": decision_id,
        "role_id": "valuation",
        "symbol": "GOOG",
        "direction": direction,
        "account_id": "a1",
        "market": "spot",
        "evidence": "[]",
        "decided_at": ts(f"2024-01-02 {hour:02d}:00"),
    }


# the first day: an accepted, a refused, an accepted row, then a later occurrence of a kept key
FIRST = [decision("d1"), decision("d2", "sideways"), decision("d3"), decision("d1", "short")]
# the next day's rows after them: a new row; a kept accepted key (duplicate); the key of a refused
# row, valid now (accepted: the first valid occurrence); a key twice (the second a duplicate); a
# refused row; the refused key again (a duplicate of the new d2)
NEXT = [
    decision("d4", hour=11),
    decision("d3", "short", 11),
    decision("d2", hour=12),
    decision("d5", hour=12),
    decision("d5", "short", 13),
    decision("d6", "up", 13),
    decision("d2", "short", 14),
]


def stored(db: Path) -> dict[str, list]:
    """raw.trading_decisions in its stored order, and its rejects (with the file's name)."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {
            "raw": con.execute(f"SELECT * FROM raw.{TABLE}").fetchall(),
            "rejects": con.execute(
                "SELECT table_name, parse_filename(source_file), row_number, row_key, reason, raw_row "
                "FROM raw_rejects WHERE table_name = ? ORDER BY row_number",
                [TABLE],
            ).fetchall(),
        }


def ingested(world: World, rows: list[dict], fmt: str = "parquet") -> tuple[str, dict]:
    """Write the table's landing file, materialize it; how it was read and its metadata."""
    world.write(TABLE, rows, fmt)
    result = world.materialize([f"raw/{TABLE}"])
    metadata = {
        k: v.value for k, v in result.asset_materializations_for_node(f"raw__{TABLE}")[0].metadata.items()
    }
    return metadata["ingested"], metadata


def whole(tmp_path: Path, instance, rows: list[dict], fmt: str = "parquet") -> dict[str, list]:
    """What a fresh warehouse holds after ingesting the whole file."""
    fresh = World(tmp_path / "fresh", instance)
    how, _ = ingested(fresh, rows, fmt)
    assert how.startswith("whole: no earlier ingest"), how
    return stored(fresh.db)


def test_a_grown_file_is_read_from_its_first_new_row_and_equals_a_whole_ingest(world, instance, tmp_path):
    ingested(world, FIRST)
    how, metadata = ingested(world, FIRST + NEXT)
    assert how.startswith(f"appended: the file's first {len(FIRST)} rows"), how
    assert f"only the {len(NEXT)} rows after them were read" in how
    after = stored(world.db)
    assert after == whole(tmp_path, instance, FIRST + NEXT)
    accepted = [r[0] for r in after["raw"]]
    assert accepted == ["d1", "d3", "d4", "d2", "d5"]
    assert [(r[2], r[3], r[4]) for r in after["rejects"]] == [
        (2, "d2", "direction: isin(['long', 'short'])"),
        (4, "d1", "duplicate_key"),
        (6, "d3", "duplicate_key"),
        (9, "d5", "duplicate_key"),
        (10, "d6", "direction: isin(['long', 'short'])"),
        (11, "d2", "duplicate_key"),
    ]
    # the conservation check holds over the whole file
    assert (metadata["rows_read"], metadata["accepted"], metadata["rejected"]) == (11, 5, 6)


def test_a_grown_csv_with_a_ragged_line_equals_a_whole_ingest(world, instance, tmp_path):
    path = world.write(TABLE, FIRST + NEXT, "csv")
    header, *lines = path.read_text().splitlines(keepends=True)
    ragged = "d7,valuation,,GOOG,long,a1,spot,,,[],,2024-01-02T15:00:00Z,x,y\n"  # two fields too many
    first = header + "".join(lines[: len(FIRST)]) + ragged
    grown = first + "".join(lines[len(FIRST) :])
    path.write_text(first)
    world.materialize([f"raw/{TABLE}"])
    path.write_text(grown)
    result = world.materialize([f"raw/{TABLE}"])
    how = result.asset_materializations_for_node(f"raw__{TABLE}")[0].metadata["ingested"].value
    assert how.startswith(f"appended: the file's first {len(FIRST) + 1} rows"), how
    fresh = World(tmp_path / "fresh", instance)
    (fresh.landing / path.name).write_text(grown)
    fresh.materialize([f"raw/{TABLE}"])
    assert stored(world.db) == stored(fresh.db)
    assert [r[2:5] for r in stored(world.db)["rejects"] if r[4].startswith("ragged_line")] == [
        (len(FIRST) + 1, None, "ragged_line: 14 fields where the header has 12")
    ]


def test_a_file_whose_earlier_rows_changed_is_ingested_whole(world, instance, tmp_path):
    ingested(world, FIRST)
    edited = [decision("d1", "short"), *FIRST[1:]]  # a kept row changed in place
    how, _ = ingested(world, edited + NEXT)
    assert how == f"whole: the file's first {len(FIRST)} rows are not the rows its last ingest read"
    assert stored(world.db) == whole(tmp_path, instance, edited + NEXT)
    how, _ = ingested(world, FIRST[:2])
    assert how == f"whole: the file has fewer rows than the {len(edited + NEXT)} its last ingest read"


def test_a_hand_edited_raw_table_or_rejects_makes_the_next_ingest_whole(world, instance, tmp_path):
    ingested(world, FIRST)
    with duckdb.connect(str(world.db)) as con:
        con.execute(f"UPDATE raw.{TABLE} SET symbol = 'EDITED' WHERE decision_id = 'd3'")
    how, _ = ingested(world, FIRST + NEXT)
    assert how == f"whole: raw.{TABLE} or its rejects changed since the last ingest"
    assert stored(world.db) == whole(tmp_path, instance, FIRST + NEXT)
    with duckdb.connect(str(world.db)) as con:
        con.execute("DELETE FROM raw_rejects WHERE table_name = ? AND row_number = 2", [TABLE])
    how, _ = ingested(world, FIRST + NEXT + [decision("d8", hour=15)])
    assert how == f"whole: raw.{TABLE} or its rejects changed since the last ingest"
    assert stored(world.db)["rejects"][0][2] == 2  # written again


def test_a_file_in_another_format_is_ingested_whole(world):
    ingested(world, FIRST)
    how, _ = ingested(world, FIRST + NEXT, "csv")
    assert how == f"whole: the last ingest read another file ({TABLE}.parquet)"


def test_a_large_file_is_stored_in_file_order(world):
    """Many row groups, read in parallel: the accepted rows are stored in the file's order (no sort
    restores it; the scan and the filter keep it), with a duplicate and a refused row among them."""
    n = 200_000
    ids = [f"d{(i * 7919) % n:06d}" for i in range(n)]  # a permutation: file order is not key order
    rows = pl.DataFrame(
        {
            "decision_id": ids + [ids[5]],
            "symbol": "GOOG",
            "direction": ["long"] * 1000 + ["up"] + ["long"] * (n - 1000),
            "account_id": "a1",
            "market": "spot",
            "decided_at": ts("2024-01-02 10:00"),
        }
    )
    rows.write_parquet(world.landing / f"{TABLE}.parquet", row_group_size=5_000)
    world.materialize([f"raw/{TABLE}"])
    stored_ids = [r[0] for r in world.rows(f"SELECT decision_id FROM raw.{TABLE}")]
    assert stored_ids == [d for i, d in enumerate(ids) if i != 1000]
