"""Choosing the character encoding of a body and decoding it.

Order of evidence: a byte-order mark (unambiguous, so it wins, as browsers do), the
``charset`` parameter of the Content-Type, an in-document declaration (``<meta charset>``,
``http-equiv`` or the XML declaration) in the first few kilobytes, then valid UTF-8, then
windows-1252 (what browsers assume for undeclared legacy pages).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["Decoded", "decode_body"]

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Python codecs that decode bytes but are not character sets a server could mean.
_NOT_CHARSETS = frozenset(
    {"idna", "punycode", "raw-unicode-escape", "unicode-escape", "undefined", "mbcs", "oem"}
)

# Labels browsers read as a superset encoding, which decodes what the page really holds
# (pages labelled latin-1 routinely contain windows-1252 quotes and dashes).
_SUPERSETS = {
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
    "tis-620": "cp874",
}

_PRESCAN_BYTES = 4096
_DECLARATION = re.compile(
    rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})"""
    rb"""|<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})""",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Decoded:
    """A decoded body and how its encoding was chosen."""

    text: str
    encoding: str
    """Python codec name used."""
    source: str
    """Where the encoding came from: bom, content-type, declaration, utf-8 or fallback."""
    notes: tuple[str, ...] = ()


def decode_body(body: bytes, declared_charset: str | None) -> Decoded:
    """Decode ``body`` using the best evidence available (see the module docstring)."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            text = body[len(bom) :].decode(bom_codec, errors="replace")
            return Decoded(text=text, encoding=bom_codec, source="bom")
    notes: list[str] = []
    if declared_charset:
        header_codec = _codec(declared_charset)
        if header_codec is None:
            notes.append(f"unknown charset {declared_charset!r} in Content-Type was ignored")
        else:
            return _decode_declared(body, header_codec, declared_charset, "content-type", notes)
    match = _DECLARATION.search(body, 0, _PRESCAN_BYTES)
    if match:
        label = (match.group(1) or match.group(2)).decode("ascii")
        document_codec = _codec(label)
        if document_codec is not None and document_codec.startswith(("utf-16", "utf-32")):
            # A document that could be scanned as ASCII to find this label is not UTF-16/32.
            document_codec = "utf-8"
        if document_codec is None:
            notes.append(f"unknown charset {label!r} declared in the document was ignored")
        else:
            return _decode_declared(body, document_codec, label, "declaration", notes)
    try:
        return Decoded(text=body.decode("utf-8"), encoding="utf-8", source="utf-8", notes=(*notes,))
    except UnicodeDecodeError:
        text = body.decode("cp1252", errors="replace")
        return Decoded(text=text, encoding="cp1252", source="fallback", notes=(*notes,))


def _codec(label: str) -> str | None:
    """The Python codec for a charset label, or None when it is not a usable charset."""
    try:
        info = codecs.lookup(label.strip().strip("\"'"))
    except LookupError:
        return None
    if info.name in _NOT_CHARSETS or not getattr(info, "_is_text_encoding", True):
        return None
    return _SUPERSETS.get(info.name, info.name)


def _decode_declared(body: bytes, name: str, label: str, source: str, notes: list[str]) -> Decoded:
    if name == "cp1252" and not body.isascii():
        # A legacy single-byte label on a body that is valid UTF-8 is nearly always a server
        # default left unchanged: multi-byte UTF-8 sequences do not occur by chance in
        # windows-1252 text.
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            notes.append(f"declared charset {label!r} but the body is valid UTF-8; read as UTF-8")
            return Decoded(text=text, encoding="utf-8", source="utf-8", notes=(*notes,))
    try:
        text = body.decode(name)
    except UnicodeDecodeError:
        text = body.decode(name, errors="replace")
        bad = text.count("\ufffd")
        notes.append(
            f"the body is not valid {label!r}: {bad} undecodable byte sequence(s) were replaced"
        )
    return Decoded(text=text, encoding=name, source=source, notes=(*notes,))
