"""Package discovery and the registry of loaded tools.

A package is a folder with an optional ``manifest.json`` (name, version, description,
``pending``: tools declared but whose handler is not built yet), a ``tools/`` folder of tool
files, and a handlers module whose function named like each tool receives ``(args, ctx)``.
A handlers module may also define ``POLICY_HOOKS = {"tool": hook}``: ``hook(args, ctx)``
runs at the policy step and raises :class:`corral.errors.PolicyDenied` to refuse; and an
``install`` hook: ``install(setup)`` (sync or async) receives a
:class:`corral.runtime.package_setup.PackageSetup` when the platform opens and returns the
:class:`~corral.runtime.package_setup.Installed` services, start-up work and closers the
package provides. The name ``install`` is therefore not a tool name.

Packages are found through the ``corral.packages`` entry point group (the value is an
importable Python package whose folder holds ``tools/`` and whose ``handlers`` submodule
holds the handlers; the built-in package is found this way) and through folders named in
settings and in ``CORRAL_PACKAGE_PATH`` (their handlers live in ``handlers.py``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import re
import sys
import types
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from operator import is_
from pathlib import Path
from typing import Any, Literal

from corral.tools.checked_files import CheckedFiles
from corral.tools.context import CallContext
from corral.tools.contract import LoadError, ToolSpec, load_tool_file, read_json_file

__all__ = [
    "ENTRY_POINT_GROUP",
    "Handler",
    "LoadedTool",
    "Package",
    "PolicyHook",
    "Registry",
    "discover",
    "package_folders",
    "same_tools",
]

ENTRY_POINT_GROUP = "corral.packages"
PACKAGE_PATH_ENV = "CORRAL_PACKAGE_PATH"
INSTALL_HOOK = "install"

Handler = Callable[[dict[str, Any], CallContext], Any | Awaitable[Any]]
PolicyHook = Callable[[dict[str, Any], CallContext], Awaitable[None] | None]
_PACKAGE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedTool:
    spec: ToolSpec
    package: str
    handler: Handler
    is_async: bool
    policy_hook: PolicyHook | None = None

    @property
    def name(self) -> str:
        return self.spec.name


def same_tools(kept: Sequence[LoadedTool], tools: Sequence[LoadedTool]) -> bool:
    """Whether ``kept`` holds the very same loaded tool objects as ``tools``, in order: what
    a per-step cache keyed on the tools asks (a reload makes new objects, so identity is
    the cheap and exact test)."""
    return len(kept) == len(tools) and all(map(is_, kept, tools))


@dataclass(slots=True, kw_only=True)
class Package:
    name: str
    path: Path
    origin: Literal["entry_point", "folder", "mcp"]
    version: str = "0"
    description: str = ""
    tools: dict[str, LoadedTool] = field(default_factory=dict)
    pending: dict[str, ToolSpec] = field(default_factory=dict)
    errors: list[LoadError] = field(default_factory=list)
    install: Callable[[Any], Any] | None = None
    """The package's install hook (see the module docstring), if it has one."""


@dataclass(slots=True)
class Registry:
    packages: dict[str, Package] = field(default_factory=dict)
    tools: dict[str, LoadedTool] = field(default_factory=dict)
    errors: list[LoadError] = field(default_factory=list)

    @property
    def pending(self) -> dict[str, ToolSpec]:
        return {n: s for p in self.packages.values() for n, s in p.pending.items()}

    def leave_out(self, name: str, error: LoadError) -> None:
        """Take a loaded package's tools out again (its install hook failed), keeping the
        package listed with ``error``."""
        package = self.packages[name]
        for tool in package.tools:
            self.tools.pop(tool, None)
        package.tools.clear()
        package.errors.append(error)
        self.errors.append(error)

    def drop(self, name: str) -> None:
        """Take a package and its tools out entirely (an MCP server was disconnected)."""
        package = self.packages.pop(name, None)
        if package is None:
            return
        for tool in package.tools:
            if self.tools.get(tool) is package.tools[tool]:
                del self.tools[tool]
        self.errors = [e for e in self.errors if e.package != name]

    def add(self, package: Package) -> None:
        if package.name in self.packages:
            self.errors.append(
                LoadError(
                    file=str(package.path),
                    pointer="/name",
                    message=f"a package named {package.name!r} is already loaded from "
                    f"{str(self.packages[package.name].path)!r}; rename one of them",
                    package=package.name,
                )
            )
            return
        for name in list(package.tools):
            if name in self.tools:
                other = self.tools[name]
                package.errors.append(
                    LoadError(
                        file=package.tools[name].spec.file,
                        pointer="/name",
                        message=f"tool name {name!r} is already taken by package "
                        f"{other.package!r}; tool names must be unique",
                        package=package.name,
                    )
                )
                del package.tools[name]
        self.packages[package.name] = package
        self.tools.update(package.tools)
        self.errors.extend(package.errors)


