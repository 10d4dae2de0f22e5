"""How the planted secrets fare: detect-secrets alone versus the project's redaction (docs/security.md).

    PYTHONPATH=. python -m tests.safety.secrets_report

"detect-secrets alone" scans each planted value written as JSON (as its file scan would, every default
plugin and filter) and counts a secret as caught when a finding covers every string that must not
survive; "redaction" runs ``redact_value`` and checks that none of them is left.
"""

from __future__ import annotations

import collections
import json
import tempfile
from pathlib import Path

from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings

from tests.safety.planted import held_out, planted
from tradingmem_assets.defs.safety.redaction import find_secrets, redact_value


def detect_secrets_values(value: object, directory: Path) -> list[str]:
    path = directory / "value.json"
    path.write_text(json.dumps(value, indent=1) + "\n")
    with default_settings():
        found = SecretsCollection()
        found.scan_file(str(path))
        return [s.secret_value or "" for _, s in found]


def main() -> None:
    cases = planted()
    caught_by_ds, missed_by_ds = 0, []
    with tempfile.TemporaryDirectory() as d:
        for case in cases:
            values = detect_secrets_values(case.value, Path(d))
            if all(any(s in v or (len(v) >= 8 and v in s) for v in values) for s in case.secrets):
                caught_by_ds += 1
            else:
                missed_by_ds.append(case.name)
    survived = [
        c.name
        for c in cases + held_out()
        if any(s in json.dumps(redact_value(c.value)[0]) for s in c.secrets)
    ]
    detectors = collections.Counter(
        s.detector.split(":")[0] for c in cases for s in find_secrets(json.dumps(c.value))
    )
    print(f"planted formats: {len(cases)} (and the same {len(cases)} again, nested deeper, as a second draw)")
    print(f"detect-secrets alone catches {caught_by_ds}/{len(cases)}; misses: {', '.join(missed_by_ds)}")
    print(f"secrets surviving redaction: {len(survived)} {survived}")
    print(f"spans found in the JSON text by detector: {dict(detectors)}")


if __name__ == "__main__":
    main()
