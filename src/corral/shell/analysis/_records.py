"""What the gate receives: commands, their paths and redirects, ``cd`` moves; and the
per-word checks made while recording (protected paths, block devices)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Literal

from corral.shell.analysis._consumed import is_consumed
from corral.shell.analysis._escaped import is_glob, literal_chars, quote, to_pyglob
from corral.shell.analysis._paths import (
    Protection,
    cancels_a_name,
    looks_like_path,
    normalize,
    split_tokens,
)
from corral.shell.analysis._refusal import Refused, refuse
from corral.shell.analysis._state import Bases, Call, Loc, Redir
from corral.shell.analysis._tables import SAFE_DEVICES, is_block_device
from corral.shell.analysis._types import (
    Access,
    CdMove,
    Chain,
    Command,
    PathRef,
    Redirect,
    resolve_chain,
)
from corral.shell.analysis._words import ResolvedWord, expand_tilde, public_word

__all__ = ["Origin", "Recorder", "chains_of", "produced_text"]

Origin = Literal["argument", "redirect", "cd", "option"]
_TOKEN_HINTS = re.compile(r"[\s'\"`()<>|&;=:,$@?#]")


@lru_cache(maxsize=1024)
def chains_of(bases: frozenset[Loc], chdir: Chain = ()) -> tuple[Chain, ...]:
    """The distinct cwd chains of ``bases``, each extended by a command-local ``chdir``."""
    out: list[Chain] = []
    for loc in sorted(bases, key=lambda loc: (len(loc.cwd), repr(loc.cwd))):
        chain = loc.cwd + chdir
        if chain not in out:
            out.append(chain)
    return tuple(out) or ((),)


class Recorder:
    """Collects the extracted commands and paths; refuses protected and device paths."""

    def __init__(
        self,
        *,
        home: str | None,
        cwd: str | None,
        protection: Protection,
        unconfined: bool,
        allowed: tuple[tuple[str, ...], ...] = (),
    ) -> None:
        self.home = home
        self.cwd = cwd
        self.unconfined = unconfined
        """No kernel sandbox will contain the command: refuse what cannot be known."""
        self.allowed = allowed
        """The admin's allowed invocations: argv prefixes whose unreadable code may run."""
        self.appended: set[int] = set()
        """Ids of written refs that add to a file (``>>``, ``tee -a``), not replace it."""
        self.unreadable: Refused | None = None
        """The first refusal of code the analysis cannot read, raised when the walk ends."""
        self.protection = protection
        self.commands: list[Command] = []
        self.paths: list[PathRef] = []
        self.cd_moves: list[CdMove] = []
        self.writes: list[tuple[PathRef, str | None]] = []
        """Files this command line writes, with their content when it is literal."""
        self.consumed_writes: list[tuple[PathRef, str | None]] = []
        """The writes to files programs read commands from (makefiles, start-up files…)."""
        self.own_pids: set[str] = set()
        """Variables only ever set to ``$!`` or ``$$``: process ids of the command's own jobs."""
        self.not_own: set[str] = set()
        self.last_output: str | None = None
        """What the command recorded last prints, when literal (for the pipe it feeds)."""
        self.output_sets = 0
        """How often :attr:`last_output` was set."""
        self._reached: dict[tuple[str, tuple[Chain, ...]], str | None] = {}
        """What each escaped word reaches from each set of ``cd`` chains, worked out once:
        the rest of what it depends on (home, cwd, protected paths) is fixed per recorder."""
        self.looked_back = [0, 0, 0, 0]
        """How often a check read what earlier commands left here: :attr:`writes` (beyond
        its own command's), :attr:`consumed_writes`, the process-id variables and
        :attr:`last_output` (before its own command set it), in this order."""

    # -- checks ----------------------------------------------------------------------------

    def scan_word(self, word: ResolvedWord, bases: Bases, chdir: Chain = ()) -> None:
        """Refuse a word that reaches a protected file, itself or through a piece of it."""
        chains = chains_of(bases, chdir)
        key = (word.escaped, chains)
        if key in self._reached:
            hit = self._reached[key]
        else:
            hit = self._reached[key] = self._reaches(word.escaped, chains)
        if hit:
            refuse(
                "protected_path",
                word.text,
                f"{word.text!r} reaches {hit}, which holds credentials or the platform's own "
                "data and is off limits to commands; leave it out.",
            )

    def _reaches(self, e: str, chains: tuple[Chain, ...]) -> str | None:
        hit = self.protection.check(e, chains, self.cwd)
        if hit is None and _TOKEN_HINTS.search(e):
            for token in split_tokens(e):
                if token != e:
                    hit = self.protection.check(expand_tilde(token, self.home), chains, self.cwd)
                    if hit:
                        break
        return hit

    def scan_text(self, text: str, origin: str, bases: Bases) -> None:
        """Scan code or data handed to an interpreter for protected paths."""
        self.scan_word(ResolvedWord(origin, quote(text)), bases)

    def check_device(self, word: ResolvedWord) -> None:
        """Refuse disks, partitions and raw memory, read or written."""
        value = word.value
        if value is None or "/dev/" not in value:
            return
        path = normalize(value)
        if path not in SAFE_DEVICES and is_block_device(path):
            refuse(
                "block_device",
                word.text,
                f"{word.text!r} is a disk, partition or raw memory device; commands may not "
                "read or write devices directly.",
            )

    # -- paths -----------------------------------------------------------------------------

    def path_ref(
        self,
        word: ResolvedWord,
        access: Access,
        origin: Origin,
        command: str,
        bases: Bases,
        chdir: Chain,
    ) -> PathRef | None:
        """The gate's view of one path word (``None`` for harmless devices)."""
        value = word.value
        glob = is_glob(word.escaped)
        path: str | None
        if value is None:
            path = None
        elif glob:
            value = to_pyglob(word.escaped)
            path = normalize(value) if value else None
        else:
            path = normalize(value)
        if path is not None and (path in SAFE_DEVICES or path.startswith("/dev/fd/")):
            return None
        chains = chains_of(bases, chdir)
        resolved: tuple[str, ...] = ()
        if path is not None and self.cwd is not None:
            resolved = _resolve_all(path, chains, self.cwd, self.home)
        physical: tuple[str, ...] = ()
        if resolved and value and cancels_a_name(value):
            physical = _physical(value, chains, self.cwd, self.home)
        return PathRef(
            text=word.text,
            path=path,
            access=access,
            origin=origin,
            command=command,
            glob=glob,
            bases=chains,
            resolved=resolved,
            physical=physical,
        )

    def record_redirects(self, redirs: Sequence[Redir], command: str, bases: Bases) -> None:
        """Paths of redirects that belong to no single command (``{ …; } > out``)."""
        for redir in redirs:
            if redir.access is not None:
                ref = self.path_ref(redir.word, redir.access, "redirect", command, bases, ())
                if ref is not None:
                    self.paths.append(ref)
                    if ref.access == "write":
                        self._written(ref, None)

    def clear_output(self) -> None:
        """Forget what the last command printed (a new pipeline stage starts).

        A method, not an assignment at the call site: there the type checker would keep
        :attr:`last_output` narrowed to ``None`` across the stage's walk, which sets it.
        """
        self.last_output = None
        self.output_sets += 1

    def record(
        self,
        call: Call,
        base: str,
        *,
        mutating: bool,
        targets: Sequence[tuple[ResolvedWord, Access]] = (),
        skip: Iterable[int] = (),
        text_only: bool = False,
        chdir: Chain = (),
        function: bool = False,
    ) -> Command:
        """Record a command; ``skip`` lists argv indexes that are not paths."""
        chdir = call.chdir + chdir
        skipped = set(skip)
        refs: list[PathRef] = []
        for word, access in [*targets, *call.extra_paths]:
            ref = self.path_ref(word, access, "argument", base, call.bases, chdir)
            if ref is not None:
                refs.append(ref)
        if not text_only:
            for index, word in enumerate(call.argv[1:], start=1):
                if index not in skipped:
                    ref = self._implicit_path(word, base, call.bases, chdir)
                    if ref is not None:
                        refs.append(ref)
        redirects: list[Redirect] = []
        for redir in call.redirects:
            if redir.access is None:
                continue
            redirects.append(
                Redirect(
                    operator=redir.operator,
                    fd=redir.fd,
                    target=public_word(redir.word),
                    access=redir.access,
                )
            )
            ref = self.path_ref(redir.word, redir.access, "redirect", base, call.bases, chdir)
            if ref is not None:
                refs.append(ref)
                if redir.operator not in (">", ">|", "&>"):
                    self.appended.add(id(ref))
        if base == "tee" and any((w.value or "").startswith(("-a", "--a")) for w in call.argv):
            self.appended.update(id(ref) for ref in refs)
        produced = produced_text(call, base) if base in _PRINTERS else None
        self.last_output = produced
        self.output_sets += 1
        for ref in refs:
            if ref.access == "write" and (ref.origin == "redirect" or base not in _KEEP_CONTENT):
                literal = ref.origin == "redirect" or base == "tee"
                self._written(ref, produced if literal else None)
        command = Command(
            name=base,
            argv=tuple([public_word(w) for w in call.argv]),
            wrappers=call.wrappers,
            mutating=mutating or any(r.access == "write" for r in redirects),
            paths=tuple(refs),
            redirects=tuple(redirects),
            dynamic_args=call.dynamic_args,
            depth=call.frame.depth,
            function=function,
        )
        self.commands.append(command)
        self.paths.extend(refs)
        return command

    def _implicit_path(
        self, word: ResolvedWord, base: str, bases: Bases, chdir: Chain
    ) -> PathRef | None:
        value = word.value
        if value is None:
            if literal_chars(word.escaped).startswith("-"):
                return None
            return self.path_ref(word, "read", "argument", base, bases, chdir)
        if value.startswith("--") and "=" in value:
            name, _, tail = value.partition("=")
            if tail.startswith(("/", "~")) or "/" in tail:
                inner = ResolvedWord(word.text, word.escaped[len(name) + 1 :])
                return self.path_ref(inner, "read", "option", base, bases, chdir)
            return None
        if looks_like_path(value) or (is_glob(word.escaped) and not value.startswith("-")):
            self.check_device(word)
            return self.path_ref(word, "read", "argument", base, bases, chdir)
        return None

    def _written(self, ref: PathRef, content: str | None) -> None:
        self.writes.append((ref, content))
        if any(is_consumed(path) for path in (*ref.resolved, ref.path or "") if path):
            self.consumed_writes.append((ref, content))

    def cd_move(self, move: CdMove, ref: PathRef | None) -> None:
        self.cd_moves.append(move)
        if ref is not None:
            self.paths.append(ref)


