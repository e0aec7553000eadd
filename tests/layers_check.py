"""The layer check: which imports between a package's modules point up, sideways or round.

It reads source with `ast` and imports nothing. Every import statement counts wherever it
stands: at module level, inside a function, under `if TYPE_CHECKING:`. The graph is built the
way import-linter's grimp builds it: `import a.b.c` points at `a.b.c`; `from a.b import c`
points at `a.b.c` when that is a module, else at `a.b`; importing `a.b.c` adds no edge to the
parent packages `a` and `a.b`. Only edges between modules of the scanned package count.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class Layer:
    """One entry of the README's layer list."""

    name: str
    rank: int
    """Its line in the list, 0 at the top; siblings share a rank."""
    prefixes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Import:
    """One import statement's edge from a module to another module of the package."""

    importer: str
    imported: str
    file: str
    """The importer's path, relative to the folder the scan was given."""
    line: int

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported}  {self.file}:{self.line}"


def read_layers(readme: str) -> list[Layer]:
    """The layers listed in the ```text block of the README's `## Layers` section."""
    section = re.search(r"^## Layers\n(.*?)(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    block = section and re.search(r"^```text\n(.*?)^```", section[1], re.MULTILINE | re.DOTALL)
    if not block:
        raise ValueError("the README has no ```text block under '## Layers'")
    rows = [row for row in block[1].splitlines() if row.strip()]
    layers: list[Layer] = []
    for rank, row in enumerate(rows):
        for entry in row.split(" | "):
            name, colon, prefixes = entry.partition(":")
            if not colon or not name.strip() or not prefixes.split():
                raise ValueError(f"layer entry {entry!r} is not 'name: module prefixes'")
            layers.append(Layer(name=name.strip(), rank=rank, prefixes=tuple(prefixes.split())))
    listed = [prefix for layer in layers for prefix in layer.prefixes]
    if twice := sorted({prefix for prefix in listed if listed.count(prefix) > 1}):
        raise ValueError(f"prefixes listed in more than one layer: {twice!r}")
    return layers


def covers(prefix: str, module: str) -> bool:
    """Whether a layer prefix takes in a module; the bare package name is only its `__init__`."""
    return module == prefix or ("." in prefix and module.startswith(prefix + "."))


def layer_of(module: str, layers: Iterable[Layer]) -> Layer | None:
    """The layer whose longest prefix covers the module, None when no prefix does."""
    matches = [
        (len(prefix), layer)
        for layer in layers
        for prefix in layer.prefixes
        if covers(prefix, module)
    ]
    return max(matches, key=lambda match: match[0])[1] if matches else None


def find_modules(package_dir: Path) -> dict[str, Path]:
    """Every `.py` file under a package folder by dotted name (`pkg/a/__init__.py` is `pkg.a`)."""
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def absolute_base(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The module a `from ... import` names, with a relative one resolved against `module`."""
    if node.level == 0:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    parts = package.split(".")
    anchor = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{anchor}.{node.module}" if node.module else anchor


def enclosing_module(name: str, modules: Mapping[str, Path]) -> str | None:
    """`name` if it is one of the modules, else the nearest module that encloses it, if any."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imported_names(
    node: ast.Import | ast.ImportFrom, module: str, path: Path, modules: Mapping[str, Path]
) -> list[str]:
    """The dotted names one import statement points at: a submodule if it is one, else its base."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = absolute_base(node, module, path)
    named = [f"{base}.{alias.name}" for alias in node.names]
    return [name if name in modules else base for name in named]


def collect_imports(modules: Mapping[str, Path], root: Path) -> list[Import]:
    """Every import edge between the modules, one per import site, sorted."""
    imports: set[Import] = set()
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        file = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in imported_names(node, module, path, modules):
                target = enclosing_module(name, modules)
                if target is not None and target != module:
                    edge = Import(importer=module, imported=target, file=file, line=node.lineno)
                    imports.add(edge)
    return sorted(imports)


def unlayered_modules(modules: Iterable[str], layers: list[Layer]) -> list[str]:
    """The modules no layer prefix covers."""
    return sorted(module for module in modules if layer_of(module, layers) is None)


def layer_violations(imports: Iterable[Import], layers: list[Layer]) -> list[str]:
    """Each import from a lower layer to a higher one or between siblings, one line per site."""
    found: list[str] = []
    for edge in imports:
        source, target = layer_of(edge.importer, layers), layer_of(edge.imported, layers)
        if source is None or target is None or source == target:
            continue
        if target.rank <= source.rank:
            found.append(
                f"{edge.importer} ({source.name}) -> {edge.imported} ({target.name})"
                f"  {edge.file}:{edge.line}"
            )
    return sorted(found)


def import_graph(imports: Iterable[Import]) -> dict[str, dict[str, Import]]:
    """The graph: importer -> imported -> the first import site of that edge."""
    graph: dict[str, dict[str, Import]] = {}
    for edge in sorted(imports):
        graph.setdefault(edge.importer, {}).setdefault(edge.imported, edge)
    return graph


def shortest_path(graph: Mapping[str, Mapping[str, Import]], start: str, end: str) -> list[str]:
    """The modules on a shortest import path from `start` to `end` (breadth first), or []."""
    came_from: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        if module == end:
            path = [end]
            while path[-1] != start:
                path.append(came_from[path[-1]])
            return path[::-1]
        for following in sorted(graph.get(module, {})):
            if following not in came_from:
                came_from[following] = module
                queue.append(following)
    return []


def find_cycles(imports: Iterable[Import]) -> list[list[Import]]:
    """Import cycles, shortest first, until every edge that lies on a cycle is in one of them.

    An edge lies on a cycle when its target leads back to its importer; the shortest way back
    closes the shortest cycle through it.
    """
    graph = import_graph(imports)
    candidates: set[tuple[str, ...]] = set()
    for importer, targets in graph.items():
        for imported in targets:
            way_back = shortest_path(graph, imported, importer)
            if way_back:
                cycle = (importer, *way_back[:-1])
                start = cycle.index(min(cycle))
                candidates.add(cycle[start:] + cycle[:start])
    cycles: list[list[Import]] = []
    covered: set[Import] = set()
    for cycle in sorted(candidates, key=lambda modules: (len(modules), modules)):
        edges = [graph[a][b] for a, b in zip(cycle, (*cycle[1:], cycle[0]), strict=True)]
        if not covered.issuperset(edges):
            covered.update(edges)
            cycles.append(edges)
    return cycles


def describe_cycle(cycle: list[Import]) -> str:
    """`a -> b -> a`, then each edge's import site on its own line."""
    path = " -> ".join([edge.importer for edge in cycle] + [cycle[0].importer])
    return "\n".join([path, *(f"    {edge}" for edge in cycle)])