def _read_manifest(folder: Path, default_name: str) -> tuple[dict[str, Any], LoadError | None]:
    path = folder / "manifest.json"
    if not path.is_file():
        return {"name": default_name}, None
    manifest, problem = read_json_file(path)
    if problem is not None:
        return {}, LoadError(file=str(path), pointer="", message=problem)
    if not isinstance(manifest, dict):
        return {}, LoadError(file=str(path), pointer="", message="must be a JSON object")
    manifest.setdefault("name", default_name)
    name = manifest["name"]
    if not isinstance(name, str) or not _PACKAGE_NAME.match(name):
        return {}, LoadError(
            file=str(path),
            pointer="/name",
            message=f"package name {name!r} must be lower case letters, digits, '_' or '-'",
        )
    pending = manifest.get("pending", [])
    if not isinstance(pending, list) or not all(isinstance(p, str) for p in pending):
        return {}, LoadError(
            file=str(path), pointer="/pending", message="must be a list of tool names"
        )
    return manifest, None


def _load_folder_handlers(folder: Path, package: str) -> types.ModuleType | None:
    """Import ``handlers.py`` of a folder package under a private module name."""
    handlers_file = folder / "handlers.py"
    if not handlers_file.is_file():
        return None
    parent_name = "corral_packages." + re.sub(r"\W", "_", package)
    if "corral_packages" not in sys.modules:
        root = types.ModuleType("corral_packages")
        root.__path__ = []
        sys.modules["corral_packages"] = root
    parent = types.ModuleType(parent_name)
    parent.__path__ = [str(folder)]
    sys.modules[parent_name] = parent
    spec = importlib.util.spec_from_file_location(f"{parent_name}.handlers", handlers_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _import_handlers(module: str, _package: str) -> types.ModuleType:
    return importlib.import_module(f"{module}.handlers")


def _accepts_two_arguments(func: Callable[..., Any]) -> bool:
    try:
        inspect.signature(func).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # builtins without a signature
        return True
    return True


def load_package(
    folder: Path,
    *,
    origin: Literal["entry_point", "folder", "mcp"],
    handlers: Callable[[str], types.ModuleType | None],
    default_name: str,
    checked: CheckedFiles | None = None,
) -> Package:
    """Load one package folder; every problem becomes a LoadError, never an exception.

    ``checked``: tool files that passed the JSON Schema checks before (see
    :func:`~corral.tools.contract.load_tool_file`)."""
    manifest, manifest_error = _read_manifest(folder, default_name)
    name = manifest.get("name", default_name)
    package = Package(
        name=name,
        path=folder,
        origin=origin,
        version=str(manifest.get("version", "0")),
        description=str(manifest.get("description", "")),
    )
    if manifest_error is not None:
        package.errors.append(manifest_error)
        return package
    tools_dir = folder / "tools"
    if not tools_dir.is_dir():
        package.errors.append(
            LoadError(
                file=str(folder),
                pointer="",
                message="a package folder needs a tools/ folder of tool files",
                package=name,
            )
        )
        return package
    try:
        module = handlers(name)
    except Exception as exc:  # a broken handlers module must not stop other packages
        package.errors.append(
            LoadError(
                file=str(folder / "handlers.py"),
                pointer="",
                message=f"could not import the handlers: {type(exc).__name__}: {exc}",
                package=name,
            )
        )
        return package
    hooks: dict[str, PolicyHook] = dict(getattr(module, "POLICY_HOOKS", {}) or {})
    install = getattr(module, INSTALL_HOOK, None) if module is not None else None
    if install is not None and not callable(install):
        package.errors.append(
            LoadError(
                file=str(getattr(module, "__file__", folder)),
                pointer="",
                message=f"{INSTALL_HOOK!r} must be a function install(setup); it is a "
                f"{type(install).__name__}",
                package=name,
            )
        )
        return package
    package.install = install
    pending = set(manifest.get("pending", []))
    for path in sorted(tools_dir.glob("*.json")):
        loaded = load_tool_file(path, package=name, checked=checked)
        if isinstance(loaded, LoadError):
            package.errors.append(loaded)
            continue
        if loaded.name == INSTALL_HOOK:
            package.errors.append(
                LoadError(
                    file=str(path),
                    pointer="/name",
                    message=f"the tool name {INSTALL_HOOK!r} is reserved for the package's "
                    "install hook; rename the tool",
                    package=name,
                )
            )
            continue
        handler = getattr(module, loaded.name, None) if module is not None else None
        if handler is None and loaded.name in pending:
            package.pending[loaded.name] = loaded
            continue
        if handler is None or not callable(handler):
            where = "its handlers module" if module is not None else "a handlers.py"
            package.errors.append(
                LoadError(
                    file=str(path),
                    pointer="/name",
                    message=f"no handler function {loaded.name!r} in {where}; define "
                    f"`def {loaded.name}(args, ctx)` or list the tool under 'pending' in "
                    "manifest.json",
                    package=name,
                )
            )
            continue
        if not _accepts_two_arguments(handler):
            package.errors.append(
                LoadError(
                    file=str(path),
                    pointer="/name",
                    message=f"handler {loaded.name!r} must accept (args, ctx)",
                    package=name,
                )
            )
            continue
        package.tools[loaded.name] = LoadedTool(
            spec=loaded,
            package=name,
            handler=handler,
            is_async=inspect.iscoroutinefunction(handler),
            policy_hook=hooks.get(loaded.name),
        )
    return package


def package_folders(extra: Iterable[Path] = ()) -> list[Path]:
    """Package folders from settings plus ``CORRAL_PACKAGE_PATH``; a folder may also hold
    several package folders."""
    roots = [*extra]
    env = os.environ.get(PACKAGE_PATH_ENV, "")
    roots.extend(Path(p) for p in env.split(os.pathsep) if p)
    folders: list[Path] = []
    for root in roots:
        if (root / "tools").is_dir():
            folders.append(root)
        elif root.is_dir():
            folders.extend(sorted(p for p in root.iterdir() if (p / "tools").is_dir()))
        else:
            folders.append(root)  # reported as an error by discover()
    return folders


def discover(extra_folders: Iterable[Path] = (), checked: CheckedFiles | None = None) -> Registry:
    """Find and load every package: entry points first, then configured folders.

    ``checked``: the record of tool files that passed the JSON Schema checks, updated with
    those that pass them now."""
    checked = checked or CheckedFiles()
    registry = Registry()
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            module = point.load()
            folder = Path(module.__file__).parent
        except Exception as exc:
            registry.errors.append(
                LoadError(
                    file=f"entry point {point.name}={point.value}",
                    pointer="",
                    message=f"could not import: {type(exc).__name__}: {exc}",
                )
            )
            continue
        registry.add(
            load_package(
                folder,
                origin="entry_point",
                default_name=point.name,
                handlers=functools.partial(_import_handlers, module.__name__),
                checked=checked,
            )
        )
    for folder in package_folders(extra_folders):
        if not folder.is_dir():
            registry.errors.append(
                LoadError(
                    file=str(folder),
                    pointer="",
                    message="package folder does not exist; fix CORRAL_PACKAGE_PATH or "
                    "package_paths in the settings",
                )
            )
            continue
        registry.add(
            load_package(
                folder,
                origin="folder",
                default_name=folder.name.lower(),
                handlers=functools.partial(_load_folder_handlers, folder),
                checked=checked,
            )
        )
    checked.save()
    return registry
