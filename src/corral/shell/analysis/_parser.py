"""tree-sitter-bash, compiled once; one parser per thread (parsers are not thread-safe)."""

from __future__ import annotations

import threading

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Tree

__all__ = ["LANGUAGE", "Node", "adjacent", "first_error", "parse"]

LANGUAGE = Language(tree_sitter_bash.language())
_local = threading.local()


def parse(source: bytes) -> Tree:
    """Parse ``source`` as a bash script."""
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = Parser(LANGUAGE)
        _local.parser = parser
    return parser.parse(source)


def first_error(root: Node) -> Node | None:
    """The first ERROR or MISSING node under ``root`` in document order, if any."""
    if not root.has_error:
        return None
    cursor = root.walk()
    while True:
        node = cursor.node
        if node is not None and (node.is_error or node.is_missing):
            return node
        if node is not None and node.has_error and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return root


def adjacent(nodes: list[Node]) -> list[list[Node]]:
    """Group nodes that touch (no blank between them): bash reads each group as one word."""
    groups: list[list[Node]] = []
    for node in nodes:
        if groups and groups[-1][-1].end_byte == node.start_byte:
            groups[-1].append(node)
        else:
            groups.append([node])
    return groups
