"""Process-fixed settings, read once from the environment when the code location loads.

Run-scoped values (warehouse path, landing folder, ``as_of``) live on the
``TradingMemResource`` instead, so tests and runs can point them elsewhere; the values here
(modes, thresholds) are deliberately *not* resources, because run config could override a
resource field and SPEC section 7 says a mode is fixed for the life of the process.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

log = logging.getLogger("tradingmem.settings")

PACKAGE_DIR = Path(__file__).resolve().parent

DEFAULT_SCHEDULE_CRON = "0 2 * * *"
DEFAULT_CHECKS_SCHEDULE_CRON = "30 2 * * *"

RoleMemoryMode = Literal["off", "shadow", "active"]
ROLE_MEMORY_MODES: tuple[RoleMemoryMode, ...] = ("off", "shadow", "active")


def parse_as_of(text: str) -> datetime:
    """Parse an ISO-8601 instant; naive values are taken as UTC. Raises ValueError with the text."""
    try:
        ts = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"TRADINGMEM_AS_OF={text!r} is not an ISO-8601 timestamp") from exc
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    log.warning("%s=%r is not a boolean; using %s", name, raw, default)
    return default


def _number(env: Mapping[str, str], name: str, default: float, cast: type = float):
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return cast(default)
    try:
        return cast(raw)
    except ValueError:
        log.warning("%s=%r is not a number; using %s", name, raw, default)
        return cast(default)


@dataclass(frozen=True)
class Settings:
    """Values fixed for the life of the process (SPEC sections 7, 8, 9, 10, 18)."""

    role_memory_mode: RoleMemoryMode
    roles_file: Path
    tools_file: Path
    learning_enabled: bool
    learning_min_calls: int
    learning_score_threshold: float
    learning_top_k: int
    methodology_injection_threshold: float
    methodology_min_uses: int
    reflection_windows_days: tuple[int, ...]
    audit_enabled: bool
    audit_cron_enabled: bool
    audit_min_idle_s: float
    audit_max_deferrals: int
    audit_interval_s: float  # how often the busy-aware audit trigger ticks (default hourly)
    memory_stale_days: int
    migration_start: str
    llm_base_url: str | None
    llm_model: str
    llm_api_key: str | None
    automation_enabled: bool = False  # TRADINGMEM_AUTOMATION=on starts the run-launching schedules/sensors
    schedule_cron: str = DEFAULT_SCHEDULE_CRON
    checks_schedule_cron: str = DEFAULT_CHECKS_SCHEDULE_CRON
    freshness_hours: float = 26.0  # landing feeds and the learning heartbeat: stale after this long


def _cron(env: Mapping[str, str], name: str, default: str) -> str:
    """A five-field cron string; anything else warns and falls back (Dagster validates the fields)."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = " ".join(raw.split())
    if len(value.split(" ")) != 5:
        log.warning("%s=%r is not a five-field cron string; using %r", name, raw, default)
        return default
    return value


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build settings from an environment mapping, warning (never failing) on illegal values."""
    env = os.environ if env is None else env
    mode = env.get("ROLE_MEMORY_MODE", "shadow").strip().lower()
    if mode not in ROLE_MEMORY_MODES:
        log.warning(
            "ROLE_MEMORY_MODE=%r is not one of off/shadow/active; falling back to 'shadow'",
            env.get("ROLE_MEMORY_MODE"),
        )
        mode = "shadow"
    windows_raw = env.get("METHODOLOGY_REFLECTION_WINDOWS", "1,7,30")
    try:
        windows = tuple(sorted({int(w) for w in windows_raw.split(",") if w.strip()}))
    except ValueError:
        log.warning("METHODOLOGY_REFLECTION_WINDOWS=%r is not a list of days; using 1,7,30", windows_raw)
        windows = (1, 7, 30)
    return Settings(
        role_memory_mode=mode,  # type: ignore[arg-type]
        roles_file=Path(env.get("TRADINGMEM_ROLES_FILE") or PACKAGE_DIR / "roles.yaml"),
        tools_file=PACKAGE_DIR / "tools.yaml",
        learning_enabled=_bool(env, "LEARNING_ENABLED", True),
        learning_min_calls=_number(env, "LEARNING_MIN_CALLS", 3, int),
        learning_score_threshold=_number(env, "LEARNING_SCORE_THRESHOLD", 7.0),
        learning_top_k=_number(env, "LEARNING_TOP_K", 3, int),
        methodology_injection_threshold=_number(env, "METHODOLOGY_INJECTION_THRESHOLD", 0.55),
        methodology_min_uses=_number(env, "METHODOLOGY_MIN_USES", 10, int),
        reflection_windows_days=windows or (1, 7, 30),
        audit_enabled=_bool(env, "METHODOLOGY_AUDIT_ENABLED", True),
        audit_cron_enabled=_bool(env, "METHODOLOGY_AUDIT_CRON_ENABLED", False),
        audit_min_idle_s=_number(env, "METHODOLOGY_AUDIT_MIN_IDLE_S", 600.0),
        audit_max_deferrals=_number(env, "METHODOLOGY_AUDIT_MAX_DEFERRALS", 6, int),
        audit_interval_s=_number(env, "METHODOLOGY_AUDIT_INTERVAL_S", 3600.0),
        memory_stale_days=_number(env, "MEMORY_STALE_DAYS", 365, int),
        migration_start=env.get("TRADINGMEM_MIGRATION_START", "2020-01-01"),
        llm_base_url=env.get("TRADINGMEM_LLM_BASE_URL") or None,
        llm_model=env.get("TRADINGMEM_LLM_MODEL", "gpt-4o-mini"),
        llm_api_key=env.get("TRADINGMEM_LLM_API_KEY") or None,
        automation_enabled=_bool(env, "TRADINGMEM_AUTOMATION", False),
        schedule_cron=_cron(env, "TRADINGMEM_SCHEDULE_CRON", DEFAULT_SCHEDULE_CRON),
        checks_schedule_cron=_cron(env, "TRADINGMEM_CHECKS_SCHEDULE_CRON", DEFAULT_CHECKS_SCHEDULE_CRON),
        freshness_hours=_number(env, "TRADINGMEM_FRESHNESS_HOURS", 26.0),
    )


SETTINGS: Settings = load_settings()


def default_db_path(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("TRADINGMEM_DB") or str(Path("data") / "tradingmem.duckdb")


def default_landing_dir(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("TRADINGMEM_LANDING_DIR") or str(Path("data") / "landing")


def default_as_of(env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    raw = env.get("TRADINGMEM_AS_OF")
    return raw.strip() if raw and raw.strip() else None


def resolve_as_of(raw: str | None) -> datetime:
    """The run's time anchor: the given ISO instant, or the wall clock (UTC, whole seconds)."""
    if raw:
        return parse_as_of(raw)
    return datetime.now(UTC).replace(microsecond=0)
