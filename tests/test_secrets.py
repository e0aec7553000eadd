"""The redactor catches a secret in the forms a command prints it: encoded, wrapped, split.

Each case is an evasion a command inside the sandbox could try with a declared credential in
its environment; the forms are produced here with the same encodings the tools use.
"""

from __future__ import annotations

import base64
import codecs
import json
import random
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.secret_forms import DERIVED_MIN_CHARS, derived_forms
from corral.secrets import Redactor

SECRET = "ghp_R3aLt0k3n+/with?odd&chars=Zq9"
RAW = SECRET.encode()


def wrapped(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


ENCODINGS = {
    "base64": base64.b64encode(RAW).decode(),
    "base64 unpadded": base64.b64encode(RAW).decode().rstrip("="),
    "base64url": base64.urlsafe_b64encode(RAW).decode(),
    "base64 offset 1": base64.b64encode(b"x" + RAW).decode(),
    "base64 offset 2": base64.b64encode(b"xy" + RAW + b"tail").decode(),
    "base64url offset 1": base64.urlsafe_b64encode(b"{" + RAW + b"}").decode(),
    "base64 -w 20": wrapped(base64.b64encode(RAW).decode(), 20),
    "base64 -w 20, CRLF": wrapped(base64.b64encode(RAW).decode(), 20).replace("\n", "\r\n"),
    "hex": RAW.hex(),
    "HEX": RAW.hex().upper(),
    "xxd -p": wrapped(RAW.hex(), 60),
    "reversed": SECRET[::-1],
    "url-encoded": quote(SECRET, safe=""),
    "json": json.dumps({"token": SECRET}),
    "rot13": codecs.encode(SECRET, "rot13"),
    "fold -w 1": "\n".join(SECRET),
}


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_each_encoding_of_a_secret_is_redacted(name: str) -> None:
    printed = f"before {ENCODINGS[name]} after"
    shown = Redactor([SECRET])(printed)
    assert "[redacted]" in shown, (name, shown)
    for form in (SECRET, *derived_forms(SECRET)):
        assert form not in shown.replace("\r", "").replace("\n", ""), (name, form, shown)
    assert shown.startswith("before ") and shown.endswith(" after")


def test_what_is_left_of_an_embedded_base64_secret_is_a_letter_or_two() -> None:
    # The letters beside the core also carry the neighbouring bytes: they stay, and tell
    # nothing that the surrounding stream does not.
    stream = base64.b64encode(b"xy" + RAW + b"tail").decode()
    shown = Redactor([SECRET])(stream)
    before, after = shown.split("[redacted]")
    assert len(before) <= len(base64.b64encode(b"xy").decode()) + 1
    assert len(after) <= len(base64.b64encode(b"tail").decode()) + 2


def test_short_secrets_keep_only_their_literal_form() -> None:
    # Below the minimum the encodings would match ordinary text: "password" reversed is
    # "drowssap", but "secret-1" rot13 is "frperg-1", a string a log may well hold.
    short = "a" * (DERIVED_MIN_CHARS - 1)
    assert derived_forms(short) == set()
    assert Redactor([short])(f"{short} {short[::-1]}x") == "[redacted] [redacted]x"
    assert Redactor(["frperg-1"])("secret-1 frperg-1") == "secret-1 [redacted]"


def test_ordinary_output_is_left_alone() -> None:
    rng = random.Random(9)
    noise = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(2000))
    noise += "\n" + rng.randbytes(4000).hex()
    assert Redactor([SECRET, "sk-" + "Q" * 30])(noise) == noise


@pytest.mark.parametrize("name", ["base64 -w 20", "hex", "base64 offset 2", "reversed"])
def test_a_secret_split_across_chunks_is_still_redacted(name: str) -> None:
    printed = f"start {ENCODINGS[name]} end\n"
    redactor = Redactor([SECRET])
    for cut in range(1, len(printed)):
        stream = redactor.stream()
        shown = stream.feed(printed[:cut]) + stream.feed(printed[cut:]) + stream.end()
        assert shown == redactor(printed), (name, cut, shown)


def test_a_stream_passes_output_on_at_once_when_it_cannot_begin_a_secret() -> None:
    stream = Redactor([SECRET]).stream()
    assert stream.feed("Building... ok\n") == "Building... ok\n"
    held = stream.feed("token: ghp_R3a")
    assert held == "token: " and stream.end() == "ghp_R3a"


@given(
    before=st.text(alphabet="abcXYZ019+/=\n", max_size=30),
    after=st.text(alphabet="abcXYZ019+/=\n", max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=4),
    encoding=st.sampled_from(sorted(ENCODINGS)),
)
def test_any_chunking_redacts_like_the_whole_text(
    before: str, after: str, cuts: list[int], encoding: str
) -> None:
    printed = before + ENCODINGS[encoding] + after
    redactor = Redactor([SECRET])
    stream = redactor.stream()
    pieces, start = [], 0
    for cut in sorted(min(c, len(printed)) for c in cuts):
        pieces.append(stream.feed(printed[start:cut]))
        start = cut
    pieces += [stream.feed(printed[start:]), stream.end()]
    assert "".join(pieces) == redactor(printed)
    assert "[redacted]" in "".join(pieces)


def test_a_secret_of_thousands_of_characters_is_redacted_in_every_form() -> None:
    # A private key file or a long JWT: the trie of its forms is one chain thousands deep.
    long_secret = "".join(random.Random(7).choices("ABCDEFabcdef0123456789-_", k=4000))
    raw = long_secret.encode()
    redactor = Redactor([long_secret, SECRET])
    for printed in (long_secret, base64.b64encode(raw).decode(), raw.hex(), long_secret[::-1]):
        shown = redactor(f"<{printed}>")
        # Base64's last group depends on what follows the secret: a letter or two may stay.
        assert shown.startswith("<[redacted]") and len(shown) <= len("<[redacted]>") + 4, shown
    assert redactor(f"<{SECRET}>") == "<[redacted]>"


def test_a_paused_tail_is_shown_and_a_secret_that_follows_is_still_caught() -> None:
    stream = Redactor([SECRET]).stream()
    shown = stream.feed("waiting for " + SECRET[:3])
    assert stream.holding and SECRET[:3] not in shown  # it could begin the secret
    shown += stream.flush()  # the command paused: the tail goes out
    assert shown == "waiting for " + SECRET[:3] and not stream.holding
    shown += stream.feed(SECRET[3:] + " done\n") + stream.end()
    assert SECRET[3:] not in shown and SECRET[3:12] not in shown
    assert shown == "waiting for " + SECRET[:3] + "[redacted] done\n"


def test_a_flushed_tail_that_was_not_a_secret_passes_unchanged() -> None:
    stream = Redactor([SECRET]).stream()
    shown = stream.feed("status: g") + stream.flush()
    shown += stream.feed("ood\n") + stream.end()
    assert shown == "status: good\n"
