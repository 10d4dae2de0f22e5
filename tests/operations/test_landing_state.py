"""The landing fingerprint: names, sizes and streamed content hashes, a stable state key and a diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tradingmem_assets.defs.operations import landing_state
from tradingmem_assets.defs.operations.landing_state import LandingState, diff, fingerprint, state_key


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def test_fingerprint_lists_landing_files_with_size_and_sha256_and_ignores_the_rest(tmp_path):
    write(tmp_path, "trading_decisions.parquet", b"PAR1 decisions")
    write(tmp_path, "customers.csv", b"customer_id\nc_1\n")
    write(tmp_path, "notes.txt", b"not landing")
    write(tmp_path, ".partial.csv", b"hidden upload")
    (tmp_path / "sub.csv").mkdir()
    state = fingerprint(tmp_path)
    assert state.names == ("customers.csv", "trading_decisions.parquet")
    customers = state.by_name()["customers.csv"]
    assert customers.size == len(b"customer_id\nc_1\n")
    assert customers.sha256 == landing_state.sha256_file(tmp_path / "customers.csv")
    assert len(customers.sha256) == 64


def test_only_known_tables_count_when_a_table_list_is_given(tmp_path):
    write(tmp_path, "customers.csv", b"a")
    write(tmp_path, "scratch.csv", b"b")
    assert fingerprint(tmp_path, tables={"customers"}).names == ("customers.csv",)


def test_state_key_depends_on_content_not_on_mtime_or_listing_order(tmp_path):
    a = write(tmp_path, "customers.csv", b"one")
    write(tmp_path, "kb_documents.csv", b"two")
    first = fingerprint(tmp_path)
    os.utime(a, ns=(1_000_000_000, 1_000_000_000))
    touched = fingerprint(tmp_path)
    assert touched.key == first.key
    assert state_key(reversed(first.entries)) == first.key
    write(tmp_path, "customers.csv", b"ONE")  # same size, other bytes
    assert fingerprint(tmp_path).key != first.key


def test_missing_or_empty_folder_has_no_entries(tmp_path):
    assert fingerprint(tmp_path / "absent").entries == ()
    assert fingerprint(tmp_path).entries == ()


def test_diff_names_added_changed_and_removed_files(tmp_path):
    write(tmp_path, "customers.csv", b"one")
    write(tmp_path, "kb_documents.csv", b"two")
    before = fingerprint(tmp_path)
    write(tmp_path, "customers.csv", b"uno")
    (tmp_path / "kb_documents.csv").unlink()
    write(tmp_path, "price_bars.parquet", b"bars")
    change = diff(before, fingerprint(tmp_path))
    assert change.added == ("price_bars.parquet",)
    assert change.changed == ("customers.csv",)
    assert change.removed == ("kb_documents.csv",)
    assert change.launches
    assert "added price_bars.parquet" in change.describe()
    assert diff(None, before).added == ("customers.csv", "kb_documents.csv")


def test_removal_alone_does_not_launch(tmp_path):
    write(tmp_path, "customers.csv", b"one")
    write(tmp_path, "kb_documents.csv", b"two")
    before = fingerprint(tmp_path)
    (tmp_path / "kb_documents.csv").unlink()
    change = diff(before, fingerprint(tmp_path))
    assert change.removed == ("kb_documents.csv",) and not change.launches


def test_unchanged_name_size_and_mtime_reuse_the_previous_hash(tmp_path, monkeypatch):
    write(tmp_path, "customers.csv", b"one")
    write(tmp_path, "kb_documents.csv", b"two")
    first = fingerprint(tmp_path)
    hashed: list[str] = []
    real = landing_state.sha256_file

    def counting(path: Path) -> str:
        hashed.append(path.name)
        return real(path)

    monkeypatch.setattr(landing_state, "sha256_file", counting)
    assert fingerprint(tmp_path, previous=first).key == first.key
    assert hashed == []
    path = tmp_path / "customers.csv"
    write(tmp_path, "customers.csv", b"uno")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # mtime surely moved
    assert fingerprint(tmp_path, previous=first).key != first.key
    assert hashed == ["customers.csv"]
    # a previous fingerprint of another folder is never trusted
    other = tmp_path / "other"
    other.mkdir()
    write(other, "kb_documents.csv", b"two")
    hashed.clear()
    fingerprint(other, previous=first)
    assert hashed == ["kb_documents.csv"]


def test_cursor_round_trips_and_unreadable_cursors_are_ignored(tmp_path):
    write(tmp_path, "customers.csv", b"one")
    state = fingerprint(tmp_path, seen_at="2024-07-01T00:00:00Z")
    back = LandingState.from_cursor(state.to_cursor())
    assert back == state and back.key == state.key
    for bad in (None, "", "17", "not json", '{"v": 99, "files": []}', '{"v": 1}'):
        assert LandingState.from_cursor(bad) is None


@pytest.mark.parametrize("size", [0, 3 * (1 << 20) + 5])
def test_streamed_hash_equals_whole_file_hash(tmp_path, size):
    import hashlib

    data = os.urandom(size)
    path = write(tmp_path, "price_bars.parquet", data)
    assert landing_state.sha256_file(path) == hashlib.sha256(data).hexdigest()


def test_the_fingerprint_module_imports_neither_dagster_nor_duckdb():
    source = Path(landing_state.__file__).read_text(encoding="utf-8")
    assert "import dagster" not in source and "import duckdb" not in source
