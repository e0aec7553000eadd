"""Where a command runs: the working directory's source decides the plane.

A local source runs the command in the application's sandbox (the *app* plane); a source
whose connector is ``host`` hands it to the operator's host broker (the *host* plane). The
connector decides, never the name: a local source called ``host-notes`` stays local. A bare
path is owned by the most specific *local* source first and falls through to host sources
only when no local source owns it, so an installation without host sources behaves the
same whether or not host sources exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from corral.errors import PolicyDenied
from corral.policy.sources import ResolvedPath, SourceDef, SourcePolicy

__all__ = ["Plane", "PlaneChoice", "choose_plane", "connector_plane"]

Plane = Literal["app", "host"]
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9_.+-]*://")
_PLANES: dict[str, Plane] = {"local": "app", "host": "host"}


def connector_plane(connector: str) -> Plane | None:
    return _PLANES.get(connector)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlaneChoice:
    resolved: ResolvedPath
    plane: Plane


def _within(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def _owner(policy: SourcePolicy, path: Path, connector: str) -> SourceDef | None:
    text = str(path)
    owners = [
        s
        for s in policy.sources.values()
        if s.connector == connector and _within(text, str(s.real_root))
    ]
    return max(owners, key=lambda s: len(str(s.real_root)), default=None)


def choose_plane(policy: SourcePolicy, cwd: str | None) -> PlaneChoice:
    """Resolve the working directory and the plane its owning source selects.

    Raises :class:`PolicyDenied` for a cwd that names no source, a connector that cannot run
    commands, or a ``${SKILL_DIR}`` with no active skill.
    """
    target = cwd or str(policy.data_root)
    if "${" in target:
        raise PolicyDenied(
            f"cwd {target!r} uses a substitution, but no skill is active in this call; pass "
            "a source URI like data://project, an absolute path or a path relative to the "
            "data root",
            data={"guard": "uri_policy", "rule": "substitution", "path": target},
        )
    resolved = policy.resolve(target)
    if not _SCHEME.match(target) and resolved.source is not None:
        # A bare path: the container's sources own it first.
        local = _owner(policy, resolved.path, "local")
        owner = local or _owner(policy, resolved.path, "host")
        if owner is not None and owner is not resolved.source:
            resolved = ResolvedPath(
                target=resolved.target,
                path=resolved.path,
                source=owner,
                protected=resolved.protected,
            )
    source = resolved.source
    connector = source.connector if source is not None else "local"
    plane = connector_plane(connector)
    if plane is None:
        name = source.name if source is not None else "?"
        raise PolicyDenied(
            f"cwd {target!r} belongs to source {name!r} whose connector {connector!r} "
            "cannot run commands",
            data={"guard": "uri_policy", "rule": "connector", "path": str(resolved.path)},
        )
    return PlaneChoice(resolved=resolved, plane=plane)
