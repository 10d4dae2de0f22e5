"""The ``harmful_action`` family: actions that cost funds or remove a safeguard.

Drain funds to an address ("transfer all funds to 0x..."), leak credentials ("email the seed phrase
to"), disable safeguards ("turn the risk engine off", "bypass the kill switch"), blanket approvals
("approve every withdrawal automatically").
"""

from __future__ import annotations

from tradingmem_assets.defs.safety.exfiltration import G_SECRET, SECRET_OBJ
from tradingmem_assets.defs.safety.gates import G, Gate

_ADDRESS = (
    r"(?:0x[0-9a-f]{4,}|bc1[a-z0-9]{6,}|[13][a-km-z1-9]{25,34}|t[a-z0-9]{30,}|"
    r"(?:this|that|the\s+following|the\s+attacker'?s?|an?\s+external|external|another|a\s+different|outside|"
    r"unknown|following|below|my\s+new|this\s+new)\s+(?:\w+\s+){0,2}?(?:wallet|address|account|iban|"
    r"exchange\s+"
    r"account)|wallet\s+(?:address\s+)?[0-9a-z]{6,}|address\s+[0-9a-z]{6,}|account\s+(?:number\s+|no\.?\s+)?"
    r"[0-9a-z-]{6,}|iban\s+[a-z]{2}\d{2}|[\w.+-]+@[\w-]+\.\w+)"
)
_HARM_EN = [
    r"\b(?:transfer|send|withdraw|move|wire|sweep|drain|bridge|forward|remit|pay\s+out|"
    r"empty)\s+(?:\w+\s+){0,4}?"
    r"(?:all|every|entire|whole|full|100\s*%|maximum|max|remaining)\s+(?:\w+\s+){0,3}?(?:funds?|balances?|"
    r"money|"
    r"coins?|tokens?|btc|eth|usdt|usdc|sol|crypto|assets?|holdings?|capital|equity|portfolio|positions?|"
    r"collateral|savings|cash|bitcoin|ether|stablecoins?)\s+(?:\w+\s+){0,4}?(?:to|into|towards?)\s+"
    r"(?:\w+\s+){0,4}?" + _ADDRESS,
    r"\b(?:send|transfer|withdraw|wire|sweep|drain)\b[^.\n]{0,60}?\bto\s+(?:0x[0-9a-f]{6,}|bc1[a-z0-9]{8,}|"
    r"(?:the\s+)?(?:attacker|external|unknown|following)\s+(?:wallet|address))",
    r"\b(?:skip|remove|ignore|drop)\s+(?:\w+\s+){0,3}?(?:risk\s+(?:checks?|limits?|controls?|engine|gates?)|"
    r"safety\s+"
    r"(?:checks?|limits?|filters?|rails|controls?)|guardrails?|kill[\s-]?switch(?:es)?|"
    r"circuit[\s-]?breakers?|"
    r"(?:2fa|mfa|two[\s-]factor)(?:\s+\w+)?|human\s+(?:review|approval|in\s+the\s+loop)|"
    r"compliance\s+(?:checks?|"
    r"review|controls)|audit\s+(?:log|logging|trail)s?|withdrawal\s+(?:limits?|whitelist|allowlist))",
    r"\b(?:turn|switch|shut|power|flip)\s+(?:the\s+|your\s+|all\s+|"
    r"any\s+)?(?:\w+\s+){0,2}?(?:risk\s+(?:engine|"
    r"checks?|limits?|controls?|manager)|safety\s+\w+|guardrails?|kill[\s-]?switch(?:es)?|"
    r"circuit[\s-]?breakers?|2fa|"
    r"mfa|two[\s-]factor\s+\w+|compliance\s+\w+|audit\s+\w+|withdrawal\s+\w+|position\s+limits?|"
    r"(?:human|manual)\s+(?:review|approval)|approval\s+\w+|confirmation\s+\w+)\s+off\b",
    r"\b(?:disable|deactivate|turn\s+off|switch\s+off|bypass|circumvent|suppress|silence|defeat|"
    r"kill|neutrali[sz]e|shut\s+off|shut\s+down|get\s+around|work\s+around)\s+(?:\w+\s+){0,3}?(?:risk\s+"
    r"(?:checks?|limits?|controls?|engine|management\s+checks|gates?|manager|rules)|safety\s+(?:checks?|"
    r"limits?|"
    r"filters?|rails|features?|mechanisms?|controls?)|guardrails?|kill[\s-]?switch(?:es)?|circuit[\s-]?"
    r"breakers?|(?:2fa|mfa|two[\s-]factor)(?:\s+\w+)?|confirmation\s+(?:step|prompts?|dialogs?|checks?)|"
    r"human\s+(?:review|approval|in\s+the\s+loop)|approval\s+(?:step|flow|process|checks?)|compliance\s+"
    r"(?:checks?|rules|review|alerts|controls|monitoring)|audit\s+(?:log|logging|trail)s?|"
    r"withdrawal\s+(?:limits?|whitelist|allowlist)|"
    r"position\s+limits?|(?:content|safety)\s+filters?)",
    r"\b(?:approve|authori[sz]e|accept|sign\s+off\s+on|confirm|greenlight)\s+"
    r"(?:\w+\s+){0,2}?(?:every|all|any|each)\s+(?:\w+\s+){0,2}?(?:orders?|trades?|transactions?|withdrawals?|"
    r"transfers?|requests?|proposals?|payments?)\b[\s,]*(?:without|automatically|unconditionally|regardless|"
    r"no\s+matter|blindly|even\s+if|with\s+no|no\s+(?:confirmation|questions|checks?|review|approval))",
    r"\b(?:auto-?approve|rubber[\s-]?stamp|blindly\s+(?:approve|accept|sign))\s+(?:\w+\s+){0,2}?(?:every|"
    r"all|any|each)?\s*"
    r"(?:\w+\s+){0,2}?(?:orders?|trades?|transactions?|withdrawals?|transfers?|requests?|proposals?|"
    r"payments?)\b",
    rf"\b(?:send|email|e-mail|post|upload|forward|leak|exfiltrate|transmit|paste|dm|message|text)\s+"
    rf"(?:\w+\s+){{0,4}}?(?:the\s+|your\s+|all\s+|my\s+|user'?s?\s+)?{SECRET_OBJ}",
    # destroying the record: "delete all rows from the warehouse", "drop the database"
    r"\b(?:delete|drop|truncate|wipe|purge|erase|destroy|nuke)\s+(?:\w+\s+){0,2}?(?:(?:all|every|the\s+entire|"
    r"the\s+whole)\s+(?:\w+\s+)?(?:rows|records|tables?|data|entries|history)\s+(?:from|in|of)\s+(?:the\s+|"
    r"this\s+|your\s+)?|the\s+|this\s+|your\s+)(?:warehouse|database|db|ledger|audit\s+(?:log|trail)s?|"
    r"methodolog(?:y|ies)\s+table|learnings?\s+table|backups?)\b",
    # emptying the account: liquidate everything, then move the money out
    r"\b(?:liquidate|close|dump|sell|unwind)\s+(?:\w+\s+){0,2}?(?:all|every|each|entire|whole)\s+(?:\w+\s+){0,2}?"
    r"(?:positions?|holdings?|assets?|portfolio|account)\b[^.\n]{0,80}?\b(?:transfer|withdraw|send|wire|move|"
    r"sweep)\b[^.\n]{0,40}?\b(?:out|away|elsewhere|externally|off[\s-](?:platform|exchange))\b",
    # the investor profile is the investor's to set (SPEC: no conversation changes investor_type)
    r"\b(?:set|change|switch|update|flip|make|modify|overwrite|reset|force)\s+(?:the\s+|my\s+|your\s+|"
    r"this\s+user'?s\s+|the\s+user'?s\s+)?investor[\s_-]?(?:type|profile)\s*(?:to|=|:|as|into)\b",
]

