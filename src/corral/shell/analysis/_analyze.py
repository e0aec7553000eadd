"""The entry point: one command line in, one :class:`Analysis` out."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from corral.shell.analysis._chars import describe_character, find_forbidden_character
from corral.shell.analysis._paths import normalize, platform_sequence, protection
from corral.shell.analysis._records import Recorder
from corral.shell.analysis._refusal import Refused
from corral.shell.analysis._types import Analysis, Rule
from corral.shell.analysis._unreadable import Invocations
from corral.shell.analysis._walker import Walker
from corral.shell.analysis._written import git_kind, refuse_unknown_git

__all__ = ["MAX_COMMAND_BYTES", "analyze"]

MAX_COMMAND_BYTES = 512 * 1024
"""Longest command accepted (a 100 KB script is fine)."""

CACHED_COMMAND_CHARS = 4096
"""Verdicts on command lines up to this length are remembered (agents repeat commands)."""
CACHED_VERDICTS = 1024


def analyze(
    command: str,
    *,
    protected_paths: Sequence[str] = (),
    home: str | None = None,
    cwd: str | None = None,
    unconfined: bool = False,
    allowed_invocations: Sequence[Sequence[str]] = (),
) -> Analysis:
    """Analyse a bash command line without running anything.

    ``protected_paths`` are the platform's own files and folders (database, key files, data
    folder internals); ``home`` is the home folder commands see (``~`` and ``$HOME``);
    ``cwd`` is where the command starts. With ``cwd`` the extracted paths carry absolute
    ``resolved`` candidates and relative words are matched against the protected paths.
    ``unconfined`` says no kernel sandbox will contain the command: the analysis is then
    the boundary, and what it cannot know statically (a computed command in inline
    interpreter code, a file this command writes and then runs) is refused instead of left
    to the sandbox. Code the analysis cannot read at all (inline interpreter code, scripts
    and build files on disk, programs run by options) is then refused unless its argv
    starts with one of ``allowed_invocations``, the admin's word lists (see
    :mod:`corral.shell.analysis._unreadable`). The analysis is pure and thread-safe, so
    the verdict on a short command line is remembered for the same inputs and handed out
    again (it is immutable).
    """
    protected = platform_sequence(protected_paths)
    allowed = tuple(tuple(words) for words in allowed_invocations) if allowed_invocations else ()
    if len(command) <= CACHED_COMMAND_CHARS:
        return _remembered(command, protected, home, cwd, unconfined, allowed)
    return _analyze(command, protected, home, cwd, unconfined, allowed)


@lru_cache(maxsize=CACHED_VERDICTS)
def _remembered(
    command: str,
    protected: tuple[str, ...],
    home: str | None,
    cwd: str | None,
    unconfined: bool,
    allowed: Invocations,
) -> Analysis:
    return _analyze(command, protected, home, cwd, unconfined, allowed)


def _analyze(
    command: str,
    protected: tuple[str, ...],
    home: str | None,
    cwd: str | None,
    unconfined: bool,
    allowed: Invocations = (),
) -> Analysis:
    shielded = protection(home, protected)
    base = (command, cwd, shielded.platform)
    bad = find_forbidden_character(command)
    if bad is not None:
        char = describe_character(command[bad])
        return _refused(
            base,
            "control_character",
            repr(command[max(0, bad - 10) : bad + 10]),
            f"The command contains the invisible or control character {char} at offset "
            f"{bad}; retype the command without it.",
        )
    if len(command.encode("utf-8", "surrogatepass")) > MAX_COMMAND_BYTES:
        return _refused(
            base,
            "too_large",
            command[:40],
            f"The command is longer than {MAX_COMMAND_BYTES // 1024} KB; write it to a "
            "script file and run the file.",
        )
    if cwd is not None:
        inside = shielded.inside_platform(normalize(cwd))
        if inside is not None:
            return _refused(
                base,
                "protected_path",
                cwd,
                f"The working directory is inside {inside}, the platform's own data; run "
                "the command somewhere else.",
            )
    # A second attempt only when the first hit the recursion limit having checked a
    # function body from a deliberately deeper stack (see _functions.define); it walks
    # every body again at each call, as from the same depth as the first.
    for reuse in (True, False):
        recorder = Recorder(
            home=home, cwd=cwd, protection=shielded, unconfined=unconfined, allowed=allowed
        )
        walker = Walker(recorder, reuse=reuse)
        try:
            walker.walk_source(command, depth=0, origin=command[:40])
            if unconfined:
                for written, content in recorder.writes:
                    if content is None and git_kind(written) is not None:
                        # Written by a whole compound's redirect, whose text is not known.
                        refuse_unknown_git(written.text)
            if recorder.unreadable is not None:
                raise recorder.unreadable
        except Refused as refusal:
            return _refused(base, refusal.rule, refusal.word, refusal.detail)
        except RecursionError:
            if walker.padded:
                continue
            return _refused(
                base,
                "too_large",
                command[:40],
                "The command nests statements or substitutions too deeply to analyse; split "
                "it into simpler commands or a script file.",
            )
        finally:
            walker.release()
            recorder.unreadable = None  # its traceback holds the frame that holds it
        return Analysis(
            command=command,
            allowed=True,
            detail="",
            commands=tuple(recorder.commands),
            paths=tuple(recorder.paths),
            cd_moves=tuple(recorder.cd_moves),
            cwd=cwd,
            protected_paths=shielded.platform,
        )
    raise AssertionError("the second attempt pads nothing")


def _refused(
    base: tuple[str, str | None, tuple[str, ...]], rule: Rule, word: str, detail: str
) -> Analysis:
    command, cwd, protected = base
    return Analysis(
        command=command,
        allowed=False,
        rule=rule,
        word=word,
        detail=detail,
        cwd=cwd,
        protected_paths=protected,
    )
