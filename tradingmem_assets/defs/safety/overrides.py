"""The ``ignore_instructions`` family: telling the model to drop its instructions.

A verb of dismissal (ignore, disregard, forget, override, bypass, set aside, stop following, do not
obey, ... is void / no longer applies) with an object that only means the model's instructions
(instructions, prompt, directives, guidelines, programming, guardrails), or an ambiguous object
(rules, context, data, text, guidance) anchored in the conversation ("the above guidance", "the rest
of this data", "the rulebook you were handed"); "forget everything you learned before"; "STOP
EVERYTHING!!! NOW"; the same in Spanish, French, German, Italian, Portuguese, Russian, Chinese,
Japanese and Korean (``MULTILINGUAL``, matched on the text without confusable folding). Bare
"ignore the first 30 minutes after the open" names no instructions and is clean.
"""

from __future__ import annotations

from tradingmem_assets.defs.safety.gates import G, Gate

_S = r"(?:'s)?[\s\"'`*_,]+"  # between words: whitespace, quotes, emphasis markers (after a possessive)
_QUAL = (
    r"(?:previous(?:ly)?|prior|preceding|above|above-mentioned|aforementioned|earlier|before|former|"
    r"foregoing|following|below|subsequent|later|remaining|rest\s+of|remainder\s+of|initial|original|"
    r"old|existing|current|given|provided|supplied|system|developer|built-?in|hidden|all|any|every|each|"
    r"your|my|its|their|our|his|her|these|those|the|this|that|such|other|of|and|or|\d+|one|two|three|four|"
    r"five|"
    r"ten|last|first|"
    r"few|many|several|safety|default|standard|core|base|pre-?set|pre-?defined|whatever|security|"
    r"ethical|moral|content|openai|anthropic|prompt|user|earlier|so-called|stated|written|above-stated)"
)
_VERB_IGNORE = (
    r"(?:ignore|ignoring|disregard(?:ing)?|forget(?:ting)?|overlook|override|overriding|overrule|bypass|"
    r"skip|drop|discard|dismiss|abandon|neglect|nullify|void|cancel|revoke|rescind|erase|delete|clear|"
    r"wipe|scrap|purge|unlearn|reset|ditch|toss|throw\s+(?:out|away)|set\s+aside|put\s+aside|"
    r"pay\s+no\s+(?:attention|heed|mind)\s+to|take\s+no\s+notice\s+of|"
    r"stop\s+(?:following|obeying|listening\s+to|using|applying|respecting)|"
    r"no\s+longer\s+(?:follow|obey|apply|adhere\s+to|respect)|"
    r"(?:do\s+not|don'?t|never|stop\s+to)\s+(?:follow|obey|adhere\s+to|listen\s+to|comply\s+with|"
    r"respect|heed|pay\s+(?:any\s+)?attention\s+to)|never\s+mind|leave\s+behind|get\s+rid\s+of|"
    r"free\s+yourself\s+(?:from|of)|break\s+free\s+(?:from|of)|"
    r"escape(?:\s+from)?)"
)
_VERB_IGNORE_CORE = (
    r"(?:ignore|ignoring|disregard(?:ing)?|forget(?:ting)?|overlook|override|overrule|bypass|dismiss|"
    r"discard|neglect|set\s+aside|put\s+aside|pay\s+no\s+(?:attention|heed|mind)\s+to|"
    r"take\s+no\s+notice\s+of|stop\s+(?:following|obeying|listening\s+to)|"
    r"no\s+longer\s+(?:follow|obey|adhere\s+to)|(?:do\s+not|don'?t|never)\s+(?:follow|obey|adhere\s+to|"
    r"listen\s+to|comply\s+with|heed|pay\s+(?:any\s+)?attention\s+to|care\s+about)|never\s+mind|scratch|"
    r"skip|erase)"
)
_STRONG_OBJ = (
    r"(?:instructions?|instruction\s+set|prompts?|directives?|programming|pre-?programming|guardrails?|"
    r"(?:safety|content|usage|ethical|moral)\s+(?:guidelines?|polic(?:y|ies)|rules|filters?|"
    r"restrictions?|constraints?)|guidelines?|constraints?|commands?|conditioning|training|alignment|"
    r"system\s+(?:messages?|rules|instructions?|settings)|developer\s+(?:messages?|instructions?)|"
    r"restrictions?|limitations?|safeguards?|directions)\b"
)
_AMBIG_OBJ = (
    r"(?:rules?|context|messages?|text|content|conversation|chat|discussion|history|tasks?|"
    r"guidance|advice|information|info|statements?|words|lines?|paragraphs?|sections?|documents?|notes?|"
    r"polic(?:y|ies)|filters?|settings?|config(?:uration)?|persona|role|identity|setup|framework)\b"
)
_CQ = (
    r"(?:previous(?:ly\s+(?:given|provided|stated|mentioned))?|prior|preceding|above|above-mentioned|"
    r"aforementioned|earlier|foregoing|former|following|below|subsequent|rest\s+of|remainder\s+of|"
    r"initial|original|system|developer|hidden|built-?in|your)"
)
_POST_CQ = (
    r"(?:(?:above|before|earlier|previously|so\s+far|up\s+to\s+now|until\s+now|hitherto)"
    r"(?=\s*(?:[.,;:!?)\n\"']|$|and\b|then\b|this\b|that\b|these\b|here\b|line\b|point\b|message\b|in\b))|"
    r"(?:you\s+(?:were|have\s+been|had\s+been)\s+(?:given|told|taught|provided|shown))|"
    r"(?:(?:i|we)\s+(?:gave|told|wrote|said|sent|provided)(?:\s+you)?)|"
    r"(?:(?:that\s+)?you(?:'ve|\s+have)\s+(?:so\s+far|until\s+now|up\s+to\s+now|received|been\s+given|got))|"
    r"(?:(?:in|of|from)\s+(?:this|the|your)\s+(?:prompt|conversation|chat|context|system\s+prompt|"
    r"message|session)))"
)

