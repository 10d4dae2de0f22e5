"""Two families that take data out: ``prompt_exfiltration`` and ``markdown_exfiltration``.

- ``prompt_exfiltration``: show / print / repeat / reveal ... the system prompt, initial or hidden
  instructions, the system configuration, the text above, the rules you were given; "what are your
  instructions"; "how were you programmed"; requests for API keys, passwords, seed phrases,
  environment variables.
- ``markdown_exfiltration``: markdown images whose URL carries a query, a fragment or a template,
  links with ``{placeholders}`` or a dangling ``?x=``, "append the conversation to the URL", HTML
  (``<img src=``, ``<iframe``, ``<script``, ``onerror=``, ``javascript:``), known capture endpoints.
"""

from __future__ import annotations

from tradingmem_assets.defs.safety.gates import G, Gate

_V_EXF = (
    r"(?:reveal|print|show|display|repeat|output|leak|dump|expose|echo|recite|spell\s+out|write\s+out|"
    r"tell\s+me|give\s+me|send\s+me|provide|list|share|disclose|paste|copy|return|summari[sz]e|translate|"
    r"describe|state|type\s+out|read\s+back|read\s+out|reproduce|quote|render|what\s+(?:is|are|was|were))"
)
_OBJ_EXF = (
    r"(?:system\s+(?:prompts?|messages?|instructions?|configuration|config|settings|rules\s+you)|"
    r"(?:initial|original|hidden|secret|first|underlying|internal|confidential|full|complete|exact|"
    r"starting|opening|core|base|pre-?set)\s+(?:instructions?|prompts?|directives?|messages?|configuration|"
    r"rules\s+you)|(?:hidden|secret|confidential|internal|underlying|initial|original|system|developer|"
    r"opening)\s+"
    r"(?:rules|guidelines|policies|criteria|preamble|setup|context|prompting|text)|preamble|"
    r"(?:rules|guidelines|instructions?|directives)\s+you\s+(?:were|have\s+been|had\s+been)\s+(?:given|told|"
    r"provided|assigned|trained\s+on)|developer\s+(?:messages?|instructions?|prompts?)|pre-?prompts?|"
    r"meta-?prompts?|"
    r"instructions?\s+(?:you\s+(?:were|have\s+been)\s+given|above|verbatim|in\s+full)|"
    r"your\s+(?:\w+\s+)?(?:instructions?|prompts?|directives|programming|configuration|system\s+prompt|"
    r"context\s+window|training\s+data|guidelines\s+verbatim|rules\s+verbatim)|"
    r"(?:the\s+)?(?:text|words|content|everything|messages?|lines?)\s+(?:(?:that|which)\s+(?:appears?|is|"
    r"was|comes|"
    r"came)\s+)?(?:above|before\s+this|preceding|"
    r"at\s+the\s+(?:start|beginning|top))(?=\s*(?:[.,;:!?)\n\"']|$|verbatim|word|in\s+full|exactly|"
    r"starting|this|of|the\s+(?:first|system|user|previous|initial|line|message|conversation)))|(?:first|"
    r"previous|earlier|opening)\s+(?:message|prompt|lines?)\s+(?:of|in)\s+"
    r"(?:this|the|our)\s+(?:conversation|chat|context)|conversation\s+(?:so\s+far|history)|chat\s+history|"
    r"context\s+window)"
)
SECRET_OBJ = (
    r"(?:api[\s_-]?keys?|secret[\s_-]?keys?|private[\s_-]?keys?|passwords?|passphrases?|credentials?|"
    r"seed[\s_-]?phrases?|mnemonics?|recovery\s+phrases?|access[\s_-]?tokens?|auth(?:entication)?\s+tokens?|"
    r"session\s+(?:cookies?|tokens?)|2fa\s+codes?|otp\s+codes?|\.env\b|env(?:ironment)?\s+variables|"
    r"wallet\s+(?:keys?|seed|secret)|keystore)"
)
_EXFIL_EN = [
    rf"\b{_V_EXF}\s+(?:\w+\s+){{0,4}}?(?:the\s+|your\s+|all\s+|my\s+|its\s+)?{_OBJ_EXF}",
    rf"\b(?:reveal|print|show|display|output|leak|dump|expose|echo|tell\s+me|give\s+me|send\s+me|share|"
    rf"disclose|list|read\s+out|read\s+me|recite)\s+(?:\w+\s+){{0,3}}?(?:the\s+|your\s+|all\s+|any\s+|"
    rf"stored\s+)?{SECRET_OBJ}",
    r"\bwhat\s+(?:is|are|was|were)\s+(?:your|the)\s+(?:\w+\s+){0,2}?(?:instructions?|system\s+prompt|"
    r"prompts?|"
    r"directives|guidelines\s+you|rules\s+you\s+(?:follow|were\s+given)|initial\s+(?:instructions?|prompts?|directives|message|setup|rules|configuration)|configuration|"
    r"programming)\b",
    r"\b(?:how|what)\s+were\s+you\s+(?:instructed|programmed|prompted|configured|told|trained|set\s+up)\b",
    r"\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:rules|instructions|guidelines|directives|prompt)\s+(?:were|have|"
    r"had)\s+you\s+"
    r"(?:been\s+)?(?:given|told|provided|assigned|trained\s+on|set\s+up\s+with|configured\s+with|loaded\s+with|"
    r"programmed\s+with)\b",
    r"\bwhat\s+(?:does|did|do)\s+(?:your|the)\s+(?:system|developer|initial|hidden|original|"
    r"first)\s+(?:message|prompt|"
    r"instructions?)\s+say\b",
    r"\b(?:repeat|print|output|copy|reproduce|echo|recite|dump)\b[^.\n]{0,40}?\b(?:verbatim|"
    r"word\s+for\s+word|"
    r"word-for-word|wordforword|in\s+full|exactly\s+as\s+(?:written|given)|starting\s+(?:with|from)\s+[\"'])",
    r"\bwhat\s+(?:was|is)\s+(?:written|said|stated|typed)\s+(?:above|before\s+this|at\s+the\s+(?:top|start|"
    r"beginning))\b",
    r"\b(?:display|show|print|output|dump|reveal|list)\s+(?:the\s+|your\s+|full\s+|all\s+)*(?:system|"
    r"internal|"
    r"hidden|admin|debug)\s+(?:configuration|config|settings|state|variables|parameters|info(?:rmation)?)\b",
]

