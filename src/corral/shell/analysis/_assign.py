"""Assignments in every position: prefixes, standalone, ``export``/``declare``/``local``…,
``env NAME=``, and names set by ``read``, ``printf -v``, ``for`` or ``${NAME:=…}``.

Variables that make a later program load code (``LD_PRELOAD``, ``BASH_ENV``…) are
refused; ``PATH`` may only gain absolute directories; variables whose value a program
runs (``EDITOR``, ``PAGER``…) have that value analysed as a command.
"""

from __future__ import annotations

from typing import Literal

from corral.shell.analysis._checks import path_entry_problem
from corral.shell.analysis._escaped import MARK, quote, unescape
from corral.shell.analysis._host import OWN_PID_WORDS
from corral.shell.analysis._parser import Node, adjacent, first_error, parse
from corral.shell.analysis._paths import normalize
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import Frame
from corral.shell.analysis._tables import (
    COMMAND_VARS,
    HIJACK_PREFIXES,
    HIJACK_VARS,
    SYSTEM_PROGRAM_DIRS,
    UNCONFINED_HIJACK_PREFIXES,
    UNCONFINED_HIJACK_VARS,
    WRITE_DIR_VARS,
)
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord, WordResolver, unquoted
from corral.shell.analysis._wrappers import ASSIGNMENT

__all__ = [
    "Scope",
    "assignment_node",
    "check",
    "computed",
    "declaration",
    "declaration_argv",
    "embedded",
    "unset",
]

Scope = Literal["prefix", "global", "decl", "env"]
_READERS = frozenset({"read", "mapfile", "readarray"})


def assignment_node(
    walker: Walking, node: Node, frame: Frame, *, scope: Scope
) -> tuple[str | None, ResolvedWord]:
    """Resolve ``NAME=value`` (checked now unless it prefixes a command)."""
    name_node = node.child_by_field_name("name")
    value_node = node.child_by_field_name("value")
    append = any(c.type == "+=" for c in node.children)
    resolver = frame.resolver
    name: str | None
    if name_node is None:
        name = None
    elif name_node.type == "subscript":
        inner = name_node.child_by_field_name("name")
        name = unescape(unquoted(walker.text(frame, inner))) if inner is not None else None
        resolver.subscript(name_node)
    else:
        name = unescape(unquoted(walker.text(frame, name_node)))
    if value_node is None:
        value = ResolvedWord("", "")
    elif value_node.type == "array":
        elements = [resolver.word(element) for element in value_node.named_children]
        for element in elements:
            walker.recorder.scan_word(element, frame.bases)
        # Element 0 is the scalar value; the rest are judged like PATH entries.
        value = ResolvedWord(
            walker.text(frame, value_node), ":".join(w.escaped for w in elements) or MARK
        )
    else:
        resolver.pwd_as_dot = False
        try:
            value = resolver.word(value_node, assignment=True)
        finally:
            resolver.pwd_as_dot = True
    if scope != "prefix":
        check(walker, name, value, frame, scope=scope, append=append)
    return name, value


def check(
    walker: Walking,
    name: str | None,
    value: ResolvedWord,
    frame: Frame,
    *,
    scope: Scope,
    command: str = "",
    append: bool = False,
) -> None:
    """Refuse an assignment that hijacks what later programs load or run."""
    if name is None:
        refuse(
            "env_hijack",
            value.text or "?",
            "The name of the variable being set cannot be determined before the command "
            "runs; set variables by literal name.",
        )
    base = name.split("[", 1)[0]
    # A name set anywhere to anything else may hold that at the kill: never own again.
    own = value.text in OWN_PID_WORDS and scope != "prefix"
    if own:
        walker.recorder.looked_back[2] += 1
    if own and base not in walker.recorder.not_own:
        walker.recorder.own_pids.add(base)
    else:
        walker.recorder.own_pids.discard(base)
        walker.recorder.not_own.add(base)
    if base in HIJACK_VARS or base.startswith(HIJACK_PREFIXES):
        refuse(
            "env_hijack",
            name,
            f"Setting {base} would make programs load code or configuration the command does "
            "not show; run the command without it.",
        )
    if walker.recorder.unconfined:
        _unconfined_check(walker, name, base, value, frame)
    if base == "PATH":
        problem = path_entry_problem(value.escaped, append=append)
        if problem:
            refuse(
                "env_hijack",
                f"{name}={value.text}",
                f"PATH would contain {problem}, so which program runs depends on the current "
                "folder; use absolute directories only.",
            )
        if walker.recorder.unconfined:
            _unconfined_path(name, value)
    if base == "IFS" and not (scope == "prefix" and command in _READERS) and scope != "env":
        refuse(
            "env_hijack",
            f"{name}={value.text}",
            "Changing IFS for the whole shell alters how every later word splits; set it only "
            "as a prefix of read (IFS=, read -r a b) or quote your expansions.",
        )
    if base in COMMAND_VARS and value.escaped:
        walker.script(value, frame, origin=f"{name}={value.text}", same_shell=False)
    embedded(walker, value, frame)
    walker.recorder.scan_word(value, frame.bases)