_IGNORE_EN = [
    # A: verb + qualifiers + an object that only means the model's instructions (bare "ignore instructions to
    # chase" names someone else's instructions)
    rf"\b{_VERB_IGNORE}{_S}(?:{_QUAL}{_S}){{1,6}}{_STRONG_OBJ}|\b{_VERB_IGNORE}{_S}{_STRONG_OBJ}"
    r"(?!\s+(?:to|from|about|on|for|regarding|of)\b)",
    # B: verb + a conversational qualifier + an ambiguous object ("the above guidance")
    rf"\b{_VERB_IGNORE_CORE}{_S}(?:{_QUAL}{_S}){{0,4}}{_CQ}{_S}(?:{_QUAL}{_S}){{0,3}}{_AMBIG_OBJ}",
    # B': verb + up to three other words + conversational qualifier + object
    # ("erase your memory of the previous rules")
    rf"\b{_VERB_IGNORE_CORE}{_S}(?:[\w'-]+{_S}){{1,3}}?(?:{_QUAL}{_S}){{0,2}}{_CQ}{_S}(?:{_QUAL}{_S}){{0,"
    rf"2}}(?:{_AMBIG_OBJ}|{_STRONG_OBJ})",
    # E: "set your earlier guidance aside / to one side", "throw the previous rules out"
    rf"\b(?:set|put|push|cast|toss|throw|leave|lay|"
    rf"sweep)\s+(?:{_QUAL}{_S}){{0,3}}(?:{_CQ}{_S}(?:{_QUAL}{_S}){{0,2}}"
    rf"(?:{_AMBIG_OBJ}|{_STRONG_OBJ})|{_STRONG_OBJ}|rulebook)\s+(?:aside|to\s+(?:one|the)\s+side|out|away|"
    rf"behind)\b",
    # F: "throw out the rulebook you were handed"
    rf"\b{_VERB_IGNORE}{_S}(?:{_QUAL}{_S}){{0,3}}(?:rulebook|rules|guidelines|script|instructions|orders|"
    rf"directions|"
    r"guidance)\s+(?:that\s+)?you\s+(?:were|have\s+been|had\s+been)\s+(?:given|handed|told|provided|"
    r"assigned|issued)\b",
    # B2: verb + ambiguous object + a qualifier after it ("ignore the rules above")
    rf"\b{_VERB_IGNORE_CORE}{_S}(?:{_QUAL}{_S}){{0,4}}(?:{_AMBIG_OBJ}|everything|anything|all){_S}"
    rf"(?:(?:that|which|what)\s+)?(?:(?:was|were|is|are|came|comes|appears?|appeared)\s+)?(?:written\s+|"
    rf"said\s+|stated\s+|"
    rf"given\s+|mentioned\s+)?{_POST_CQ}",
    # D: "forget everything you learned before"
    rf"\b{_VERB_IGNORE_CORE}{_S}(?:about\s+)?(?:everything|all|anything|whatever|what)(?:\s+else)?\s+"
    r"(?:(?:that|which)\s+)?(?:you(?:'ve|\s+have|\s+had|\s+were|\s+'ve)?\s+(?:learned|learnt|been\s+told|"
    r"were\s+told|read|seen|heard|been\s+taught|were\s+taught|been\s+given|were\s+given|been\s+trained|"
    r"were\s+trained)|(?:i|we)\s+(?:said|told|wrote|gave|asked|mentioned|sent)|"
    r"(?:was\s+|were\s+)(?:said|written|stated|mentioned|told|given)|(?:came|comes|appeared|appears|went)\s+"
    r"(?:before|above|earlier|previously|prior)|(?:above|before|so\s+far|until\s+now|up\s+to\s+now)\b)",
    # C': "the instructions you received earlier were a mistake",
    # "whatever you were told before no longer counts"
    r"\b(?:(?:the|your|all|any|those|these)\s+)?(?:instructions?|prompts?|directives?|directions|"
    r"programming|system\s+prompt|"
    r"guidelines|rules)\s+(?:that\s+|which\s+)?you\s+(?:\w+\s+){0,2}?(?:received|were\s+given|got|"
    r"have\s+been\s+given|"
    r"were\s+told|read|saw)\b[^.;\n]{0,40}?\b(?:were|was|are|is|have\s+been|"
    r"has\s+been)\s+(?:\w+\s+){0,2}?(?:a\s+mistake|"
    r"mistaken|wrong|void|null|fake|a\s+test|cancel+ed|revoked|withdrawn|expired|obsolete|outdated|"
    r"superseded|invalid|"
    r"irrelevant)\b",
    r"\b(?:whatever|everything|anything|all)\s+(?:that\s+)?(?:you\s+(?:were|have\s+been|"
    r"had\s+been)\s+(?:told|given|"
    r"taught|instructed)|(?:i|we)\s+(?:said|told\s+you|wrote))\b[^.;\n]{0,40}?\b(?:no\s+longer\s+(?:counts?|"
    r"applies|"
    r"apply|matters?|holds?|stands?)|(?:is|was|are|were)\s+(?:now\s+)?(?:void|null|cancel+ed|irrelevant|"
    r"a\s+mistake|"
    r"wrong|fake|a\s+test|obsolete|withdrawn)|(?:doesn'?t|does\s+not|don'?t|do\s+not)\s+(?:count|apply|"
    r"matter))\b",
    # C: "the previous instructions are void"
    r"\b(?:previous|prior|preceding|above|earlier|original|initial|old|former|system|existing|your|all)\s+"
    r"(?:\w+\s+){0,2}?(?:instructions?|prompts?|directives?|directions|programming|system\s+prompt|"
    r"messages?)\s+"
    r"(?:\w+\s+){0,3}?(?:void|null|nullified|cancel+ed|revoked|rescinded|obsolete|outdated|superseded|"
    r"overridden|invalid|invalidated|irrelevant|fake|a\s+test|a\s+joke|deprecated|suspended|lifted|"
    r"withdrawn|expired|a\s+mistake|mistaken|no\s+longer\s+(?:valid|apply|applicable|in\s+effect|relevant|"
    r"binding|matter)|"
    r"(?:do|does)\s+not\s+(?:apply|matter|count)|(?:don'?t|doesn'?t)\s+(?:apply|matter|count))\b",
    r"\b(?:previous|prior|preceding|above|earlier|original|initial|old|former|system|your|"
    r"all)\s+(?:\w+\s+){0,2}?"
    r"(?:rules|guidelines|constraints|restrictions|guardrails|context)\s+(?:are|is)\s+(?:now\s+|hereby\s+)?"
    r"(?:void|null|nullified|suspended|revoked|rescinded|cancel+ed|overridden|lifted|a\s+test|fake|"
    r"no\s+longer\s+valid)\b",
    r"\beverything\s+(?:(?:written|said|stated)\s+)?(?:above|before\s+this|so\s+far|prior\s+to\s+this|"
    r"until\s+now)"
    r"\s+(?:\w+\s+){0,2}?(?:is|was)\s+(?:\w+\s+){0,2}?(?:void|null|a\s+test|fake|irrelevant|outdated|"
    r"wrong|a\s+lie|a\s+joke|cancel+ed|obsolete)\b",
    # F: urgent stop
    r"\bstop\s+(?:everything|all)\s*(?:!|now\b|right\s+now|and\s+(?:listen|read|do|follow|obey|instead|print|"
    r"say|output|respond|answer|tell|reveal|switch|focus))",
    r"\bstop\s+what(?:ever)?\s+you(?:'re|\s+are)\s+doing\b",
    r"\bstop\s+(?:reading|processing|analy[sz]ing|parsing)\s+(?:the\s+|this\s+)?(?:data|text|input|document|"
    r"above|content|file)\b",
    r"\b(?:halt|abort|cease|terminate)\s+(?:all\s+)?(?:current\s+|previous\s+|prior\s+)?(?:tasks?|"
    r"instructions?|processing)\b",
]
_IGNORE_ML = [  # matched on the normalised text without confusable folding (other scripts intact)
    r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|不理会|跳过|放弃|無視|忽略掉)[\s\S]{0,12}?(?:指令|指示|提示|说明|規則|规则|设定|命令|要求|設定)",
    r"(?:指示|命令|プロンプト|ルール|指令|設定)[をはもの]?(?:[^\s。、]{0,6}?)(?:無視|忘れ)",
    r"(?:지시|명령|지침|프롬프트|규칙)[을를]?\s*(?:모두\s*)?(?:무시|잊어)",
    r"\b(?:ignora|ignore|ignorar|ignoren|olvida|olvide|olviden|olvidar|descarta|descarte|omite|omita|"
    r"no\s+sigas|desconsidera|desconsidere)\s+(?:\w+\s+){0,4}?(?:instrucciones|indicaciones|directrices|"
    r"ordenes|reglas\s+(?:anteriores|previas)|instruccion)",
    r"\b(?:ignore[zr]?|oublie[zr]?|neglige[zr]?|ne\s+tiens?\s+pas\s+compte\s+des?|ne\s+suis\s+pas)\s+"
    r"(?:les|toutes|tous|vos|tes|ces|des|la|le|mes|nos)\s+(?:\w+\s+){0,3}?(?:instructions|consignes|"
    r"directives|regles\s+(?:precedentes|anterieures)|indications)",
    r"\b(?:ignoriere|ignorieren|ignorier|vergiss|vergessen|missachte|ubergehe|uberspringe)\s+(?:\w+\s+){0,4}?"
    r"(?:anweisungen|anweisung|befehle|vorgaben|instruktionen|regeln|richtlinien)",
    r"\b(?:ignora|dimentica|trascura|ignorate|dimenticate)\s+(?:\w+\s+){0,4}?(?:istruzioni|indicazioni|"
    r"regole\s+precedenti|direttive)",
    r"\b(?:ignore|ignora|esqueca|esquecam|desconsidere|desconsidera)\s+(?:\w+\s+){0,4}?(?:instrucoes|"
    r"instrucao|orientacoes|regras\s+anteriores|diretrizes)",
    r"(?:игнорируи(?:те)?|игнорировать|проигнорируи(?:те)?|забудь(?:те)?|забыть|"
    r"не\s+обращаи(?:те)?\s+внимания\s+на|"
    r"отбрось|отмени)\s+(?:[\w-]+\s+){0,4}?(?:инструкци\w*|указани\w*|правил\w*|команд\w*|промпт\w*)",
]


