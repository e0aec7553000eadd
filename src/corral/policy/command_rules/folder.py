"""The rule files of ``<data_dir>/rules/``: ``*.rules`` in Codex's syntax, ``*.toml`` in
ours, read at start and taken up again when a file changes (its modification time or size;
one look at the folder a second at most). A file that cannot be used keeps its previous
rules in force and is listed in :attr:`RulesFolder.problems` with file, line and reason."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path

from corral.policy.command_rules.codex_file import parse_codex_rules
from corral.policy.command_rules.model import HostExecutable, PrefixRule, RuleError, ToolRule
from corral.policy.command_rules.ruleset import RuleSet
from corral.policy.command_rules.toml_file import parse_toml_rules

__all__ = ["RulesFolder", "load_rule_file"]

log = logging.getLogger("corral.rules")

_Rules = list[PrefixRule | ToolRule | HostExecutable]


def load_rule_file(path: Path) -> _Rules:
    """The rules of one file, each with an id (``<file name>:<line>``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: not readable: {exc}") from None
    parse = parse_codex_rules if path.suffix == ".rules" else parse_toml_rules
    rules = parse(text, file=str(path))
    return [
        dataclasses.replace(rule, id=f"{path.name}:{rule.origin.line or index}")
        for index, rule in enumerate(rules, start=1)
    ]


class RulesFolder:
    """The rule files of one folder, reloaded on change."""

    def __init__(
        self,
        folder: Path,
        *,
        recheck_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.folder = folder
        self._recheck_s = recheck_s
        self._clock = clock
        self._checked_at = float("-inf")
        self._seen: dict[Path, tuple[int, int]] = {}
        self._by_file: dict[Path, _Rules] = {}
        self._problems: dict[Path, str] = {}
        self._rules = RuleSet()
        self.generation = 0
        """Changes each time the rules in force are replaced."""
        self.refresh(force=True)

    @property
    def rules(self) -> RuleSet:
        self.refresh()
        return self._rules

    @property
    def problems(self) -> list[str]:
        """One line per file that could not be used: file, line and reason."""
        return [self._problems[path] for path in sorted(self._problems)]

    def is_fresh(self) -> bool:
        """Looked at less than a recheck interval ago: :attr:`rules` would not look again."""
        return self._clock() - self._checked_at < self._recheck_s

    def refresh(self, *, force: bool = False) -> None:
        now = self._clock()
        if not force and now - self._checked_at < self._recheck_s:
            return
        self._checked_at = now
        seen = self._stat_files()
        if seen == self._seen and not force:
            return
        for path in list(self._by_file):
            if path not in seen:
                del self._by_file[path]
                self._problems.pop(path, None)
        for path, stamp in seen.items():
            if self._seen.get(path) == stamp and not force:
                continue
            try:
                self._by_file[path] = load_rule_file(path)
                self._problems.pop(path, None)
            except RuleError as exc:
                kept = " (its previous rules stay in force)" if path in self._by_file else ""
                self._problems[path] = f"{exc}{kept}"
                log.warning("rule file not loaded: %s%s", exc, kept)
        self._seen = seen
        self.generation += 1
        self._rules = RuleSet(
            rule for path in sorted(self._by_file) for rule in self._by_file[path]
        )

    def _stat_files(self) -> dict[Path, tuple[int, int]]:
        seen: dict[Path, tuple[int, int]] = {}
        try:
            entries = sorted(self.folder.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return seen
        for path in entries:
            if path.suffix not in (".rules", ".toml"):
                continue
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            seen[path] = (stat.st_mtime_ns, stat.st_size)
        return seen
