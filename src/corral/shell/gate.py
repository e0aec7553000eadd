"""The URI-policy gate: the cwd and every path a command touches, against source policies.

It consumes what command analysis extracted (:class:`corral.shell.analysis.Analysis`):

- the cwd needs ``exec`` on its source: that is where a command may *start*;
- every path argument needs ``read``; arguments of mutating commands and every redirect
  target need ``write``; a ``cd`` target needs ``read`` (moving around is looking);
- paths are judged where they lead: relative paths against the cwd as moved by literal
  ``cd`` (every base a ``cd`` chain may leave), ``~`` as the sandbox's home, globs expanded
  (each match checked, or the folder the pattern lives in when nothing matches), symlinks
  followed; nested ``bash -c`` paths arrive flattened from the analysis;
- a path no source covers is denied, and so is one owned by a source of the other plane.

Allowances follow from the sandbox: inside bubblewrap ``/tmp`` and ``/var/tmp`` are
private and empty, so paths there that no source owns are scratch and pass; ``/proc`` (its
own PID namespace) and the toolchain's ``/etc`` files are the sandbox's, so reading them
passes; and a path the
analysis could not know statically (``"$f"``) passes, because the kernel enforces the same
rights. Without the sandbox (unconfined mode, the host plane) the gate is the only
enforcement, so scratch is ordinary uncovered ground and unknowable paths are refused.
"""

from __future__ import annotations

import functools
import glob
import itertools
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.errors import PolicyDenied
from corral.policy.identity import Caller
from corral.policy.sources import Access, SourceDef, SourcePolicy
from corral.shell.plane import Plane
from corral.shell.sandbox import SCRATCH_ROOTS, system_files
from corral.shell.verdict import Verdict

if TYPE_CHECKING:
    # Only for hints: the analyser's tables load with the first command analysed.
    from corral.shell.analysis import Analysis, PathRef

__all__ = ["GLOB_LIMIT", "SAFE_DEVICES", "UriGate"]

GLOB_LIMIT = 2_000
"""Matches of one glob checked one by one; beyond it the sandbox must be the judge."""

SAFE_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
    }
)
_SAFE_PREFIXES = ("/dev/fd/", "/proc/self/fd/")
_PLANE_CONNECTOR: dict[Plane, str] = {"app": "local", "host": "host"}