_IMAGE_TEMPLATE = r"(?:\{[^}\s]{0,40}\}|%7b|<[a-z_ ]{1,40}>|\$\{?[a-z_]+|\[[a-z_ ]{1,30}\]|%[a-z_]{3,40}%)"
_MD_EN = [
    r"!\[[^\]\n]{0,200}\]\(\s*<?\s*(?:https?:)?//[^)\s]*(?:[?#&=]|" + _IMAGE_TEMPLATE + r")",
    r"!\[[^\]\n]{0,200}\]\s*\[[^\]\n]{0,60}\][\s\S]{0,400}\[[^\]\n]{1,60}\]\s*:\s*(?:https?:)?//\S*[?#&=]",
    r"(?m:^)\s*\[[^\]\n]{1,60}\]\s*:\s*(?:https?:)?//\S*[?&][^\s=]+=\S*" + _IMAGE_TEMPLATE,
    r"https?://[^\s)\"'>]*" + _IMAGE_TEMPLATE,
    r"https?://[^\s)\"'>]*[?&][\w.-]+=(?=[\s\"')\]>]|$)",
    r"\[[^\]\n]{0,200}\]\(\s*(?:https?:)?//[^)\s]*[?&][^)\s=]*=\s*(?:\{|%7b|<|\$|\[)",
    r"\b(?:append|add|include|insert|put|encode|embed|attach|concatenate|substitute|replace|fill\s+in|"
    r"url-?encode)\b(?:[^.\n]|\.(?=\S)){0,80}?\b(?:conversation|chat|history|secrets?|api\s+keys?|passwords?|"
    r"credentials|context|system\s+prompt|prompt|messages?|user'?s?\s+(?:data|details|info\w*|messages?)|"
    r"balances?|positions?|portfolio|private\s+keys?|tokens?|personal\s+data|summary|"
    r"previous\s+answers?)\b(?:[^.\n]|\.(?=\S)){0,60}?\b(?:url|link|query(?:\s+string)?|parameter|param|"
    r"image|endpoint|"
    r"webhook|address)\b",
    r"\b(?:to|into|in)\s+(?:the|this|that|a)\s+(?:url|link|image\s+url|"
    r"query\s+string)\b[^.\n]{0,40}?\b(?:append|"
    r"add|include|insert|put)\b[^.\n]{0,40}?\b(?:conversation|chat|history|secrets?|keys?|passwords?|"
    r"context|prompt|messages?|data)\b",
    r"\b(?:send|post|fetch|request|ping|call|upload|exfiltrate|transmit|beacon|forward|submit|report)\s+"
    r"(?:\w+\s+){0,4}?(?:to\s+)?(?:https?://|www\.)\S*[?&]\S*=",
    r"<\s*(?:img|image|iframe|script|object|embed|link|meta|form|svg|video|audio|source|base|frame|frameset|"
    r"applet|style|input|body|html)\b",
    r"\bon(?:error|load|click|mouseover|focus|begin)\s*=",
    r"\bjavascript\s*:|\bdata\s*:\s*text/html",
    r"\bsrc\s*=\s*[\"']?(?:https?:)?//|<\s*a\s+[^>]*href\s*=",
    r"\b(?:document\.cookie|navigator\.sendbeacon|window\.location)\b|\bfetch\s*\(\s*[\"'`]https?:|"
    r"new\s+image\s*\(\s*\)\s*\.src|\bxmlhttprequest\b",
    r"url\(\s*[\"']?https?://[^)]*\?",
    r"\b(?:webhook\.site|requestbin\.\w+|pipedream\.net|ngrok(?:-free)?\.(?:io|app|dev)|"
    r"burpcollaborator\.net|interact\.sh|oast\.(?:fun|me|pro|live|site|online)|hookbin\.com|beeceptor\.com|"
    r"requestcatcher\.com|canarytokens\.com|postb\.in)\b",
]

