"""Path questions: does a word look like a path, and does it reach a protected file?

Protected means the platform's own files (passed in by the caller) and well-known
credential stores. A word matches when, after quote removal, ``~`` expansion, ``..``
collapsing and joining with the current ``cd`` base, it names a protected file or
something inside it, or when its glob could expand to one. Parts that are not
statically known match anything, but then the literal rest must name the protected
file, so ``cat "$DIR/corral.db"`` is caught while ``cat "$f"`` is not.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from corral.shell.analysis._escaped import (
    MARK,
    MARK_NONEMPTY,
    has_unknown,
    is_glob,
    literal_chars,
    literal_prefix,
    quote,
    to_regex,
    unescape,
)
from corral.shell.analysis._types import Chain, resolve_chain

__all__ = [
    "Protection",
    "cancels_a_name",
    "looks_like_path",
    "normalize",
    "protection",
    "split_tokens",
]

_URL = re.compile(r"^[A-Za-z][\w+.-]*://")
_SCP = re.compile(r"^[\w.-]+@[\w.-]+:")
_FILE_LIKE = re.compile(r"^[\w@%+,.-]*[A-Za-z_][\w@%+,-]*\.[A-Za-z][A-Za-z0-9]{0,7}$")


def normalize(path: str) -> str:
    """Lexical normalisation (``.``/``..``/``//``) that keeps a leading ``~``.

    A ``..`` never cancels the ``~`` (or ``~user``) it follows: ``~/../x`` is the parent of a
    home folder, which only the home folder's real path can resolve.
    """
    if not path:
        return path
    if path[0] == "~":
        head, slash, rest = path.partition("/")
        tail = posixpath.normpath(rest.lstrip("/")) if slash and rest.strip("/") else "."
        return head if tail == "." else f"{head}/{tail}"
    out = posixpath.normpath(path)
    if out.startswith("//"):
        out = "/" + out.lstrip("/")
    return out


_CANCELS_A_NAME = re.compile(r"(^|/)(?!\.\.?/)[^/]+/+(\./+)*\.\.(/|$)")


def cancels_a_name(path: str) -> bool:
    """True when a ``..`` follows a name (``link/../x``): lexically it cancels the name, but
    the kernel follows the name first when it is a symlink, and lands elsewhere."""
    return _CANCELS_A_NAME.search(path) is not None


def looks_like_path(value: str) -> bool:
    """Absolute, ``~``-prefixed, containing ``/``, ``.``/``..`` or a file-looking name."""
    if not value or value[0] == "-":
        return False
    if _URL.match(value) or _SCP.match(value):
        return False
    if value[0] in "/~" or value in (".", "..") or "/" in value:
        return True
    return bool(_FILE_LIKE.match(value))


# ---- token splitting -------------------------------------------------------------------

_SEPARATORS = frozenset(" \t\n'\"`()<>|&;=:,{}[]$?#@")
_ALWAYS_SPLIT = frozenset(" \t\n'\"`()<>|&;=:,$@")


def split_tokens(e: str) -> list[str]:
    """Path-ish pieces of a word (for code strings and ``--opt=/path`` forms), escaped."""
    return [token for token in _TOKEN.findall(e) if token]


def _class(chars: frozenset[str], *, negate: bool = False, also: str = "") -> str:
    return "[" + ("^" if negate else "") + also + "".join(re.escape(c) for c in sorted(chars)) + "]"


_KEPT_PAIR = r"\\" + _class(_SEPARATORS, negate=True)
"""A backslash before a non-separator: kept, backslash and all."""
_DROPPED_PAIR = r"\\" + _class(_SEPARATORS)
"""A backslash before a separator: splits, and both characters are dropped."""
_LONE_END = r"\\\Z"
"""A backslash that ends the word: kept."""
_PLAIN = _class(_ALWAYS_SPLIT, negate=True, also=r"\\")
_TOKEN = re.compile(
    # Left to right, each character is part of a token run (a kept pair, a trailing lone
    # backslash or a plain character) or of a separator; findall yields "" for separators.
    f"((?:{_PLAIN}+|{_KEPT_PAIR}|{_LONE_END})+)|{_DROPPED_PAIR}|{_class(_ALWAYS_SPLIT)}+"
)


# ---- protection ------------------------------------------------------------------------

_SENSITIVE_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".azure", ".password-store"})
_SENSITIVE_FILES = frozenset({".netrc", "_netrc", ".git-credentials", ".pgpass"})
_SENSITIVE_FINAL = frozenset({".docker", ".kube"})
_SENSITIVE_PAIRS = (
    (".docker", "config.json"),
    (".kube", "config"),
    (".config", "gcloud"),
    (".config", "gh"),
)
_SENSITIVE_NAMES = tuple(sorted(_SENSITIVE_DIRS | _SENSITIVE_FILES))

_ANCHORED = re.compile(
    r"^(/etc/(g?shadow([-~]|\.\w+)?|sudoers(\.d(/.*)?)?|security/opasswd)"
    r"|/proc/[^/]+(/task/[^/]+)?/(environ|mem)|/proc/kcore"
    r"|(/var)?/run/secrets(/.*)?)$"
)
_ANCHORED_SAMPLES = (
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/sudoers",
    "/etc/sudoers.d/x",
    "/etc/security/opasswd",
    "/proc/self/environ",
    "/proc/1/environ",
    "/proc/self/task/1/environ",
    "/proc/self/mem",
    "/proc/1/mem",
    "/proc/kcore",
    "/run/secrets/x",
    "/var/run/secrets/x",
)
_TRIGGERS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".azure",
    ".password-store",
    "netrc",
    ".git-credentials",
    ".pgpass",
    ".docker",
    ".kube",
    ".config",
    "shadow",
    "sudoers",
    "opasswd",
    "environ",
    "mem",
    "kcore",
    "secrets",
)
_SUFFIXES = ("", "/x", "-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class Protection:
    """The protected set for one home folder and list of platform paths."""

    home: str | None
    platform: tuple[str, ...]
    triggers: re.Pattern[str]
    """Substrings (any case) a literal word must hold to be worth a full check."""
    ascii_triggers: re.Pattern[str] | None
    """The same substrings, case-sensitive, for the lowered text of an ASCII word (several
    times faster); ``None`` when a substring is not ASCII, whose case folding only
    :attr:`triggers` knows."""
    platform_re: re.Pattern[str] | None
    samples: tuple[tuple[str, str], ...]
    """Concrete protected paths and their last names, matched against globs."""

    def inside_platform(self, path: str) -> str | None:
        """The platform path that ``path`` (absolute, static) equals or lies inside."""
        if self.platform_re is None:
            return None
        match = self.platform_re.match(path)
        return match.group(1) if match else None

    def check(self, e: str, chains: Iterable[Chain], cwd: str | None) -> str | None:
        """What protected file the escaped word ``e`` reaches, or ``None``."""
        wild = is_glob(e) or has_unknown(e)
        if not wild and not self._triggered(e if "\\" not in e else literal_chars(e)):
            return None
        for candidate in self._candidates(e, chains, cwd):
            hit = self._components(candidate) or self._anchored(candidate, wild)
            if hit:
                return hit
        return None

    def _triggered(self, text: str) -> bool:
        if self.ascii_triggers is not None and text.isascii():
            return self.ascii_triggers.search(text.lower()) is not None
        return self.triggers.search(text) is not None

    def _candidates(self, e: str, chains: Iterable[Chain], cwd: str | None) -> list[str]:
        if e.startswith(("/", "~", MARK, MARK_NONEMPTY)) or cwd is None:
            return [normalize(e)]
        out: list[str] = [normalize(e)]
        for chain in chains:
            base = resolve_chain(cwd, chain)
            joined = MARK + "/" + e if base is None else quote(base) + "/" + e
            candidate = normalize(joined)
            if candidate not in out:
                out.append(candidate)
        return out

    def _components(self, candidate: str) -> str | None:
        parts = candidate.split("/")
        last = len(parts) - 1
        for index, part in enumerate(parts):
            if not part:
                continue
            for name in _matching_names(part):
                if name in _SENSITIVE_DIRS or name in _SENSITIVE_FILES:
                    return "~/" + name
                if name in _SENSITIVE_FINAL and index == last:
                    return "~/" + name
                if index < last:
                    for first, second in _SENSITIVE_PAIRS:
                        if name == first and second in _matching_names(parts[index + 1]):
                            return f"~/{first}/{second}"
        return None

    def _anchored(self, candidate: str, wild: bool) -> str | None:
        if not wild:
            value = unescape(candidate)
            if value is None or not value.startswith(("/", "~")):
                return None
            value = value.rstrip("/") or "/"
            if _ANCHORED.match(value):
                return value
            return self.inside_platform(value)
        if not candidate.startswith(("/", "~", MARK, MARK_NONEMPTY)):
            return None
        # Only a sample that starts like the pattern can match it: skip the regex for the rest
        # (and build it only for a sample that gets that far).
        prefix = literal_prefix(candidate)
        starting = [pair for pair in self.samples if pair[0].startswith(prefix)]
        if not starting:
            return None
        literal = literal_chars(candidate)
        unknown = has_unknown(candidate)
        regex = to_regex(candidate)
        for sample, name in starting:
            if unknown and name not in literal:
                continue
            if regex.fullmatch(sample):
                return sample if sample in _ANCHORED_SAMPLES else self.inside_platform(sample)
        return None


def _sample_name(sample: str) -> str:
    return posixpath.basename(sample[:-2] if sample.endswith("/x") else sample)


_SENSITIVE_ALL = frozenset(
    _SENSITIVE_NAMES + tuple(_SENSITIVE_FINAL) + tuple(n for pair in _SENSITIVE_PAIRS for n in pair)
)


@lru_cache(maxsize=8192)
def _matching_names(part: str) -> frozenset[str]:
    """Sensitive names a single path component could be (a glob needs a literal char)."""
    value = unescape(part)
    if value is not None and not is_glob(part):
        lowered = value.lower()
        return frozenset({lowered}) & _SENSITIVE_ALL
    if not literal_chars(part).strip("."):
        return frozenset()
    regex = to_regex(part)
    return frozenset(name for name in _SENSITIVE_ALL if regex.fullmatch(name))


@lru_cache(maxsize=64)
def protection(home: str | None, platform: tuple[str, ...]) -> Protection:
    """The (cached) protection for a home folder and platform paths."""
    expanded: list[str] = []
    for raw in platform:
        if not raw:
            continue
        path = raw
        if home and (path == "~" or path.startswith("~/")):
            path = home + path[1:]
        path = normalize(path).rstrip("/") or "/"
        if path not in expanded:
            expanded.append(path)
    triggers = list(_TRIGGERS)
    for path in expanded:
        base = posixpath.basename(path).lower()
        if base and base not in triggers:
            triggers.append(base)
    words = "|".join(re.escape(t) for t in triggers)
    trigger_re = re.compile(words, re.IGNORECASE)
    ascii_re = re.compile(words.lower()) if words.isascii() else None
    samples = _ANCHORED_SAMPLES + tuple(p + x for p in expanded for x in _SUFFIXES)
    platform_re = None
    if expanded:
        alternatives = "|".join(re.escape(p) for p in sorted(expanded, key=len, reverse=True))
        platform_re = re.compile(rf"^({alternatives})(?:/.*|-wal|-shm|-journal)?$", re.DOTALL)
    return Protection(
        home,
        tuple(expanded),
        trigger_re,
        ascii_re,
        platform_re,
        tuple((sample, _sample_name(sample)) for sample in samples),
    )


def platform_sequence(paths: Sequence[str]) -> tuple[str, ...]:
    """Normalise the caller's sequence into a hashable tuple."""
    return tuple(str(p) for p in paths)