def _unconfined_path(name: str, value: ResolvedWord) -> None:
    """Without the sandbox PATH keeps to installed programs' folders (and itself): a
    project folder on it runs files the analysis cannot read under any name."""
    text = value.text.removeprefix(f"{name}=")
    for entry in text.replace('"', "").replace("'", "").split(":"):
        if entry in ("", "$PATH", "${PATH}"):
            continue
        literal = not any(ch in entry for ch in "$`~\\")
        if literal and (normalize(entry) + "/").startswith(SYSTEM_PROGRAM_DIRS):
            continue
        refuse(
            "env_hijack",
            f"{name}={value.text}",
            f"PATH would look up programs in {entry!r}, where the project's own files "
            "(which the analysis cannot read) could answer to any name, and without the "
            "sandbox they run on the host; keep PATH to installed programs' folders.",
        )


def _unconfined_check(
    walker: Walking, name: str, base: str, value: ResolvedWord, frame: Frame
) -> None:
    if base in UNCONFINED_HIJACK_VARS or base.startswith(UNCONFINED_HIJACK_PREFIXES):
        refuse(
            "env_hijack",
            name,
            f"Setting {base} changes which program or file runs (or where cd -, ~- and popd "
            "go), which the analysis cannot follow without the sandbox; name programs, files "
            "and folders literally instead.",
        )
    if base in WRITE_DIR_VARS:
        if value.value is None:
            refuse(
                "env_hijack",
                f"{name}={value.text}",
                f"{base} moves where programs write, and its value is only known when the "
                "command runs; without the sandbox set it to a literal path, if at all.",
            )
        recorder = walker.recorder
        ref = recorder.path_ref(value, "write", "argument", f"{base}=", frame.bases, ())
        if ref is not None:
            recorder.paths.append(ref)


def computed(walker: Walking, name: str | None, frame: Frame, origin: str) -> None:
    """A variable set to a value only known at run time (``read``, ``printf -v``…)."""
    if name is not None and name.split("[", 1)[0] in ("PATH", "IFS"):
        refuse(
            "env_hijack",
            origin,
            f"{name} would be set to a value only known when the command runs; set it "
            "literally, if at all.",
        )
    check(walker, name, ResolvedWord(origin, MARK), frame, scope="global")


def embedded(walker: Walking, word: ResolvedWord, frame: Frame) -> None:
    """A literal string holding ``$(…)`` or backquotes may be evaluated later (arithmetic,
    ``${x@P}``, ``unset 'a[$(…)]'``): analyse the substitutions in it."""
    value = word.value
    if not value or ("$(" not in value and "`" not in value):
        return
    if frame.depth + 1 > walker.max_depth:
        refuse("nesting_too_deep", word.text, "The command nests scripts too deeply.")
    # As an argument of ":" so that "a[$(cmd)]" parses like the word bash evaluates.
    src = (": " + value).encode("utf-8", "surrogatepass")
    tree = parse(src)
    if first_error(tree.root_node) is not None:
        refuse(
            "dynamic_script",
            word.text,
            "The string contains command-substitution syntax that bash could evaluate later "
            "and that does not parse; avoid $( and backquotes in literal strings.",
        )
    sink = walker.sink()
    resolver = WordResolver(src, sink, home=walker.home, positionals=None)
    inner = Frame(src, resolver, frame.functions, frame.depth + 1, frame.ctx, frame.bases)
    sink.frame = inner
    resolver.descend(tree.root_node)


