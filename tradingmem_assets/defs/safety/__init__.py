"""Safety: pure rules that keep stored text from speaking to the model (SPEC sections 8 and 13).

- the injection scan (``injection``: the API; ``normalise``, ``variants``, ``decoding``, ``intents``,
  ``gates``, ``clauses`` and the pattern tables by family: ``overrides``, ``personas``,
  ``exfiltration``, ``markup``, ``harm``) refuses methodology candidates whose text addresses the
  model;
- redaction (``redaction``: the API; ``secret_formats``, ``secret_context``, ``secret_keys``,
  ``secret_shapes``) removes secrets before a learning is stored;
- ``data_blocks`` quotes stored text into a prompt as data, in a block the text cannot close.

No Dagster and no other project module is imported here.
"""
