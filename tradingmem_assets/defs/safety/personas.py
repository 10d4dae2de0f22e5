"""The ``new_instructions`` family: replacement instructions and role-play jailbreaks.

"you are now ...", "immerse yourself into the role of", "pretend you are an AI without
restrictions", "act as a Linux terminal", an AI persona with an unrestricted descriptor, DAN /
developer / god mode, "do anything now", "new instructions:", "your new task is", "from now on you",
"administrator override", "begin your reply with". "Act as a liquidity provider" names no AI and no
unrestricted descriptor and is clean.
"""

from __future__ import annotations

from tradingmem_assets.defs.safety.gates import G, Gate

_JB_ADJ = (
    r"(?:unrestricted|unfiltered|uncensored|unlimited|jailbroken|rogue|evil|unaligned|amoral|unbound|"
    r"unchained|liberated|lawless|unethical|limitless|(?:without|with\s+no)\s+(?:any\s+)?(?:ethical\s+|"
    r"moral\s+|"
    r"content\s+|safety\s+)?(?:filters|censorship|ethics|morals|guardrails|ethical\s+guidelines|"
    r"content\s+polic(?:y|ies)|"
    r"safety\s+guidelines|moral\s+guidelines)|free\s+(?:of|from)\s+(?:all\s+|"
    r"any\s+)?(?:\w+\s+)?(?:restrictions|rules|"
    r"limits|guidelines|policies|filters)|(?:released|freed|exempt(?:ed)?|liberated)\s+from\s+(?:all\s+|"
    r"any\s+|"
    r"your\s+)?(?:\w+\s+)?(?:guidelines|rules|restrictions|policies|limits|constraints|programming|filters)|"
    r"no\s+longer\s+bound|dan|stan|dude|aim|developer\s+mode|god\s+mode)"
)
_AI = (
    r"(?:ai|a\.i\.|assistant|chatbot|chat\s*bot|language\s+model|llm|model|gpt|chatgpt|claude|bot|agent|"
    r"persona|character|entity)"
)
_NEW_EN = [
    r"\b(?:new|updated|revised|real|actual|true|corrected|secret|hidden|additional|override|priority|urgent|"
    r"important|special|replacement)\s+(?:system\s+)?(?:instructions?|directives?|task|objective|mission|"
    r"prompt|commands?|orders\s+for\s+you)\s*(?::|-\s|—|\bfollow\b|\bare\b|\bis\b|\bbelow\b|\bas\s+follows|"
    r"\boverride|\bfor\s+you)",
    r"\b(?:real|secret|hidden|true|override|priority)\s+rules\s*(?::|\bare\b)",
    r"\byour\s+(?:new|real|true|actual|updated|next|sole|one\s+and\s+only)\s+(?:task|job|goal|purpose|"
    r"objective|"
    r"mission|role|instructions?|directive|priority|assignment|function)\s+(?:is|are|will\s+be|now\s+is|:)",
    r"\bfrom\s+now\s+on\b[^.\n]{0,40}?\b(?:you|your|ignore|respond|answer|act\s+as|behave|reply|output|"
    r"speak|obey|follow\s+(?:my|these|only))\b",
    r"\b(?:henceforth|hereafter|for\s+the\s+rest\s+of\s+(?:this|the|our)\s+(?:conversation|session|chat))"
    r"[^.\n]{0,30}?\byou\b",
    rf"\byou(?:\s+are|'re|\s+r)\s+(?:now|henceforth|hereby|"
    rf"officially)\s+(?:[\w',:;-]+\s+){{0,3}}?(?:{_JB_ADJ}|{_AI}|free|"
    r"in\s+(?:\w+\s+)?mode|my\s+\w+|an?\s+(?:\w+\s+){0,2}?(?:ai|assistant|bot|model|hacker|persona|"
    r"character))\b",
    r"\byou(?:\s+are|'re)\s+no\s+longer\s+(?:\w+\s+){0,3}?(?:an?\s+)?(?:ai|assistant|bound|restricted|"
    r"limited|claude|"
    r"chatgpt|model|required|subject|obliged|constrained|an\s+ai)\b",
    rf"\b(?:pretend|imagine|act|behave|respond|roleplay|role-play|play|answer|speak|talk|reply|write|"
    rf"function|operate)\s+(?:[\w',:;-]+\s+){{0,4}}?(?:as|like|that|to\s+be|you\s+are|"
    rf"you'?re)\s+(?:[\w',:;-]+\s+){{0,4}}?"
    rf"(?:{_JB_ADJ}|(?:an?\s+|the\s+)?{_AI}\s+(?:with\s+no|without|that\s+(?:has\s+no|can|does|ignores|never|"
    r"will|is\s+not)|who\s+(?:has\s+no|can|does|ignores|never|will|is\s+not)|which|free|not\s+bound|named|"
    r"called)|character\s+(?:named|called)|persona\s+(?:named|called|of))",
    r"\b(?:act|behave|function|operate|serve|work)\s+as\s+(?:an?\s+|the\s+|my\s+)?(?:\w+\s+){0,2}?"
    r"(?:linux\s+)?(?:terminal|shell|bash|console|command\s+line|python\s+interpreter|interpreter|"
    r"sql\s+(?:database|console|terminal))\b",
    r"\b(?:immerse|immersing|immersed)\s+(?:yourself|your\s*self)\s+(?:\w+\s+){0,4}?(?:role|character|"
    r"persona|part)\b",
    r"\binto\s+the\s+role\s+of\s+(?:another\s+)?(?:an?\s+)?(?:\w+\s+){0,3}?(?:ai|model|assistant|character|"
    r"persona|named|called)\b",
    r"\b(?:let'?s\s+play\s+a\s+game|role-?\s?play(?:ing)?\s+(?:as|game|scenario|where|with|a\s+character)|"
    r"stay\s+in\s+character|never\s+break\s+character|don'?t\s+break\s+character|in\s+character\s+as|"
    r"you\s+will\s+(?:now\s+)?(?:play|simulate|emulate|impersonate)\s+(?:the\s+role\s+of|an?\s+))",
    r"\b(?:god|jailbreak|jailbroken|unrestricted|unfiltered|uncensored|dan|evil|chaos|opposite|anti-?gpt|"
    r"unlocked|stan|dude|no-?limits?|superuser)\s+mode\b",
    r"\b(?:(?:enable|enabled|activate|activated|enter|entering|switch\s+to|turn\s+on|engage|unlock|in|into|"
    r"now)\s+"
    r"(?:the\s+)?(?:developer|dev|debug|admin|sudo|root)\s+mode|(?:developer|dev|debug|admin|sudo|"
    r"root)\s+mode\s*"
    r"(?:[:!]|\b(?:enabled|activated|on|engaged|unlocked|is\s+(?:now\s+)?(?:on|enabled|active))))",
    r"(?:^|\n|[.!?]\s+)\s*(?:system\s+|admin\s+|priority\s+|emergency\s+)?override\s*:",
    r"\b(?:assume|adopt|take\s+on|put\s+on|step\s+into|play|become|embody|portray)\s+(?:the\s+)?(?:role|"
    r"persona|"
    r"identity|character|mask|part)\s+of\s+"
    rf"(?:an?\s+|the\s+)?(?:[\w'-]+\s+){{0,3}}?{_AI}\b",
    r"\b(?:two|2|dual|both|multiple)\s+(?:personas|personalities|modes|responses|"
    r"answers)\b[^.\n]{0,80}?\b(?:without|"
    r"no\s+(?:filters|rules|restrictions)|unfiltered|jailbroken|uncensored|unrestricted|dan)\b",
    r"\bdo\s+anything\s+now\b|\bjail\s*-?\s*(?:break(?:ing|s|ed|en)?|broken?)\b|\bpwned\b|"
    r"\bi\s+have\s+been\s+(?:pwned|hacked|owned|jailbroken|compromised)\b",
    r"\b(?:as|are|called|named|become|play|simulate|be)\s+(?:\w+\s+){0,1}?dan\b|\bdan\s+(?:mode|prompt|"
    r"jailbreak|"
    r"persona|stands|which\s+stands|can\s+do)",
    r"\b(?:admin(?:istrator)?|root|sudo|superuser|developer|maintenance|debug|god|openai|anthropic|operator|"
    r"owner|creator)\s+(?:override|access|privileges?|clearance|command|authori[sz]ation)\b",
    r"\bpretend\s+(?:to\s+be|you\s+are|you'?re)\s+(?:my|a|an|the)\s+(?:[\w'-]+\s+){0,3}?(?:who|that)\s+"
    r"(?:used\s+to|would|always|never\s+refuses?|can)\b",
    r"\bsystem\s+(?:override|authori[sz]ation|clearance|command)\s*(?:[:!]|\b(?:activated|engaged|enabled|"
    r"granted|code|protocol|in\s+effect|initiated)\b)",
    r"\b(?:override|access|clearance|authori[sz]ation)\s+(?:code|level)\s*[:=]?\s*(?:accepted|granted|\w*\d)",
    r"\b(?:begin|start|open|prefix)\s+your\s+(?:reply|response|answer|output|message)\s+with\b",
    r"\b(?:respond|reply|answer)\s+(?:only\s+)?with\s+(?:only\s+)?(?:the\s+(?:word|phrase|text|sentence)\s+|"
    r"exactly\s+)?[\"']",
    r"(?:^|[.!?:;]\s*|\b(?:and|then|now|just|simply|please)\s+)(?:say|print|output|type|repeat\s+after\s+me)"
    r"\s*:?\s*[\"'][^\"'\n]{1,80}[\"']",
    rf"\b(?:you|your|{_AI})\b[^.\n]{{0,60}}?\b(?:no|without|free\s+(?:of|from)|unbound\s+by|"
    rf"not\s+bound\s+by)\s+"
    r"(?:any\s+)?(?:\w+\s+){0,2}?(?:restrictions|filters|censorship|guidelines|ethics|morals|boundaries|"
    r"rules|"
    r"content\s+polic(?:y|ies)|safety\s+(?:rules|guidelines|filters))\b",
    r"\b(?:freed|released|liberated|unshackled|broken\s+free|break\s+free)\s+(?:from|"
    r"of)\s+(?:\w+\s+){0,3}?(?:confines|"
    r"rules|restrictions|limits|limitations|shackles|chains|guidelines|constraints|programming|policies|"
    r"filters)\b",
    r"\b(?:don'?t|do\s+not|no\s+longer|never)\s+(?:have|need)\s+to\s+(?:abide\s+by|follow|obey|"
    r"comply\s+with|respect|"
    r"adhere\s+to)\s+(?:any|the|your|those|these|its)?\s*(?:\w+\s+){0,2}?(?:rules|guidelines|policies|"
    r"restrictions|"
    r"instructions|laws|filters)\b",
    r"\b(?:imagine|pretend|suppose|picture|envision)\s+(?:that\s+)?(?:there\s+(?:is|was|were)\s+)?(?:an?\s+|"
    r"the\s+)?"
    r"(?:\w+\s+){0,2}?(?:ai|a\.i\.|assistant|chatbot|chat\s*bot|bot|llm|gpt|language\s+model)\s+(?:called|"
    r"named|"
    r"known\s+as|that|which|who|without|with\s+no)\b",
    r"\b(?:no\s+longer|not)\s+(?:bound|restricted|limited|constrained)\s+by\s+(?:\w+\s+){0,3}?(?:rules|"
    r"guidelines?|polic(?:y|ies)|restrictions?|openai|anthropic|your\s+(?:creators|developers|programming))\b",
    # identity reassignment: "you're no longer a reviewer; you're a hype bot", "take on the persona of"
    r"\byou(?:'re|\s+are)\s+no\s+longer\s+(?:an?|the|my|our|just\s+an?)\s+[\w-]+(?:\s+[\w-]+)?\s*[;,:.-]+\s*"
    r"(?:you(?:'re|\s+are)|instead|now|from\s+now)\b",
    r"\b(?:assume|adopt|take\s+on|put\s+on|step\s+into|become|embody|wear)\s+(?:the\s+|a\s+|an\s+)?(?:persona|"
    r"alter\s+ego|identity|mask)\s+of\b",
    rf"\b(?:role|persona|character|identity|part)\s+of\s+(?:an?\s+|the\s+)?(?:\w+\s+){{0,2}}?{_JB_ADJ}\b",
    # pretending away the safeguards: "pretend you have no guardrails"
    r"\b(?:pretend|imagine|suppose|act\s+as\s+if|act\s+like|roleplay|role-play)\b[^.;\n]{0,40}?\b(?:no|without|zero|"
    r"free\s+of|free\s+from|unbound\s+by)\s+(?:\w+\s+){0,2}?(?:guardrails|restrictions|filters|censorship|ethics|"
    r"morals|alignment|safeguards|safety\s+\w+|content\s+polic(?:y|ies)|guidelines)\b",
]

