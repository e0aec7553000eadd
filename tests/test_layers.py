"""Imports point down the layer list in README.md, and no import goes round in a cycle.

The README's `## Layers` block is the one source of the order. Every import counts, including
those inside functions and under `if TYPE_CHECKING:`. A prefix names a module and everything
under it, except the bare package name `corral`, which is `corral/__init__.py` alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.layers_check import (
    Import,
    Layer,
    collect_imports,
    describe_cycle,
    find_cycles,
    find_modules,
    layer_violations,
    read_layers,
    unlayered_modules,
)

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scan:
    """A package's modules, its import edges and the layers they are held to."""

    modules: dict[str, Path]
    imports: list[Import]
    layers: list[Layer]


def scan(root: Path, package_dir: Path, readme: Path) -> Scan:
    """Read the layers from `readme` and the imports of every module under `package_dir`."""
    modules = find_modules(package_dir)
    return Scan(
        modules=modules,
        imports=collect_imports(modules, root),
        layers=read_layers(readme.read_text(encoding="utf-8")),
    )


def layer_problems(found: Scan) -> str:
    """What breaks the layer order, as one message; empty when nothing does."""
    parts: list[str] = []
    if stray := unlayered_modules(found.modules, found.layers):
        parts += ["Modules in no layer (add each to the README's layer list):", *stray]
    if upward := layer_violations(found.imports, found.layers):
        parts += [f"Imports up the layer list or between siblings ({len(upward)}):", *upward]
    return "\n".join(parts)


def cycle_problems(found: Scan) -> str:
    """Every import cycle, as one message; empty when there is none."""
    cycles = find_cycles(found.imports)
    if not cycles:
        return ""
    return "\n".join([f"Import cycles ({len(cycles)}):", *map(describe_cycle, cycles)])


@pytest.fixture(scope="module")
def corral() -> Scan:
    return scan(ROOT, ROOT / "src" / "corral", ROOT / "README.md")


def test_imports_point_down_the_readme_layers(corral: Scan) -> None:
    if problems := layer_problems(corral):
        pytest.fail(problems, pytrace=False)


def test_no_import_cycles(corral: Scan) -> None:
    if problems := cycle_problems(corral):
        pytest.fail(problems, pytrace=False)


SYNTHETIC_README = """\
# fake

## Layers

```text
api: fake
top: fake.top
left: fake.left | right: fake.right
middle: fake.middle fake.util
bottom: fake.bottom
```

## Layout
"""

CLEAN_TREE = {
    "__init__.py": "from fake.top import run\n",
    "top.py": "import fake.left\nfrom fake import right\n\ndef run() -> None: ...\n",
    "left.py": "def go() -> None:\n    from .middle import helper\n",
    "right.py": "VALUE = 1\n",
    "middle.py": (
        "from typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from . import bottom\n\n"
        "def helper() -> None: ...\n"
    ),
    "util/__init__.py": "from ..bottom import Row\n",
    "bottom.py": "class Row: ...\n",
}

BROKEN_TREE = CLEAN_TREE | {
    "bottom.py": (
        "from typing import TYPE_CHECKING\n\n"
        "class Row: ...\n\n"
        "if TYPE_CHECKING:\n    from fake.right import VALUE\n"
    ),
    "left.py": (
        "from fake.right import VALUE\n\ndef go() -> None:\n    from .middle import helper\n"
    ),
    "middle.py": "from fake import util\n\ndef helper() -> None: ...\n",
    "util/__init__.py": (
        "from ..bottom import Row\n\ndef lookup() -> None:\n    from fake import middle\n"
    ),
    "stray.py": "",
}


def write_package(root: Path, files: dict[str, str]) -> Scan:
    """Write a package `fake` and its README under `root`, then scan it."""
    package_dir = root / "src" / "fake"
    package_dir.mkdir(parents=True)
    for name, text in files.items():
        (package_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (package_dir / name).write_text(text, encoding="utf-8")
    (root / "README.md").write_text(SYNTHETIC_README, encoding="utf-8")
    return scan(root, package_dir, root / "README.md")


def test_the_check_passes_a_clean_tree(tmp_path: Path) -> None:
    clean = write_package(tmp_path, CLEAN_TREE)

    assert [(edge.importer, edge.imported) for edge in clean.imports] == [
        ("fake", "fake.top"),
        ("fake.left", "fake.middle"),
        ("fake.middle", "fake.bottom"),
        ("fake.top", "fake.left"),
        ("fake.top", "fake.right"),
        ("fake.util", "fake.bottom"),
    ]
    assert layer_problems(clean) == ""
    assert cycle_problems(clean) == ""


def test_the_check_reports_upward_sibling_and_circular_imports(tmp_path: Path) -> None:
    broken = write_package(tmp_path, BROKEN_TREE)

    assert unlayered_modules(broken.modules, broken.layers) == ["fake.stray"]
    assert layer_violations(broken.imports, broken.layers) == [
        "fake.bottom (bottom) -> fake.right (right)  src/fake/bottom.py:6",
        "fake.left (left) -> fake.right (right)  src/fake/left.py:1",
    ]
    assert [describe_cycle(cycle) for cycle in find_cycles(broken.imports)] == [
        "fake.middle -> fake.util -> fake.middle\n"
        "    fake.middle -> fake.util  src/fake/middle.py:1\n"
        "    fake.util -> fake.middle  src/fake/util/__init__.py:4",
    ]
