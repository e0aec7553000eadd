"""Where tree-sitter-bash and bash read the text differently: refuse or repair.

Parse errors are refused (fail closed). tree-sitter-bash also splits one bash word in two.

tree-sitter-bash ends a word at a quote or expansion followed directly by a backslash
escape: ``sud''\\o``, ``$x\\b``, ``"a"\\ b`` become two words, where bash sees one
(``sudo``, …). Left alone, ``sud''\\o ls`` would be judged as a command named ``sud``.
The repair rewrites each such escape as the equivalent single-quoted character
(``\\o`` → ``'o'``), which the grammar joins correctly, and the source is parsed again.
"""

from __future__ import annotations

from corral.shell.analysis._parser import Node, first_error
from corral.shell.analysis._refusal import refuse

__all__ = ["check_continuations", "check_errors", "repair"]

_QUOTED_CONTEXT = frozenset(
    {"raw_string", "string", "string_content", "ansi_c_string", "comment", "heredoc_body",
     "heredoc_content", "simple_heredoc_body", "heredoc_start", "heredoc_end", "regex",
     "extglob_pattern", "translated_string"}
)  # fmt: skip
_WORDLIKE = frozenset(
    {"word", "concatenation", "string", "raw_string", "ansi_c_string", "translated_string",
     "expansion", "simple_expansion", "command_substitution", "process_substitution",
     "arithmetic_expansion", "number", "command_name", "variable_assignment",
     "brace_expression"}
)  # fmt: skip


def _glued_word(root: Node, index: int) -> bool:
    """A word that starts with the backslash at ``index`` and touches the token before."""
    node = root.descendant_for_byte_range(index, index + 1)
    if node is None or node.type != "word" or node.start_byte != index:
        return False
    while node.prev_sibling is None and node.parent is not None:
        if node.parent.start_byte != index:
            return False
        node = node.parent
    previous = node.prev_sibling
    if previous is None or previous.end_byte != index:
        return False
    if node.parent is not None and node.parent.type == "concatenation":
        return False
    return previous.type in _WORDLIKE


def _dropped_blank(root: Node, src: bytes, index: int) -> bool:
    """An escaped blank the grammar skips as whitespace (``"a"\\ b``, ``\\ x``); bash keeps
    it as a literal blank inside the word."""
    if src[index + 1 : index + 2] not in (b" ", b"\t"):
        return False
    node = root.descendant_for_byte_range(index, index + 2)
    if node is None:
        return True
    return not (node.type == "word" and node.start_byte < index < node.end_byte)


def repair(src: bytes, root: Node) -> bytes | None:
    """The rewritten source when a word was split, else ``None``."""
    edits: list[int] = []
    start = 0
    while (index := src.find(b"\\", start)) != -1:
        start = index + 2
        following = src[index + 1 : index + 2]
        if not following or following == b"\n":
            continue
        node = root.descendant_for_byte_range(index, index + 1)
        if node is not None and node.type in _QUOTED_CONTEXT:
            continue
        if _glued_word(root, index):
            # Every escape of the glued word, so one pass joins it whole.
            assert node is not None
            end = node.end_byte
            edits.append(index)
            while (inner := src.find(b"\\", start, end)) != -1:
                edits.append(inner)
                start = inner + 2
        elif _dropped_blank(root, src, index):
            edits.append(index)
    if not edits:
        return _repair_redirects(src, root)
    out = bytearray(src)
    for index in reversed(edits):
        end = index + 2
        # A multi-byte character: quote the whole UTF-8 sequence.
        while end < len(out) and 0x80 <= out[end] < 0xC0:
            end += 1
        char = bytes(out[index + 1 : end])
        out[index:end] = b'"\'"' if char == b"'" else b"'" + char + b"'"
    return bytes(out)


_STDIN_OPERATORS = (b"<", b"<&", b"<<", b"<<-", b"<<<")


def _reads_stdin(src: bytes, node: Node) -> bool:
    descriptor = node.child_by_field_name("descriptor")
    if descriptor is not None and src[descriptor.start_byte : descriptor.end_byte] != b"0":
        return False
    return any(not c.is_named and src[c.start_byte : c.end_byte] in _STDIN_OPERATORS
               for c in node.children)  # fmt: skip


def _repair_redirects(src: bytes, root: Node) -> bytes | None:
    """Redirects bash accepts and the grammar does not, rewritten for analysis only.

    ``N<>FILE`` (open read-write) is analysed as ``N>>FILE``: a write without truncation.
    A here-string after a file redirect (``cat > out <<< text``) is moved in front of the
    redirects, which changes nothing when no other redirect feeds standard input; when one
    does, the text is left to fail as a parse error.
    """
    error = first_error(root)
    if error is None or error.parent is None:
        return None
    parent = error.parent
    text = src[error.start_byte : error.end_byte]
    if text == b">" and src[error.start_byte - 1 : error.start_byte] == b"<":
        return src[: error.start_byte - 1] + b">>" + src[error.end_byte :]
    if text != b"<<" or parent.type != "redirected_statement":
        return None
    children = list(parent.children)
    index = children.index(error)
    if index + 1 >= len(children) or children[index + 1].type != "file_redirect":
        return None
    misread = children[index + 1]
    destination = misread.child_by_field_name("destination")
    if destination is None or index < 1:
        return None
    others = [c for i, c in enumerate(children) if i not in (index, index + 1) and i > 0]
    redirects = [c for c in others if c.type.endswith("redirect")]
    if len(redirects) != len(others) or any(_reads_stdin(src, c) for c in redirects):
        return None
    head = children[0]
    moved = b" ".join(src[c.start_byte : c.end_byte] for c in redirects)
    word = src[destination.start_byte : destination.end_byte]
    statement = src[head.start_byte : head.end_byte] + b" <<< " + word + b" " + moved
    return src[: parent.start_byte] + statement + src[parent.end_byte :]


def check_errors(src: bytes, root: Node, depth: int, origin: str) -> None:
    """Refuse any ERROR or MISSING node: what tree-sitter cannot parse is not analysed."""
    error = first_error(root)
    if error is None:
        return
    snippet = src[error.start_byte : error.end_byte].decode("utf-8", "replace").strip()
    if not snippet:
        line = src[: error.start_byte].count(b"\n") + 1
        snippet = f"line {line}"
    where = " in the nested script" if depth else ""
    refuse(
        "parse_error",
        snippet or origin,
        f"The command does not parse as bash{where} near {snippet!r}; fix the syntax "
        "(quotes, brackets, here-document ends) and try again.",
    )


def check_continuations(src: bytes, root: Node) -> None:
    """Refuse a backslash-newline gluing two pieces of one word (``r\\⏎m``), which
    bash joins and tree-sitter splits."""
    start = 0
    while (index := src.find(b"\\\n", start)) != -1:
        start = index + 2
        slashes = 0
        while index - slashes - 1 >= 0 and src[index - slashes - 1] == 0x5C:
            slashes += 1
        if slashes % 2:
            continue
        node = root.descendant_for_byte_range(index, index + 2)
        if node is not None and node.type in _QUOTED_CONTEXT:
            continue
        before = src[index - 1 : index] if index else b" "
        after = src[index + 2 : index + 3] or b" "
        if not before.isspace() and not after.isspace() and after not in b";|&<>()":
            word = src[max(0, index - 20) : index + 22].decode("utf-8", "replace")
            refuse(
                "parse_error",
                word.strip(),
                "A backslash-newline joins two pieces of one word, which the analysis "
                "cannot follow; write the word on one line.",
            )
