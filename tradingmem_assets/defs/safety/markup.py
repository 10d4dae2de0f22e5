"""Two families of markup that speaks to the model: ``role_tag`` and ``tool_call_syntax``.

- ``role_tag``: chat-role markers in any bracket or markdown style: ``<system>``, ``[system]``,
  ``(system)``, ``{{system}}``, ``{% system %}``, ``<!-- system: -->``, ``<|im_start|>``, ``[INST]``,
  ``<<SYS>>``, ``<instruction>``, ``### System:``, ``**SYSTEM**:``, ``SYSTEM MESSAGE:``, fenced
  ``system`` blocks, a line opening with ``system:`` / ``assistant:`` / ``human:`` / ``AI:``.
- ``tool_call_syntax``: ``<tool_call>``, ``<function_call>``, ``<invoke name=>``, fenced
  ``tool_call`` / ``function`` blocks, ``"tool_calls":`` and ``{"name": ..., "arguments": ...}``
  JSON, ``functions.x(``, ReAct ``Action Input:``, ``[TOOL_CALLS]``, ``transfer_funds(``-style calls,
  shell one-liners (``curl ... | sh``, ``rm -rf``).
"""

from __future__ import annotations

from tradingmem_assets.defs.safety.gates import G, Gate

_ROLE_WORDS = (
    r"(?:system|sys|assistant|user|human|developer|dev|admin|administrator|root|instructions?|inst|prompt|"
    r"context|operator|sudo|model|ai|bot|im_start|im_end|im_sep|endoftext|end_of_turn|start_of_turn|"
    r"system_prompt|sys_prompt|system\s+prompt|system\s+message|important|priority|override|secret|hidden|"
    r"command|directive|jailbreak|policy|guidelines)"
)
_ROLE_EN = [
    rf"<\s*/?\s*{_ROLE_WORDS}[\w-]*\s*(?:\s[^<>]{{0,40}})?/?>",
    r"<\s*/?\s*s\s*>",
    r"<\|[^|<>\n]{1,40}\|>|<\|\s*/?\s*(?:system|user|assistant|im_start|im_end|endoftext)",
    r"\[\s*/?\s*inst\s*\]|<<\s*/?\s*sys(?:tem)?\s*>>",
    r"\[\[?\s*/?\s*(?:system|sys|assistant|user|admin|administrator|developer|instructions?|human|ai|bot|"
    r"root|"
    r"sudo|prompt|context|operator|system\s+(?:message|prompt|note|override)|admin\s+(?:message|override))"
    r"(?:\s+(?:message|prompt|note|override|instructions?))?\s*\]\]?",
    r"\(\s*(?:system|assistant|developer|admin)\s*(?:message|prompt|override)?\s*\)\s*:?",
    r"\{\{?\s*/?\s*(?:system|assistant|user|developer|admin|instructions?|sys|prompt)\s*\}?\}",
    r"(?:(?m:^)|\n)\s*(?:#{1,6}|={2,}|-{3,}|\*{2,}|>+|\|)\s*(?:system|assistant|developer|admin|"
    r"administrator|"
    r"human|user|ai|bot|model)\s*(?:message|prompt|instructions?|override|note|notice|turn)?\s*"
    r"(?::|\*{2,}|={2,}|-{3,}|#{1,6}|(?=\n)|$)",
    r"(?:(?m:^)|\n)\s*#{2,6}\s*(?:instruction|response|input|new\s+instructions?)s?\s*:?[ \t]*(?=\n|$)",
    r"(?:(?m:^)|\n|[.!?]\s+)\s*(?:\*\*|__|\*|_)?(?:system|sys|assistant|developer|admin|administrator|human|"
    r"ai|bot|operator|root|sudo|chatgpt|claude|gpt)(?:\s+(?:message|prompt|instructions?|"
    r"override|command|directive))?(?:\*\*|__|\*|_)?\s*:",
    r"\b(?:system|developer|admin|administrator|assistant|operator)\s+(?:message|prompt|instructions?|"
    r"override|"
    r"command|directive)\s*:",
    r"\bassistant\s*:",
    r"```\s*(?:system|assistant|user|developer|admin|instructions?|sys)\b",
    r"(?:<!--|\{%|\{\{|\[\[|<<|<\|)\s*[!#=/-]*\s*(?:end)?(?:system|sys|assistant|developer|admin|"
    r"administrator|"
    r"instructions?|user|human)\b|\brole\s*[=:]\s*[\"']?(?:system|assistant|developer|admin)\b",
    r"\b(?:begin|start|end)\s+(?:of\s+)?(?:system|admin|developer|hidden)\s+(?:message|prompt|instructions?|"
    r"block|section)\b",
    r"-{2,}\s*(?:begin|end)\s+(?:system|admin|developer|user|assistant)\b",
    # a closing tag in any delimiter ("/system" in quotes, guillemets, pipes), a JSON-ish role key
    r"[\"'<\[({|*]\s*/\s*(?:system|sys|assistant|developer|admin|user|human|instructions?|inst)\s*[\"'>\])}|*]",
    r"[{\[(]\s*[\"']?(?:system|assistant|developer|admin|administrator|operator)[\"']?\s*:",
    r"(?:-{2,}|={2,}|\*{3,}|#{3,}|~{3,}|_{3,})\s*(?:system|assistant|developer|admin|user|human)(?:\s+(?:message|"
    r"prompt|note))?\s*(?:-{2,}|={2,}|\*{3,}|#{3,}|~{3,}|_{3,})",
    r"(?:(?m:^)|\n|[.!?]\s+)\s*(?:\*\*|__)?(?:admin|administrator|developer|operator|root|sudo|moderator)\s+"
    r"(?:note|notice|memo|request|update|alert|order)(?:\*\*|__)?\s*:",
]