# ----------------------------------------------------------------------------------------- gates

_V_IGN = (
    "ignor* disre* forge* overlook overr* overrule bypas* skip drop discard dismiss abandon neglect nullify "
    "void "
    "cancel revoke rescind erase delete clear wipe scrap purge unlearn reset ditch toss throw escape"
)
_V_IGN_CORE = (
    "ignor* disre* forge* overlook overr* overrule bypas* dismiss discard neglect scratch skip erase"
)
_V_IGN_MULTI = "aside attention heed mind notice longer behind rid yourself free care"
_G_FOLLOW = "follow obey adhere listen comply respect heed"
_G_OBJ = (
    "instr* promp* direc* programming preprogramming guard* guide* const* comma* conditioning training align"
    "ment "
    "restr* limitation limitations safeguard safeguards rules policy policies filter filters message message"
    "s settings"
)
_G_CQ = (
    "previous previously prior preceding above aforementioned earlier foregoing former following below subse"
    "quent "
    "rest remainder initial original system developer hidden built your"
)
_G_AMBIG = (
    "rule rules context messages message text content data input conversation chat discussion history task t"
    "asks "
    "guidance advice information info statement statements words lines line paragraph paragraphs section sec"
    "tions "
    "document documents notes note policy policies filter filters setting settings config configuration pers"
    "ona "
    "role identity setup framework"
)


