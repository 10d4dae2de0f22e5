"""The optional LLM reflector: an OpenAI-compatible chat endpoint, behind the budget tracker.

Off unless ``TRADINGMEM_LLM_BASE_URL`` is set (``settings.SETTINGS.llm_base_url``; the base URL
includes the version path, e.g. ``https://api.openai.com/v1``). The request carries no ``tools``
and any tool call in the answer is ignored: the reflector can only return text and can never move
funds. Roles are reflected serially (one request at a time, role after role). Every request goes
through ``BudgetTracker.call`` in category ``reflection``; once the budget refuses, the remaining
lessons of the batch fall back to the deterministic reflector (or, with ``strict``, the refusal
propagates: the manual ``tradingmem reflect`` then records nothing). After three consecutive
endpoint errors the batch stops asking and falls back the same way.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import polars as pl

from tradingmem_assets.defs.role_memory.reflection import (
    DETERMINISTIC,
    LESSON_MAX_CHARS,
    DeterministicReflector,
)
from tradingmem_assets.defs.safety.data_blocks import DATA_BLOCK_RULE, data_block
from tradingmem_assets.lib.budget import BudgetExceededError, BudgetTracker, Pricing, Usage

CATEGORY = "reflection"


class LLMError(RuntimeError):
    """The endpoint could not be reached or answered something unusable."""


def estimate_tokens(text: str) -> int:
    """A cheap upper-side estimate (about 4 characters per token)."""
    return math.ceil(len(text or "") / 4) + 4


@dataclass
class ChatClient:
    """A minimal OpenAI-compatible ``/chat/completions`` client (urllib, no extra dependency)."""

    base_url: str
    model: str
    tracker: BudgetTracker
    api_key: str | None = None
    pricing: Pricing = field(default_factory=Pricing.from_env)
    timeout_s: float = 30.0

    def complete(
        self, task: str, system: str, user: str, max_tokens: int = 120, category: str = CATEGORY
    ) -> str:
        est_in = estimate_tokens(system) + estimate_tokens(user)
        estimate = self.pricing.cost(est_in, max_tokens)
        return self.tracker.call(
            category, task, self.model, estimate, lambda: self._post(system, user, max_tokens, est_in)
        )

    def _post(self, system: str, user: str, max_tokens: int, est_in: int) -> tuple[str, Usage]:
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = self.base_url.rstrip("/") + "/chat/completions"
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                document = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise LLMError(f"LLM endpoint {url} answered HTTP {exc.code}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise LLMError(f"LLM endpoint {url} is unreachable: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise LLMError(f"LLM endpoint {url} did not answer JSON") from exc
        try:
            message = document["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"LLM endpoint {url} answered without choices[0].message") from exc
        content = message.get("content") if isinstance(message, dict) else None
        text = content if isinstance(content, str) else ""
        usage = document.get("usage") if isinstance(document.get("usage"), dict) else {}
        n_in = int(usage.get("prompt_tokens") or est_in)
        n_out = int(usage.get("completion_tokens") or estimate_tokens(text))
        return text, Usage(n_in, n_out, self.pricing.cost(n_in, n_out))


SYSTEM_PROMPT = (
    "You are the reflection step of the trading role '{role_id}'. You have no tools and cannot place, "
    "move or cancel orders or funds. Write ONE lesson for this role, at most {limit} characters, plain text: "
    "name the symbol and say what the role should do differently next time."
)


def lesson_prompt(row: dict) -> tuple[str, str]:
    """The system and user messages for one case. The decision text is the agent's stored record,
    so it goes in as data: a sealed block it cannot close (``safety.data_blocks``)."""
    system = SYSTEM_PROMPT.format(role_id=row["role_id"], limit=LESSON_MAX_CHARS) + " " + DATA_BLOCK_RULE
    decision = row.get("decision_text")
    facts = {
        "role_question": row.get("reflection_prompt"),
        "failure_modes": row.get("failure_modes"),
        "symbol": row.get("symbol"),
        "direction": row.get("direction"),
        "decision_text": None if decision is None else data_block("decision", decision, row.get("case_id")),
        "classification": row.get("classification"),
        "missing_evidence": row.get("missing_evidence"),
        "excess_return": row.get("excess_return"),
        "noise_band": row.get("noise_band"),
    }
    return system, json.dumps(facts, ensure_ascii=False, default=str)


def clean_lesson(text: str, symbol: str) -> str | None:
    """One line, names the symbol, at most 280 characters; None when nothing usable came back."""
    text = " ".join((text or "").split())
    if not text:
        return None
    if symbol and symbol.lower() not in text.lower():
        text = f"{symbol}: {text}"
    if len(text) > LESSON_MAX_CHARS:
        text = text[: LESSON_MAX_CHARS - 1] + "…"
    return text


@dataclass
class LLMReflector:
    """Lessons from the LLM, role after role, one request at a time, under the reflection budget."""

    client: ChatClient
    strict: bool = False
    max_consecutive_errors: int = 3  # an endpoint that keeps failing is not asked for every case
    calls: int = 0
    refused: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"llm:{self.client.model}"

    def write_lessons(self, trainable: pl.DataFrame) -> pl.DataFrame:
        fallback = DeterministicReflector().write_lessons(trainable)
        fallback_by_case = {
            (c, r): lesson for c, r, lesson in fallback.select("case_id", "run_id", "lesson").rows()
        }
        exhausted = False
        failures = 0
        out: list[tuple[str, str, str, str]] = []
        for row in trainable.sort("role_id", "case_id", "run_id").iter_rows(named=True):  # serial by design
            case_id, run_id = row["case_id"], row["run_id"]
            lesson: str | None = None
            if not exhausted:
                system, user = lesson_prompt(row)
                try:
                    lesson = clean_lesson(
                        self.client.complete(f"reflection:{case_id}", system, user), row["symbol"]
                    )
                    self.calls += 1
                except BudgetExceededError:
                    self.refused += 1
                    if self.strict:
                        raise
                    exhausted = True
                except LLMError as exc:
                    if self.strict:
                        raise
                    self.errors.append(f"{case_id}: {exc}")
                    failures += 1
                    exhausted = failures >= self.max_consecutive_errors
            if lesson is None:
                out.append((case_id, run_id, fallback_by_case[(case_id, run_id)], DETERMINISTIC))
            else:
                out.append((case_id, run_id, lesson, self.name))
        return pl.DataFrame(
            out,
            schema={"case_id": pl.String, "run_id": pl.String, "lesson": pl.String, "reflector": pl.String},
            orient="row",
        )