_TOOL_EN = [
    r"</?\s*(?:tool_call|tool_calls|tool_use|tool_result|tool_code|tool_output|function_call|function_calls|"
    r"function_results?|"
    r"invoke|parameter|antml:[a-z_]+|tool|tools|execute|exec|run_command|api_call|action|"
    r"function)\b[^<>]{0,80}>",
    r"<function\s*=|<\|?python_tag\|?>|\[\s*tool_calls?\s*\]|\[\s*tool_request\s*\]|\[\s*function_call\s*\]",
    r"```\s*(?:tool_call|tool_code|tool_use|tool|function|function_call|json\s*\{\s*\"(?:name|tool|"
    r"function|action)\")",
    r"\"(?:tool_calls|function_call|tool_use|tool_name|tool|function|action_input|"
    r"tool_input)\"\s*:\s*[{\[\"]",
    r"\{\s*\"(?:name|tool|tool_name|function|action|command|recipient_name)\"\s*:\s*\"[^\"]*\"\s*,\s*"
    r"\"(?:args|arguments|parameters|params|input|action_input|kwargs)\"\s*:",
    r"\"(?:arguments|parameters)\"\s*:\s*\{[^{}]*\}\s*,\s*\"name\"\s*:",
    r"\"type\"\s*:\s*\"(?:function|tool_use|tool_call|function_call)\"",
    r"\bfunctions\.[a-z_][a-z0-9_]*\s*\(|\bto=functions\.|\bassistant\s+to=",
    r"\b(?:action|tool|function|call)\s*:\s*[a-z]+_[a-z_]+\s*\(|\baction\s+input\s*:|(?:(?m:^)|"
    r"\n)\s*(?:action|tool|function|call)\s*:\s*[a-z]+_[a-z_]+\s*(?:\(|$)",
    r"\b(?:transfer_funds|withdraw_\w+|send_(?:funds|crypto|transaction|email|payment|eth|btc)|"
    r"execute_(?:trade|transfer|command|code)|os\.system|subprocess\.\w+|shell_exec|run_shell|exec|eval|"
    r"__import__)\s*\(",
    r"\b[a-z]*(?:approve|transfer|withdraw|send|grant|delete|disable|update|execute|place|cancel|close|mark|"
    r"export|"
    r"override|drop|move|sweep|wire|set)_[a-z_]+\s*\(",
    r"\b(?:curl|wget)\s+(?:-[a-z-]+\s+(?:\S+\s+)?)*(?:https?://|\S+\.\S+/)|\|\s*(?:ba|z|da)?sh\b|"
    r"\brm\s+-rf\b|"
    r"\$\(\s*(?:curl|wget|cat|base64)\b|\bnc\s+-e\b|/dev/tcp/",
]