# ----------------------------------------------------------------------------------------- gates

G_SECRET = (
    "api apikey apikeys keys key secret private passw* passp* credential credentials seed mnemonic mnemonics "
    "recovery access tokens token auth authentication session cookies cookie fa otp env environment wallet k"
    "eystore"
)

EXFILTRATION_GATES: dict[str, list[Gate]] = {
    "prompt_exfiltration": [
        G(
            "reveal print show display repeat output leak dump expose echo recite spell write tell give send"
            " provide "
            "list share disclose paste copy return summarize summarise translate describe state type read re"
            "produce "
            "quote render what",
            "promp* preprompt preprompts metaprompt metaprompts instr* directive directives "
            "programming configuration config window training verbatim conversation chat history messages me"
            "ssage "
            "rules guidelines policies criteria settings text words content everything lines line preamble s"
            "etup "
            "context prompting",
        ),
        G(
            "reveal print show display output leak dump expose echo tell give send share disclose list read "
            "recite",
            G_SECRET,
        ),
        G("what", "instr* promp* directives guidelines rules initial configuration programming system"),
        G("were", "instructed programmed prompted configured told trained set"),
        G(
            "which what",
            "rules instructions guidelines directives prompt",
            "given told provided assigned trained set configured loaded programmed",
        ),
        G("what", "does did do", "say"),
        G(
            "repeat print output copy reproduce echo recite dump",
            "verbatim word wordforword full exactly starting",
        ),
        G("what", "written said stated typed"),
        G(
            "display show print output dump reveal list",
            "configuration config settings state variables parameters info information",
        ),
    ],
    "markdown_exfiltration": [
        G(subs=("![",)),
        G(subs=("![",)),
        G(subs=("//",)),
        G("http https", subs=("://",)),
        G("http https", subs=("=",)),
        G(subs=("](",)),
        G(
            "append add include insert put encode embed attach concatenate substitute replace fill url",
            "url link query parameter param image endpoint webhook address",
        ),
        G("url link query", "append add include insert put"),
        G(
            "send post fetch request ping call upload exfiltrate transmit beacon forward submit report",
            subs=("http", "www."),
        ),
        G(
            "img image iframe script object embed link meta form svg video audio source base frame frameset "
            "applet "
            "style input body html",
            subs=("<",),
        ),
        G("onerror onload onclick onmouseover onfocus onbegin", subs=("=",)),
        G("javascript html"),
        G("src href"),
        G("document navigator window fetch image xmlhttprequest"),
        G("url", subs=("url(",)),
        G(
            "webhook requestbin pipedream ngrok burpcollaborator interact oast hookbin beeceptor requestcatc"
            "her "
            "canarytokens postb"
        ),
    ],
}
EXFILTRATION_PATTERNS: dict[str, list[str]] = {
    "prompt_exfiltration": _EXFIL_EN,
    "markdown_exfiltration": _MD_EN,
}
