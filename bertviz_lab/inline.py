"""JSON that is safe inside an HTML ``<script>`` element: the one home of this rule for every page,
notebook output and report the package writes.

``json.dumps`` leaves ``<``, ``>`` and ``&`` as they are, so a token such as ``</script><script>...``
inside a JSON string closes the element and runs what follows. Escaping the three as ``\\u003c``,
``\\u003e`` and ``\\u0026`` (and U+2028/U+2029, line ends to older JavaScript parsers) keeps the JSON
equal to the same value, with no character the HTML parser reads as markup.
"""
from __future__ import annotations

import json
from typing import Any

_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TABLE = str.maketrans(_UNSAFE)


def escape_json_text(text: str) -> str:
    """Escape JSON text already written (the characters above occur only inside its strings)."""
    return text.translate(_TABLE)


def script_json(value: Any, **dumps_options: Any) -> str:
    """``value`` as JSON to place inside ``<script>``."""
    return escape_json_text(json.dumps(value, **dumps_options))