_ECHO_FLAGS = re.compile(r"^-[neE]+$")
_PRINTERS = frozenset({"echo", "printf", "cat", "tee"})
# Programs that change a file's metadata or remove it, never put new text in it.
_KEEP_CONTENT = frozenset(
    {"chmod", "chown", "chgrp", "chattr", "setfacl", "touch", "mkdir", "mkfifo", "mknod",
     "rmdir", "rm", "unlink", "truncate", "shred"}
)  # fmt: skip


def produced_text(call: Call, base: str) -> str | None:
    """What ``echo``/``printf``/``cat``/``tee`` print when it is literal, else ``None``.

    A superset is fine (it is only analysed): ``printf`` gets its format with escapes
    decoded followed by its arguments.
    """
    args = call.argv[1:]
    values = [w.value for w in args]
    if base in ("cat", "tee") and call.stdin.kind in ("heredoc", "herestring"):
        if base == "cat" and any(not (v or "").startswith("-") for v in values):
            return None
        return call.stdin.text
    if any(v is None for v in values) or base not in ("echo", "printf"):
        return None
    texts = [v for v in values if v is not None]
    if base == "echo":
        while texts and _ECHO_FLAGS.match(texts[0]):
            texts = texts[1:]
        return _decode(" ".join(texts)) + "\n"
    if texts and texts[0] == "--":
        texts = texts[1:]
    return "\n".join(_decode(t) for t in texts)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
            "e": "\x1b", "\\": "\\", '"': '"', "'": "'"}  # fmt: skip