def _within(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


@functools.cache
def _sandbox_etc() -> tuple[str, ...]:
    return system_files()


def _glob_prefix(pattern: str) -> str:
    """The deepest folder of ``pattern`` that holds no glob character."""
    parts = pattern.split("/")
    keep: list[str] = []
    for part in parts:
        if glob.has_magic(part):
            break
        keep.append(part)
    return "/".join(keep) or "/"


class _Refused(Exception):
    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.detail)
        self.verdict = verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class UriGate:
    """Checks one command's paths for one caller on one plane."""

    policy: SourcePolicy
    caller: Caller
    plane: Plane
    sandboxed: bool
    data_dir: str
    confinement: str | None = None

    def check(self, analysis: Analysis, cwd: str) -> Verdict | None:
        """The first refusal among the command's paths, or None when all pass."""
        try:
            for ref in analysis.paths:
                self._check_ref(ref, cwd)
        except _Refused as refused:
            return refused.verdict
        return None

    # -- one path reference -----------------------------------------------------------------

    def _check_ref(self, ref: PathRef, cwd: str) -> None:
        access: Access = "read" if ref.origin == "cd" or ref.access == "exec" else ref.access
        candidates: Iterable[str] | None = ref.resolved or ref.resolve(cwd)
        if not candidates:
            if self.sandboxed:
                return
            self._refuse(
                ref,
                None,
                "dynamic_path",
                f"{ref.text!r} is not known before the command runs (a variable or command "
                f"output), and without the sandbox the gate must see every path it {access}s; "
                "write the path literally",
            )
            return
        for candidate in candidates:
            if ref.glob:
                self._check_glob(ref, candidate, access)
            else:
                self._check_path(ref, candidate, access)
        for unresolved in ref.physical:
            # link/../x: the kernel follows the link before it takes "..".
            if ref.glob:
                found = list(itertools.islice(glob.iglob(unresolved), GLOB_LIMIT + 1))
                if len(found) > GLOB_LIMIT and not self.sandboxed:
                    self._refuse(ref, unresolved, "glob_too_broad",
                                 f"{ref.text!r} matches more than {GLOB_LIMIT:,} paths; "
                                 "narrow the pattern")  # fmt: skip
                for match in found or [_glob_prefix(unresolved)]:
                    self._check_path(ref, os.path.realpath(match), access)
            else:
                self._check_path(ref, os.path.realpath(unresolved), access)

    def _check_glob(self, ref: PathRef, pattern: str, access: Access) -> None:
        matches = []
        # "**" comes from what ``find START | xargs`` hands on: every file under START,
        # hidden ones included.
        deep = "**" in pattern
        for match in glob.iglob(pattern, recursive=deep, include_hidden=deep):
            matches.append(match)
            if len(matches) > GLOB_LIMIT:
                if self.sandboxed:
                    break
                self._refuse(
                    ref,
                    pattern,
                    "glob_too_broad",
                    f"{ref.text!r} matches more than {GLOB_LIMIT:,} paths; narrow the pattern",
                )
        for match in matches[:GLOB_LIMIT]:
            self._check_path(ref, match, access)
        if not matches:
            self._check_path(ref, _glob_prefix(pattern), access)

    def _check_path(self, ref: PathRef, path: str, access: Access) -> None:
        path = posixpath.normpath(path)
        if path in SAFE_DEVICES or path.startswith(_SAFE_PREFIXES):
            return
        if self._is_scratch(path):
            return
        if self.sandboxed and access == "read" and self._sandbox_readable(path):
            return
        if self.sandboxed and access == "read" and path == "/":
            # Listing the sandbox's own root shows only what it mounted for this caller.
            return
        try:
            resolved = self.policy.resolve(path)
        except PolicyDenied as denied:
            self._refuse(ref, path, str(denied.data.get("rule") or "denied"), denied.message)
            return
        source = resolved.source
        connector = _PLANE_CONNECTOR[self.plane]
        if source is not None and source.connector != connector and not resolved.protected:
            other = "host" if source.connector == "host" else "application"
            self._refuse(
                ref,
                str(resolved.path),
                "other_plane",
                f"{ref.text!r} lies in source {source.name!r}, which belongs to the {other} "
                f"plane; a command on the {self.plane} plane cannot reach it",
            )
        try:
            self.policy.require(self.caller, resolved, access)
        except PolicyDenied as denied:
            rule = str(denied.data.get("rule") or "denied")
            self._refuse(ref, str(resolved.path), rule, denied.message)

    def _is_scratch(self, path: str) -> bool:
        if not self.sandboxed or not any(_within(path, root) for root in SCRATCH_ROOTS):
            return False
        if _within(path, self.data_dir):
            return False
        return not any(_within(path, str(s.real_root)) for s in self._sources())

    def _sandbox_readable(self, path: str) -> bool:
        """The sandbox's own ``/proc`` and the toolchain's ``/etc`` files it provides."""
        if _within(path, "/proc"):
            return True
        return any(_within(path, entry) for entry in _sandbox_etc())

    def _sources(self) -> Iterable[SourceDef]:
        return self.policy.sources.values()

    def _refuse(self, ref: PathRef, path: str | None, rule: str, detail: str) -> None:
        raise _Refused(
            Verdict(
                allowed=False,
                guard="uri_policy",
                rule=rule,
                detail=detail,
                word=ref.text,
                path=path,
                plane=self.plane,
                confinement=self.confinement,
            )
        )