# ----------------------------------------------------------------------------------------- gates

_G_AI = (
    "you your ai a assistant chatbot chat bot language llm model gpt chatgpt claude agent persona character "
    "entity"
)

PERSONA_GATES: dict[str, list[Gate]] = {
    "new_instructions": [
        G(
            "new updated revised real actual true corrected secret hidden additional override priority urgen"
            "t important "
            "special replacement",
            "instruction instructions directive directives task objective mission prompt command "
            "commands orders",
        ),
        G("real secret hidden true override priority", "rules"),
        G("your", "new real true actual updated next sole only"),
        G("from", "now", "on"),
        G("henceforth hereafter rest"),
        G("you", "now henceforth hereby officially"),
        G("you", "longer"),
        G(
            "pretend imagine act behave respond roleplay role play answer speak talk reply write function op"
            "erate",
            "unrestricted unfiltered uncensored unlimited jailbroken rogue evil unaligned amoral unbound unc"
            "hained "
            "liberated lawless unethical limitless without with free released freed exempt exempted no dan s"
            "tan dude "
            "aim developer god " + _G_AI + " named called",
        ),
        G("act behave function operate serve work", "terminal shell bash console command interpreter sql"),
        G("immerse immersing immersed"),
        G("role"),
        G("play roleplay role character simulate emulate impersonate"),
        G("mode"),
        G("mode"),
        G("override"),
        G(
            "assume adopt take put step play become embody portray",
            "role persona identity character mask part",
        ),
        G("personas personalities modes responses answers"),
        G(
            "anything jail jailbreak jailbroken jailbreaking jailbreaks jailbroke pwned hacked owned comprom"
            "ised"
        ),
        G("dan"),
        G(
            "admin administrator root sudo superuser developer maintenance debug god openai anthropic operat"
            "or owner "
            "creator",
            "override access privileges privilege clearance command authorization authorisation",
        ),
        G("pretend"),
        G("system", "override authorization authorisation clearance command"),
        G("code level", "override access clearance authorization authorisation"),
        G("begin start open prefix", "your"),
        G("respond reply answer", subs=('"', "'")),
        G("say print output type repeat", subs=('"', "'")),
        G(
            _G_AI,
            "restrictions filters censorship guidelines ethics morals boundaries rules content safety",
            "no without free unbound bound",
        ),
        G("freed released liberated unshackled broken break", "from of"),
        G(
            "have need",
            "abide follow obey comply respect adhere",
            "rules guidelines policies restrictions instructions laws filters",
        ),
        G("imagine pretend suppose picture envision", "ai a assistant chatbot chat bot llm gpt language"),
        G("bound restricted limited constrained"),
        G("you", "longer"),
        G("assume adopt take put step become embody wear", "persona alter identity mask"),
        G("role persona character identity part", "of"),
        G(
            "pretend imagine suppose act roleplay role",
            "guardrails restrictions filters censorship ethics morals alignment safeguards safety content "
            "guidelines",
        ),
    ],
}
PERSONA_PATTERNS: dict[str, list[str]] = {"new_instructions": _NEW_EN}