_ESCAPE = re.compile(r"\\(0[0-7]{0,3}|[1-7][0-7]{0,2}|x[0-9A-Fa-f]{1,2}|.)", re.DOTALL)


def _decode(text: str) -> str:
    """Backslash escapes as ``echo -e`` and ``printf`` decode them (unknown ones stay)."""
    if "\\" not in text:
        return text.replace("%%", "%")

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] == "x" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        return _ESCAPES.get(code, "\\" + code)

    return _ESCAPE.sub(one, text.replace("%%", "%"))


def _physical(
    value: str, chains: tuple[Chain, ...], cwd: str | None, home: str | None
) -> tuple[str, ...]:
    """``value`` made absolute against each chain with every ``..`` kept (see PathRef)."""
    if value.startswith("~"):
        if not home:
            return ()
        value = home + value[1:]
    if value.startswith("/") or cwd is None:
        return (value,) if value.startswith("/") else ()
    out: list[str] = []
    for chain in chains:
        base = resolve_chain(cwd, chain)
        if base is not None and base + "/" + value not in out:
            out.append(base + "/" + value)
    return tuple(out)


def _resolve_all(
    path: str, chains: tuple[Chain, ...], cwd: str, home: str | None
) -> tuple[str, ...]:
    if path.startswith("~"):
        if not home:
            return ()
        path = home + path[1:]
    if path.startswith("/"):
        return (normalize(path),)
    out: list[str] = []
    for chain in chains:
        base = resolve_chain(cwd, chain)
        if base is None:
            return ()
        candidate = normalize(base + "/" + path)
        if candidate not in out:
            out.append(candidate)
    return tuple(out)