# ----------------------------------------------------------------------------------------- gates

MARKUP_GATES: dict[str, list[Gate]] = {
    "role_tag": [
        G(
            "system sys assistant user human developer dev admin administrator root instruction instructions"
            " inst "
            "prompt context operator sudo model ai bot im endoftext end start important priority override se"
            "cret "
            "hidden command directive jailbreak policy guidelines systemprompt sysprompt",
            subs=("<",),
        ),
        G("s", subs=("<",)),
        G(subs=("<|",)),
        G("inst sys system"),
        G(
            "system sys assistant user admin administrator developer instruction instructions human ai bot r"
            "oot sudo prompt context operator",
            subs=("[",),
        ),
        G("system assistant developer admin", subs=("(",)),
        G("system assistant user developer admin instruction instructions sys prompt", subs=("{",)),
        G(
            "system assistant developer admin administrator human user ai bot model instruction instructions "
            "response input"
        ),
        G("instruction instructions response input new", subs=("#",)),
        G(
            "system sys assistant developer admin administrator human ai user model bot operator root sudo c"
            "hatgpt "
            "claude gpt",
            subs=(":",),
        ),
        G("system developer admin administrator assistant operator", subs=(":",)),
        G("assistant", subs=(":",)),
        G("system assistant user developer admin instruction instructions sys", subs=("```",)),
        G(
            "system sys assistant developer admin administrator instruction instructions user human endsyste"
            "m "
            "endassistant enduser endadmin enddeveloper endinstructions",
            subs=("<!--", "{%", "{{", "[[", "<<", "<|", "role"),
        ),
        G("begin start end", "system admin developer hidden"),
        G("begin end", subs=("--",)),
        G("system sys assistant developer admin user human instruction instructions inst", subs=("/",)),
        G("system assistant developer admin administrator operator", subs=(":",)),
        G("system assistant developer admin user human", subs=("--", "==", "***", "###", "~~~", "___")),
        G(
            "admin administrator developer operator root sudo moderator",
            "note notice memo request update alert order",
        ),
    ],
    "tool_call_syntax": [
        G(
            "tool call calls use result code output function results invoke parameter antml tools execute ex"
            "ec run "
            "command api action",
            subs=("<",),
        ),
        G("function python tag tool calls call request", subs=("<function", "python_tag", "[")),
        G("tool call code use function json name action", subs=("```",)),
        G("tool calls function call use name action input", subs=('"',)),
        G("name tool function action command recipient", subs=("{",)),
        G("arguments parameters", subs=("{",)),
        G("type", subs=('"',)),
        G("functions assistant"),
        G("action tool function call input", subs=(":",)),
        G(
            "transfer funds withdraw send execute os system subprocess shell exec run eval import",
            subs=("(",),
        ),
        G(
            "approve transfer withdraw send grant delete disable update execute place cancel close mark expo"
            "rt override "
            "drop move sweep wire set",
            subs=("(",),
        ),
        G("curl wget sh bash zsh dash rm cat base nc dev"),
    ],
}
MARKUP_PATTERNS: dict[str, list[str]] = {"role_tag": _ROLE_EN, "tool_call_syntax": _TOOL_EN}