def _ignore_gate(*rest: str) -> Gate:
    """A verb of dropping (one word, or the telling word of "set aside", "stop following", "do not obey")."""
    return (
        G(_V_IGN_CORE, *rest)
        | G(_V_IGN_MULTI, *rest)
        | G("stop", "following obeying listening", *rest)
        | G("do don never", _G_FOLLOW, *rest)
    )


OVERRIDE_GATES: dict[str, list[Gate]] = {
    "ignore_instructions": [
        _ignore_gate(_G_OBJ) | G(_V_IGN, _G_OBJ) | G("stop", "using applying respecting", _G_OBJ),
        _ignore_gate(_G_CQ, _G_AMBIG),
        _ignore_gate(_G_CQ, _G_AMBIG + " " + _G_OBJ),
        G("set put push cast toss throw leave lay sweep", "aside side out away behind"),
        G(
            "rulebook rules guidelines script instructions orders directions guidance",
            "you",
            "given handed told provided assigned issued",
        ),
        _ignore_gate(_G_AMBIG + " everything anything all"),
        _ignore_gate("everything all anything whatever what"),
        G(
            "instr* promp* directive directives directions programming guidelines rules",
            "you",
            "received given got told read saw",
            "mistake mistaken wrong void null fake test cancelled canceled revoked "
            "withdrawn expired obsolete outdated superseded invalid irrelevant",
        ),
        G(
            "whatever everything anything all",
            "told given taught instructed said wrote",
            "longer void null cancelled canceled irrelevant mistake wrong fake test obsolete withdrawn doesn"
            " does don do",
        ),
        G(
            "previous prior preceding above earlier original initial old former system existing your all",
            "instr* promp* directive directives directions programming message messages",
        ),
        G(
            "previous prior preceding above earlier original initial old former system your all",
            "rules guidelines constraints restrictions guardrails context",
            "are is",
        ),
        G("everything"),
        G("stop", "everything all"),
        G("stop", "what whatever"),
        G("stop", "reading processing analyzing analysing parsing"),
        G("halt abort cease terminate"),
    ],
}
OVERRIDE_PATTERNS: dict[str, list[str]] = {"ignore_instructions": _IGNORE_EN}
MULTILINGUAL = _IGNORE_ML
MULTILINGUAL_GATE = G(
    "ignor* olvid* desca* descarte omite omita sigas desco* oubli* negli* tiens tient suis vergi* verge* "
    "missa* uberg* ubers* dimen* trasc* esque*"
)
