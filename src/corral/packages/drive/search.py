"""fs_search: a regular expression over the text files under a folder.

Two engines give the same answer: ripgrep (the ``rg`` binary, Debian package ``ripgrep``,
which ``scripts/setup`` installs) when present, and a pure-Python walk otherwise. Both skip
hidden entries (unless asked), binary files, files over :data:`MAX_FILE_BYTES` and links;
both answer only from folders the caller may read (ripgrep's lines are filtered by the same
per-folder policy the Python walk applies), so a nested source without read rights, the
platform's private area and its own files never show. ripgrep is stopped as soon as one
match more than the bound has arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.errors import InvalidArguments, ToolError
from corral.packages.drive.globs import Glob
from corral.packages.drive.locations import Location
from corral.packages.drive.service import drive_of
from corral.packages.drive.walking import Walk
from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy
from corral.tools.context import CallContext
from corral.tools.results import TextBlock, ToolResult

__all__ = ["MAX_FILE_BYTES", "Hit", "Query", "fs_search", "fs_search_policy", "search"]

MAX_FILE_BYTES = 10 * 1024 * 1024
TEXT_CAP = 300
"""Characters of a matching line shown."""
SEARCH_SECONDS = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    pattern: str
    glob: str | None = None
    ignore_case: bool = False
    fixed_strings: bool = False
    hidden: bool = False
    max_results: int = 200

    def regex(self) -> re.Pattern[str]:
        text = re.escape(self.pattern) if self.fixed_strings else self.pattern
        try:
            return re.compile(text, re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0))
        except re.error as err:
            raise InvalidArguments(
                f"pattern {self.pattern!r} is not a valid regular expression: {err}; fix it, "
                "or pass fixed_strings: true to search for the text literally"
            ) from None


@dataclass(frozen=True, slots=True, order=True)
class Hit:
    relative: str
    line: int
    text: str


@dataclass(slots=True, kw_only=True)
class Found:
    hits: list[Hit] = field(default_factory=list)
    more: bool = False
    engine: str = "python"
    skipped: int = 0


async def fs_search_policy(args: dict[str, Any], ctx: CallContext) -> None:
    """The pipeline's policy step: the folder must be readable by this caller."""
    await drive_of(ctx).locate(str(args.get("uri", "data://")), ctx, "read")


def _line_text(raw: str) -> str:
    text = raw.rstrip("\r\n")
    return text if len(text) <= TEXT_CAP else text[:TEXT_CAP] + " […]"


def _python(root: Path, query: Query, caller: Caller, sources: SourcePolicy) -> Found:
    regex = query.regex()
    pattern = Glob.of(query.glob) if query.glob else None
    found = Found()
    walk = Walk(root, caller, sources, hidden=query.hidden)
    files: Iterable[tuple[str, str]]
    if root.is_file():
        files = [(root.name, str(root))]
    else:
        files = (
            (e.relative, e.entry.path)
            for e in walk.entries(10_000)
            if e.entry.is_file(follow_symlinks=False)
        )
    for relative, path in files:
        if pattern is not None and not pattern.matches(relative):
            continue
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size > MAX_FILE_BYTES:
                    continue
                raw = handle.read()
        except OSError:
            continue
        if b"\x00" in raw[:8192]:
            continue
        text = raw.decode("utf-8", "replace")
        if regex.search(text) is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                if len(found.hits) == query.max_results:
                    found.more = True
                    return found
                found.hits.append(Hit(relative, number, _line_text(line)))
    found.skipped = walk.skipped
    return found


def _rg_command(rg: str, query: Query, target: str) -> list[str]:
    command = [rg, "--null", "--line-number", "--no-heading", "--with-filename"]
    command += ["--color=never", "--no-messages", "--no-ignore", "--no-config"]
    command += [f"--max-filesize={MAX_FILE_BYTES}", f"--max-columns={TEXT_CAP * 4}"]
    command += ["--max-columns-preview"]
    if query.ignore_case:
        command.append("--ignore-case")
    if query.fixed_strings:
        command.append("--fixed-strings")
    if query.hidden:
        command.append("--hidden")
    if query.glob:
        command.append(f"--glob={query.glob}")
    return [*command, "--regexp", query.pattern, "--", target]


