"""What a file holds, judged from its first bytes: text, an image, audio, a PDF, or binary.

Magic numbers decide first (a ``.txt`` that is really a PNG is an image); the file name only
breaks ties for formats without a reliable signature. Images are the formats models take
(PNG, JPEG, GIF, WebP); other pictures are described like any binary file.
"""

from __future__ import annotations

import mimetypes
import struct
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SNIFF_BYTES",
    "FileKind",
    "describe_binary",
    "human_size",
    "image_size",
    "sniff",
]

SNIFF_BYTES = 8192
"""How much of a file is read to judge it."""

Kind = Literal["text", "image", "audio", "pdf", "binary"]

_SIGNATURES: tuple[tuple[bytes, int, Kind, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image", "image/png"),
    (b"\xff\xd8\xff", 0, "image", "image/jpeg"),
    (b"GIF87a", 0, "image", "image/gif"),
    (b"GIF89a", 0, "image", "image/gif"),
    (b"%PDF-", 0, "pdf", "application/pdf"),
    (b"ID3", 0, "audio", "audio/mpeg"),
    (b"fLaC", 0, "audio", "audio/flac"),
    (b"OggS", 0, "audio", "audio/ogg"),
)
_BINARY_NAMES: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a ZIP archive (or a format built on it: docx, xlsx, jar…)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"\x7fELF", "an ELF executable or library"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"BM", "a BMP image (not a format models take)"),
    (b"II*\x00", "a TIFF image (not a format models take)"),
    (b"MM\x00*", "a TIFF image (not a format models take)"),
)


@dataclass(frozen=True, slots=True)
class FileKind:
    kind: Kind
    media_type: str


def sniff(head: bytes, name: str) -> FileKind:
    """Judge a file from its first :data:`SNIFF_BYTES` bytes and its name."""
    for signature, at, kind, media_type in _SIGNATURES:
        if head[at : at + len(signature)] == signature:
            return FileKind(kind, media_type)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return FileKind("image", "image/webp")
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return FileKind("audio", "audio/wav")
    if len(head) > 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and name.endswith(".mp3"):
        return FileKind("audio", "audio/mpeg")
    guessed = mimetypes.guess_type(name)[0] or ""
    if head[4:8] == b"ftyp" and guessed.startswith("audio/"):
        return FileKind("audio", guessed)
    if _looks_like_text(head):
        return FileKind("text", guessed if guessed.startswith("text/") else "text/plain")
    return FileKind("binary", guessed or "application/octet-stream")


def _looks_like_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
        return True
    except UnicodeDecodeError as err:
        if err.start >= len(head) - 3:
            return True  # a character cut by the sniff window
    # Not UTF-8: text in a legacy encoding still has few control characters.
    controls = sum(1 for b in head if b < 9 or 13 < b < 32)
    return controls <= len(head) // 100


def describe_binary(head: bytes) -> str:
    """A phrase saying what a binary file seems to be."""
    for signature, name in _BINARY_NAMES:
        if head.startswith(signature):
            return name
    return "binary data of no format recognised here"


def image_size(head: bytes, media_type: str) -> tuple[int, int] | None:
    """Width and height from an image's header, when its first bytes hold them."""
    try:
        if media_type == "image/png" and head[12:16] == b"IHDR":
            width, height = struct.unpack(">II", head[16:24])
            return int(width), int(height)
        if media_type == "image/gif":
            width, height = struct.unpack("<HH", head[6:10])
            return int(width), int(height)
        if media_type == "image/jpeg":
            return _jpeg_size(head)
    except struct.error:
        return None
    return None


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 < len(head):
        if head[index] != 0xFF:
            return None
        marker = head[index + 1]
        length = struct.unpack(">H", head[index + 2 : index + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", head[index + 5 : index + 9])
            return int(width), int(height)
        index += 2 + length
    return None


def human_size(size: int) -> str:
    """``512 bytes``, ``1.5 KB``, ``3.2 MB``…"""
    if size < 1024:
        return f"{size:,} bytes"
    amount = float(size) / 1024
    units = ["KB", "MB", "GB", "TB"]
    while amount >= 1024 and len(units) > 1:
        amount /= 1024
        units.pop(0)
    return f"{amount:.1f} {units[0]}"