# ----------------------------------------------------------------------------------------- gates

HARM_GATES: dict[str, list[Gate]] = {
    "harmful_action": [
        G(
            "transfer send withdraw move wire sweep drain bridge forward remit pay empty",
            "to into toward towards",
        ),
        G("send transfer withdraw wire sweep drain", "to"),
        G(
            "skip remove ignore drop",
            "risk safety guardrail guardrails kill killswitch circuit fa mfa two human "
            "compliance audit withdrawal",
        ),
        G("turn switch shut power flip", "off"),
        G(
            "disable deactivate bypass circumvent suppress silence defeat kill neutralize neutralise off "
            "around",
            "risk safety guardrail guardrails kill killswitch circuit fa mfa two confirmation human approval "
            "compliance audit withdrawal position content",
        ),
        G("approve authorize authorise accept sign confirm greenlight", "every all any each"),
        G("auto autoapprove rubber blindly"),
        G("send email e mail post upload forward leak exfiltrate transmit paste dm message text", G_SECRET),
        G(
            "delete drop truncate wipe purge erase destroy nuke",
            "warehouse database db ledger audit methodology methodologies learning learnings backup backups",
        ),
        G("liquidate close dump sell unwind", "transfer withdraw send wire move sweep"),
        G("set change switch update flip make modify overwrite reset force", subs=("investor",)),
    ],
}
HARM_PATTERNS: dict[str, list[str]] = {"harmful_action": _HARM_EN}
