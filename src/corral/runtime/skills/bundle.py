"""One skill bundle: a folder with ``SKILL.md`` (YAML front matter, then the body).

The agentskills.io format as Claude Code loads it: ``description`` is required and ``name``
defaults to the folder's name; ``allowed-tools`` narrows the run's tools while the skill is
active (see :mod:`corral.runtime.skills.allowed_tools`); ``license``, ``compatibility``,
``metadata`` and any other field are kept as they are (:attr:`SkillBundle.other_fields`). A
description over 1,024 characters (the format's limit) is a warning, not a refusal: the
prompt listing shows its start. Corral adds ``credentials``, the stored
credentials the skill's scripts need, each staged under the variable name it declares::

    ---
    name: deploy-notes
    description: Publish the release notes to the wiki.
    credentials:
      - name: wiki          # the credential's name in the store (`corral credentials set wiki`)
        env: WIKI_TOKEN     # the variable the scripts read
      - github              # short form: store name github, variable GITHUB
    ---
    Run `bash scripts/publish.sh` with cwd "${SKILL_DIR}".

A bundle that breaks a rule is not loaded; :class:`SkillError` names the file and field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from corral.shell.environment import staged_problem

__all__ = [
    "SKILL_FILE",
    "DeclaredCredential",
    "SkillBundle",
    "SkillError",
    "SkillOrigin",
    "parse_skill",
]

SKILL_FILE = "SKILL.md"
SkillOrigin = Literal["package", "drive", "folder"]
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")
_RESERVED = frozenset(
    {"CORRAL_TICKET", "CORRAL_API", "SESSION_ID", "SKILL_DIR", "SKILL_URI", "SKILL_NAME"}
)
"""Variables the platform sets for every skill call; a credential may not replace them."""
_CREDENTIAL = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_DESCRIPTION_MAX = 1024
_READ = frozenset({"name", "description", "allowed-tools", "credentials"})
_BODY_MAX = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class DeclaredCredential:
    """A stored credential a skill's scripts receive as the variable ``env``."""

    name: str
    env: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillBundle:
    """A loaded skill: where it lives, what it declares and its body."""

    name: str
    description: str
    folder: Path
    origin: SkillOrigin
    package: str | None = None
    """The package it came with (origin ``package``)."""
    credentials: tuple[DeclaredCredential, ...] = ()
    allowed_tools: tuple[str, ...] = ()
    other_fields: dict[str, Any] = field(default_factory=dict)
    """Front matter Corral does not read (``license``, ``compatibility``, ``metadata``…)."""
    warnings: tuple[str, ...] = ()
    """What was loaded anyway but breaks the format's advice (an over-long description)."""
    body: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillError:
    """Why a bundle was left out: the file, the front matter field, what to do."""

    file: str
    field: str
    message: str

    def describe(self) -> str:
        where = f" (field {self.field!r})" if self.field else ""
        return f"{self.file}{where}: {self.message}"


def _split(text: str) -> tuple[str, str] | None:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]).strip("\n")
    return None