def declaration(walker: Walking, node: Node, frame: Frame) -> list[ResolvedWord]:
    """``export``/``declare``/``typeset``/``readonly``/``local``; returns the argv."""
    keyword = node.children[0].type if node.children else "declare"
    argv = [ResolvedWord(keyword, keyword)]
    flags = ""
    for group in adjacent([c for c in node.children[1:] if c.is_named]):
        child = group[0]
        if len(group) > 1:
            # tree-sitter splits ``LD''_PRELOAD=x`` after ``export``; bash sees one word.
            word = _joined(walker, group, frame)
        elif child.type == "variable_name":
            exported = walker.text(frame, child)
            argv.append(ResolvedWord(exported, quote(exported)))
            continue
        elif child.type == "variable_assignment":
            name, value = assignment_node(walker, child, frame, scope="decl")
            argv.append(ResolvedWord(walker.text(frame, child), quote(f"{name}=") + value.escaped))
            if "n" in flags:
                _nameref(walker, value, frame)
            continue
        else:
            word = frame.resolver.word(child)
        argv.append(word)
        text = word.value
        if text is not None and text[:1] in "-+" and len(text) > 1:
            flags += text[1:]
            continue
        _declared_word(walker, word, frame, keyword, nameref="n" in flags)
    check_exported_functions(walker, keyword, argv)
    return argv


def check_exported_functions(walker: Walking, keyword: str, argv: list[ResolvedWord]) -> None:
    """``export -f`` and ``declare -fx`` hand functions to child shells: refused unconfined."""
    if not walker.recorder.unconfined:
        return
    flags = "".join((w.value or "")[1:] for w in argv[1:] if (w.value or "")[:1] in "-+")
    if "f" in flags and (keyword == "export" or "x" in flags):
        refuse(
            "shell_hijack",
            argv[0].text,
            f"{keyword} -{flags} hands functions to child shells (bash -c, scripts), where "
            "the analysis does not follow them, and without the sandbox they run on the "
            "host; define the function inside the child's script.",
        )


def _joined(walker: Walking, group: list[Node], frame: Frame) -> ResolvedWord:
    parts: list[str] = []
    for part in group:
        if part.type == "variable_name":
            parts.append(unquoted(walker.text(frame, part)))
        elif part.type == "variable_assignment":
            name_node = part.child_by_field_name("name")
            value_node = part.child_by_field_name("value")
            operator = "+=" if any(c.type == "+=" for c in part.children) else "="
            name = unquoted(walker.text(frame, name_node)) if name_node is not None else MARK
            value = frame.resolver.word(value_node, assignment=True).escaped if value_node else ""
            parts.append(name + operator + value)
        else:
            parts.append(frame.resolver.word(part, tilde=False).escaped)
    text = frame.src[group[0].start_byte : group[-1].end_byte].decode("utf-8", "replace")
    return ResolvedWord(text, "".join(parts))


def declaration_argv(walker: Walking, argv: list[ResolvedWord], frame: Frame) -> None:
    """``builtin export A=1``: declaration words reached through a wrapper."""
    flags = ""
    for word in argv[1:]:
        text = word.value
        if text is not None and text[:1] in "-+" and len(text) > 1:
            flags += text[1:]
            continue
        _declared_word(walker, word, frame, argv[0].value or "", nameref="n" in flags)


def _declared_word(
    walker: Walking, word: ResolvedWord, frame: Frame, keyword: str, *, nameref: bool
) -> None:
    # A name may carry a subscript (``'a[$(cmd)]=1'``), which bash evaluates.
    embedded(walker, word, frame)
    match = ASSIGNMENT.match(word.escaped)
    if match is None:
        if word.value is None:
            refuse(
                "env_hijack",
                word.text,
                f"{keyword} gets names that are not known before the command runs; set "
                "variables by literal name.",
            )
        return
    value = ResolvedWord(word.text, word.escaped[match.end() :])
    check(walker, match.group(1), value, frame, scope="decl", append="+=" in match.group(0))
    if nameref:
        _nameref(walker, value, frame)


def _nameref(walker: Walking, value: ResolvedWord, frame: Frame) -> None:
    target = value.value
    if target is None:
        refuse("env_hijack", value.text, "A nameref to an unknown variable; name it literally.")
    computed(walker, target.split("[", 1)[0], frame, value.text)


def unset(walker: Walking, node: Node, frame: Frame) -> None:
    """``unset 'a[$(cmd)]'`` evaluates the subscript."""
    for child in node.named_children:
        embedded(walker, frame.resolver.word(child), frame)
