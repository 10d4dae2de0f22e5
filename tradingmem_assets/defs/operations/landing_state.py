"""The landing folder's fingerprint: which landing files exist, their sizes and content hashes.

The landing sensor compares the fingerprint of one tick with the one kept in its cursor to decide
whether the landing data changed. The state key hashes names, sizes and content hashes only, so
touching a file (new mtime, same bytes) is not a new state, and the same bytes always give the
same key. Hashing is streamed, and a file whose (name, size, mtime_ns) did not change since the
previous fingerprint keeps its previous hash instead of being read again. This module reads files
only: no DuckDB, no Dagster.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

LANDING_SUFFIXES: tuple[str, ...] = (".parquet", ".csv")
CURSOR_VERSION = 1
_CHUNK = 1 << 20


@dataclass(frozen=True)
class LandingEntry:
    """One landing file: its name (``<table>.parquet|csv``), size, mtime and content hash."""

    name: str
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class LandingDiff:
    """File names added, changed (other bytes) and removed between two landing states."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def launches(self) -> bool:
        """A run is due when a file arrived or its content changed (a removal alone is not new data)."""
        return bool(self.added or self.changed)

    def describe(self) -> str:
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (("added", self.added), ("changed", self.changed), ("removed", self.removed))
            if names
        ]
        return "; ".join(parts) or "no file changed"


@dataclass(frozen=True)
class LandingState:
    """The fingerprint of one landing folder at one instant; ``seen_at`` is when this state first showed."""

    folder: str
    entries: tuple[LandingEntry, ...]
    seen_at: str | None = None

    @property
    def key(self) -> str:
        """A stable id of the landing content: sha256 over the sorted (name, size, sha256) triples."""
        return state_key(self.entries)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries)

    def by_name(self) -> dict[str, LandingEntry]:
        return {e.name: e for e in self.entries}

    def to_cursor(self) -> str:
        """The sensor cursor: JSON of the entries (names, sizes, mtimes, hashes), the folder and key."""
        return json.dumps(
            {
                "v": CURSOR_VERSION,
                "folder": self.folder,
                "key": self.key,
                "seen_at": self.seen_at,
                "files": [asdict(e) for e in self.entries],
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_cursor(cls, text: str | None) -> LandingState | None:
        """The state a cursor holds; None for no cursor or one this version cannot read."""
        if not text:
            return None
        try:
            data = json.loads(text)
            if data.get("v") != CURSOR_VERSION:
                return None
            entries = tuple(
                LandingEntry(
                    name=str(f["name"]),
                    size=int(f["size"]),
                    mtime_ns=int(f["mtime_ns"]),
                    sha256=str(f["sha256"]),
                )
                for f in data["files"]
            )
            return cls(folder=str(data["folder"]), entries=_sorted(entries), seen_at=data.get("seen_at"))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def _sorted(entries: Iterable[LandingEntry]) -> tuple[LandingEntry, ...]:
    return tuple(sorted(entries, key=lambda e: e.name))


def state_key(entries: Iterable[LandingEntry]) -> str:
    digest = hashlib.sha256()
    for entry in _sorted(entries):
        digest.update(f"{entry.name}\t{entry.size}\t{entry.sha256}\n".encode())
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    """The file's sha256, read in 1 MiB chunks so a large landing file never sits in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def landing_files(folder: Path, tables: Collection[str] | None = None) -> list[Path]:
    """The ``<table>.parquet`` / ``<table>.csv`` files of the folder (only the given tables, if any)."""
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        if path.name.startswith(".") or path.suffix not in LANDING_SUFFIXES or not path.is_file():
            continue
        if tables is not None and path.stem not in tables:
            continue
        found.append(path)
    return sorted(found, key=lambda p: p.name)


def fingerprint(
    folder: str | os.PathLike[str],
    *,
    previous: LandingState | None = None,
    tables: Collection[str] | None = None,
    seen_at: str | None = None,
) -> LandingState:
    """Fingerprint the folder, reusing ``previous`` hashes of files whose name, size and mtime held."""
    root = Path(folder)
    reusable = previous.by_name() if previous is not None and previous.folder == str(root) else {}
    entries = []
    for path in landing_files(root, tables):
        try:
            stat = path.stat()
            known = reusable.get(path.name)
            if known is not None and known.size == stat.st_size and known.mtime_ns == stat.st_mtime_ns:
                digest = known.sha256
            else:
                # Keep the stat taken *before* reading: a file written while it was hashed then
                # shows a new (size, mtime) next time and is hashed again, never trusted stale.
                digest = sha256_file(path)
        except FileNotFoundError:  # removed between listing and reading
            continue
        entries.append(LandingEntry(path.name, stat.st_size, stat.st_mtime_ns, digest))
    return LandingState(folder=str(root), entries=_sorted(entries), seen_at=seen_at)


def diff(before: LandingState | None, after: LandingState) -> LandingDiff:
    """What changed from ``before`` (None: nothing seen yet, so every file is added) to ``after``."""
    old = before.by_name() if before is not None else {}
    new = after.by_name()
    return LandingDiff(
        added=tuple(sorted(set(new) - set(old))),
        changed=tuple(
            sorted(
                n for n in set(new) & set(old) if (new[n].size, new[n].sha256) != (old[n].size, old[n].sha256)
            )
        ),
        removed=tuple(sorted(set(old) - set(new))),
    )
