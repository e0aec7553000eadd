"""The forms a secret takes when a command encodes it: what the redactor must match besides
the value itself.

A command that may print a secret may as well print it encoded — ``base64``, ``xxd -p``,
``rev``, ``tr`` for rot13, ``jq``/``python -c`` for URL or JSON escaping — and a model
decodes any of those at sight. Each form here is one such encoding of the whole value.

Base64 needs three forms per alphabet: inside a longer base64 stream the secret starts at
byte offset 0, 1 or 2 of a 3-byte group, and each offset encodes it to different letters.
For each offset only the letters that depend on the secret's bytes alone are kept (the
first and last one or two letters also carry the neighbouring bytes), so the same form
matches the secret alone, padded or not, and embedded in any stream.
"""

from __future__ import annotations

import base64
import codecs
import json
from urllib.parse import quote, quote_plus

__all__ = ["DERIVED_MIN_CHARS", "derived_forms"]

DERIVED_MIN_CHARS = 12
"""Shortest secret whose encodings are redacted too (its literal form from 8 characters).

Below this the derived forms start to hit ordinary text: the reversed or rot13 form of a
short human password is often an ordinary word, and a short value's base64 core (the
letters that depend on the secret alone, about 4/3 of its length less three) is only a few
letters that random base64 output contains by chance. At 12 the shortest core is 15 letters
of a 64-letter alphabet, and stored API tokens are 20 or more characters anyway."""


def _base64_cores(raw: bytes) -> list[str]:
    cores: list[str] = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        skip = (0, 2, 3)[offset]
        end = (offset + len(raw)) * 8 // 6  # letters whose six bits all come from here
        core = encoded[skip:end]
        cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def derived_forms(secret: str) -> set[str]:
    """The encoded forms of ``secret`` a command can print cheaply, without the value itself.

    Empty for a value shorter than :data:`DERIVED_MIN_CHARS`."""
    if len(secret) < DERIVED_MIN_CHARS:
        return set()
    raw = secret.encode("utf-8")
    hexed = raw.hex()
    forms = {
        *_base64_cores(raw),
        hexed,
        hexed.upper(),
        secret[::-1],
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        codecs.encode(secret, "rot13"),
    }
    forms.discard(secret)
    return {form for form in forms if len(form) >= DERIVED_MIN_CHARS}