async def _ripgrep(
    rg: str, root: Path, query: Query, caller: Caller, sources: SourcePolicy
) -> Found | None:
    """Search with ripgrep; None when ripgrep cannot take the pattern (Python can)."""
    single = await asyncio.to_thread(root.is_file)
    cwd, target = (root.parent, root.name) if single else (root, "./")
    pattern = Glob.of(query.glob) if query.glob and not single else None
    walk = Walk(root, caller, sources, hidden=query.hidden)
    process = await asyncio.create_subprocess_exec(
        *_rg_command(rg, query, target),
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=1 << 20,
    )
    assert process.stdout is not None and process.stderr is not None
    found = Found(engine="ripgrep")
    folders: set[str] = set()
    finished = False
    try:
        async with asyncio.timeout(SEARCH_SECONDS):
            while line := await process.stdout.readline():
                name, _, rest = line.partition(b"\x00")
                number, _, text = rest.partition(b":")
                relative = name.decode("utf-8", "surrogateescape").removeprefix("./")
                folder = str(cwd / relative).rsplit("/", 1)[0]
                if not walk.readable(folder) or sources.is_protected(str(cwd / relative)):
                    folders.add(folder)
                    continue
                if pattern is not None and not pattern.matches(relative):
                    continue
                if not query.hidden and "/." in "/" + relative:
                    continue  # a --glob that names a hidden file overrides ripgrep's own rule
                if len(found.hits) == query.max_results:
                    found.more = True
                    break
                found.hits.append(
                    Hit(relative, int(number), _line_text(text.decode("utf-8", "replace")))
                )
            else:
                finished = True
    except TimeoutError:
        found.more = True
    finally:
        # The end of its output is not the end of ripgrep: it may still be writing why it
        # failed. Only a search cut short (bound reached, deadline, cancelled) is killed.
        if not finished and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        errors = await process.stderr.read()
        await process.wait()
    if process.returncode == 2 and not found.hits and b"regex" in errors.lower():
        return None
    found.skipped = len(folders)
    return found


async def search(
    root: Path, query: Query, *, caller: Caller, sources: SourcePolicy, rg: str | None
) -> Found:
    """Matches of ``query`` under ``root`` (a real folder or file), sorted by path and line."""
    query.regex()  # one check of the pattern, whichever engine runs
    found = None
    if rg is not None:
        found = await _ripgrep(rg, root, query, caller, sources)
    if found is None:
        found = await asyncio.to_thread(_python, root, query, caller, sources)
    found.hits.sort()
    return found


def _file_uri(base: str, relative: str) -> str:
    return base + relative if base.endswith(("/", "://")) else f"{base}/{relative}"


async def fs_search(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    drive = drive_of(ctx)
    location: Location = await drive.locate(str(args.get("uri", "data://")), ctx, "read")
    if location.path is None:
        raise ToolError(f"{location.uri!r} is a document; read it with fs_read", code="not_a_file")
    query = Query(
        pattern=str(args["pattern"]),
        glob=args.get("glob"),
        ignore_case=bool(args.get("ignore_case")),
        fixed_strings=bool(args.get("fixed_strings")),
        hidden=bool(args.get("hidden")),
        max_results=int(args.get("max_results", 200)),
    )
    found = await search(location.path, query, caller=ctx.caller, sources=ctx.sources, rg=drive.rg)
    base = location.uri.rsplit("/", 1)[0] if location.path.is_file() else location.uri
    lines = [f"{_file_uri(base, h.relative)}:{h.line}: {h.text}" for h in found.hits]
    files = len({h.relative for h in found.hits})
    header = f"{len(found.hits):,} matching lines in {files:,} files under {location.uri}"
    notes = []
    if found.more:
        notes.append(
            f"stopped at max_results={query.max_results}; there are more matches: narrow the "
            "folder, glob or pattern"
        )
    if found.skipped:
        notes.append(f"{found.skipped:,} places you may not read were left out")
    body = "\n".join([header, *lines, *(f"[{note}]" for note in notes)])
    return ToolResult(
        content=[TextBlock(body)],
        data={
            "uri": location.uri,
            "matches": len(found.hits),
            "files": files,
            "more": found.more,
            "engine": found.engine,
        },
    )
