"""The role registry (SPEC section 3): skills declare roles, validated when the code location loads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

REQUIRED_ROLE_FIELDS = (
    "role_id",
    "maturity_days",
    "primary_profile",
    "required_evidence",
    "failure_modes",
    "reflection_prompt",
)


class RegistryError(ValueError):
    """The roles file is unusable; the message says which file, skill and role, and why."""


@dataclass(frozen=True)
class Role:
    role_id: str
    skill_id: str
    maturity_days: int
    primary_profile: str
    noise_k: float
    required_evidence: tuple[str, ...]
    failure_modes: tuple[str, ...]
    reflection_prompt: str


@dataclass(frozen=True)
class RoleRegistry:
    source: str
    roles: dict[str, Role]

    def get(self, role_id: str | None) -> Role | None:
        """The declared role, or None: an unknown role is never mapped to a generic one."""
        return self.roles.get(role_id) if role_id is not None else None

    @property
    def skills(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for role in self.roles.values():
            out.setdefault(role.skill_id, []).append(role.role_id)
        return {k: tuple(v) for k, v in out.items()}

    def rows(self) -> list[dict]:
        """One plain dict per role, ready to become a DataFrame."""
        return [
            {
                "role_id": r.role_id,
                "skill_id": r.skill_id,
                "maturity_days": r.maturity_days,
                "primary_profile": r.primary_profile,
                "noise_k": r.noise_k,
                "required_evidence": list(r.required_evidence),
                "failure_modes": list(r.failure_modes),
                "reflection_prompt": r.reflection_prompt,
            }
            for r in self.roles.values()
        ]


def _str_list(value: object, where: str, field: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise RegistryError(f"{where}: field '{field}' must be a list of non-empty strings")
    return tuple(value)


def parse_registry(document: object, source: str = "<roles>") -> RoleRegistry:
    """Validate a parsed roles document; raise RegistryError naming the problem exactly."""
    if not isinstance(document, dict) or not isinstance(document.get("skills"), list):
        raise RegistryError(f"{source}: expected a top-level 'skills:' list")
    roles: dict[str, Role] = {}
    for i, skill in enumerate(document["skills"]):
        if not isinstance(skill, dict) or not isinstance(skill.get("skill_id"), str) or not skill["skill_id"]:
            raise RegistryError(f"{source}: skills[{i}] is missing field 'skill_id'")
        skill_id = skill["skill_id"]
        if not isinstance(skill.get("roles"), list) or not skill["roles"]:
            raise RegistryError(f"{source}: skill '{skill_id}' is missing field 'roles' (a non-empty list)")
        for j, raw in enumerate(skill["roles"]):
            where = f"{source}: skill '{skill_id}' roles[{j}]"
            if not isinstance(raw, dict):
                raise RegistryError(f"{where} is not a mapping")
            missing = [f for f in REQUIRED_ROLE_FIELDS if raw.get(f) in (None, "")]
            if missing:
                name = raw.get("role_id") or f"roles[{j}]"
                raise RegistryError(
                    f"{source}: skill '{skill_id}' role '{name}' is missing field(s): {', '.join(missing)}"
                )
            role_id = str(raw["role_id"])
            where = f"{source}: skill '{skill_id}' role '{role_id}'"
            if role_id in roles:
                raise RegistryError(
                    f"{source}: duplicate role_id '{role_id}' declared by skills "
                    f"'{roles[role_id].skill_id}' and '{skill_id}'"
                )
            maturity = raw["maturity_days"]
            if isinstance(maturity, bool) or not isinstance(maturity, int) or maturity < 0:
                raise RegistryError(f"{where}: 'maturity_days' must be a non-negative integer")
            noise_k = raw.get("noise_k", 1.0)
            if isinstance(noise_k, bool) or not isinstance(noise_k, int | float) or noise_k < 0:
                raise RegistryError(f"{where}: 'noise_k' must be a non-negative number")
            roles[role_id] = Role(
                role_id=role_id,
                skill_id=skill_id,
                maturity_days=maturity,
                primary_profile=str(raw["primary_profile"]),
                noise_k=float(noise_k),
                required_evidence=_str_list(raw["required_evidence"], where, "required_evidence"),
                failure_modes=_str_list(raw["failure_modes"], where, "failure_modes"),
                reflection_prompt=str(raw["reflection_prompt"]),
            )
    if not roles:
        raise RegistryError(f"{source}: no roles declared")
    return RoleRegistry(source=source, roles=roles)


def load_registry(path: Path) -> RoleRegistry:
    """Read and validate a roles file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RegistryError(f"cannot read roles file {path}: {exc.strerror}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RegistryError(f"{path}: not valid YAML: {exc}") from exc
    return parse_registry(document, str(path))