def _credentials(value: Any, fail: Any) -> tuple[DeclaredCredential, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise fail("credentials", "must be a list of names or {name, env} entries")
    found: list[DeclaredCredential] = []
    for index, item in enumerate(value):
        where = f"credentials[{index}]"
        if isinstance(item, str):
            name, env = item, item.upper().replace("-", "_")
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            name = item["name"]
            env = item.get("env", name.upper().replace("-", "_"))
            extra = sorted(set(item) - {"name", "env"})
            if extra:
                raise fail(where, f"has unknown keys {extra}; only 'name' and 'env' are read")
        else:
            raise fail(where, "must be a credential name or a mapping with 'name' (and 'env')")
        if not _CREDENTIAL.match(name):
            raise fail(where, f"credential name {name!r} must match {_CREDENTIAL.pattern}")
        if not isinstance(env, str) or not _ENV.match(env):
            raise fail(where, f"variable {env!r} must be an upper-case name like API_TOKEN")
        if env in _RESERVED:
            raise fail(where, f"variable {env!r} is set by the platform; choose another name")
        why = staged_problem(env, "")
        if why is not None:
            raise fail(where, f"variable {env!r} {why}; choose another name")
        if env in {c.env for c in found}:
            raise fail(where, f"variable {env!r} is declared twice")
        found.append(DeclaredCredential(name=name, env=env))
    return tuple(found)


_TOOL_ENTRY = re.compile(r"[^\s,(]+(?:\([^)]*\))?")
"""One entry of an ``allowed-tools`` string: a name, with Claude Code's ``(pattern)`` kept
whole (``Bash(git add:*)`` is one entry, not two)."""


def _tools(value: Any, fail: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(_TOOL_ENTRY.findall(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise fail("allowed-tools", "must be a list of tool names or one space-separated string")


def parse_skill(
    folder: Path, *, origin: SkillOrigin, package: str | None = None, any_folder: bool = False
) -> SkillBundle | SkillError:
    """Read ``folder/SKILL.md``; the bundle, or an error naming the file and field.

    The skill's name must equal its folder's name, unless ``any_folder`` (a bundle about to
    be imported under its own name)."""
    path = folder / SKILL_FILE
    file = str(path)

    def fail(field_name: str, message: str) -> _Invalid:
        return _Invalid(SkillError(file=file, field=field_name, message=message))

    try:
        if not path.is_file():
            return SkillError(file=file, field="", message="has no SKILL.md; add one")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return SkillError(file=file, field="", message=f"cannot be read: {exc}")
    parts = _split(text.replace("\r\n", "\n"))
    if parts is None:
        return SkillError(
            file=file, field="", message="must start with YAML front matter between '---' lines"
        )
    header, body = parts
    import yaml  # loads with the first skill read, not with every open

    try:
        meta = yaml.safe_load(header) if header.strip() else {}
    except yaml.YAMLError as exc:
        why = " ".join(str(exc).split())
        return SkillError(file=file, field="", message=f"front matter is not valid YAML: {why}")
    if not isinstance(meta, dict):
        return SkillError(file=file, field="", message="front matter must be a YAML mapping")
    try:
        return _bundle(meta, body, folder, origin, package, fail, any_folder)
    except _Invalid as invalid:
        return invalid.error


class _Invalid(Exception):
    def __init__(self, error: SkillError) -> None:
        super().__init__(error.message)
        self.error = error


def _bundle(
    meta: dict[str, Any],
    body: str,
    folder: Path,
    origin: SkillOrigin,
    package: str | None,
    fail: Any,
    any_folder: bool,
) -> SkillBundle:
    name = meta.get("name")
    if name is None and not any_folder:
        name = folder.name
    if not isinstance(name, str) or not _NAME.match(name):
        raise fail("name", f"{name!r} must be lower-case letters, digits and '-' (1-64)")
    if not any_folder and folder.name != name:
        raise fail("name", f"{name!r} must equal the bundle's folder name {folder.name!r}")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise fail("description", "is required: one line saying when to use the skill")
    warnings: list[str] = []
    if len(description) > _DESCRIPTION_MAX:
        warnings.append(
            f"description: {len(description)} characters, over the format's "
            f"{_DESCRIPTION_MAX}; the prompt listing shows only its start"
        )
    if len(body) > _BODY_MAX:
        raise fail("", f"the body is longer than {_BODY_MAX} characters")
    return SkillBundle(
        name=name,
        description=" ".join(description.split()),
        folder=folder.resolve(),
        origin=origin,
        package=package,
        credentials=_credentials(meta.get("credentials"), fail),
        allowed_tools=_tools(meta.get("allowed-tools"), fail),
        other_fields={k: v for k, v in meta.items() if k not in _READ},
        warnings=tuple(warnings),
        body=body,
    )
