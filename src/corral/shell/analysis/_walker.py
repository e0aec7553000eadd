"""The AST walk: every statement wherever it stands, every command it runs.

Statements return a :data:`BasesAfter` (where the shell may stand after success and after
failure) so a literal ``cd`` moves the base of later relative paths exactly when it can.
Commands go through :meth:`Walker.run`, which resolves wrappers and hands specific
programs to :mod:`corral.shell.analysis._handlers`. The handler modules see the walker
through the :class:`~corral.shell.analysis._walking.Walking` protocol, never this module.
"""

from __future__ import annotations

from collections.abc import Sequence

from corral.shell.analysis import _argv, _assign, _compound, _functions, _handlers, _redirects
from corral.shell.analysis._chars import describe_character, find_forbidden_character
from corral.shell.analysis._escaped import BraceOverflow, brace_expand, is_glob, quote
from corral.shell.analysis._options import OptionError
from corral.shell.analysis._parser import Node, adjacent, parse
from corral.shell.analysis._paths import normalize
from corral.shell.analysis._records import Recorder
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import (
    START,
    Bases,
    BasesAfter,
    Call,
    Frame,
    FunctionInfo,
    Redir,
    StatementContext,
    Stdin,
    merge,
)
from corral.shell.analysis._syntax import check_continuations, check_errors, repair
from corral.shell.analysis._tables import BLOCKED, BLOCKED_PREFIXES, RESERVED
from corral.shell.analysis._unreadable import (
    SYSTEM_PROGRAM_DIRS,
    project_code_runner,
    refuse_unreadable,
    sql_script_on_stdin,
)
from corral.shell.analysis._words import ResolvedWord, WordResolver
from corral.shell.analysis._wrappers import found_paths, unwrap
from corral.shell.analysis._written import check_git_writes, check_run

__all__ = ["MAX_DEPTH", "Sink", "Walker"]

MAX_DEPTH = 4
"""Levels of re-parsed scripts (``bash -c`` inside ``bash -c``…) accepted."""
_MAX_BACKTICKS = 8
_MAX_WORK = 8_000_000
_TOP = StatementContext()
_STATEMENTS = frozenset(
    {"command", "redirected_statement", "pipeline", "list", "subshell", "compound_statement",
     "if_statement", "while_statement", "for_statement", "c_style_for_statement",
     "case_statement", "function_definition", "negated_command", "test_command",
     "variable_assignment", "variable_assignments", "declaration_command", "unset_command"}
)  # fmt: skip


class Sink:
    """Receives what the word resolver meets, on behalf of one frame."""

    __slots__ = ("frame", "walker")

    def __init__(self, walker: Walker) -> None:
        self.walker = walker
        self.frame: Frame | None = None

    def substitution(self, node: Node) -> None:
        assert self.frame is not None
        self.walker.substitution(node, self.frame)

    def prompt_expansion(self, node: Node) -> None:
        assert self.frame is not None
        text = self.walker.text(self.frame, node)
        refuse(
            "dynamic_script",
            text,
            f"{text!r} expands a variable as a prompt string, which runs any command "
            "substitution stored in it; print the variable plainly instead.",
        )

    def param_assignment(self, name: str, node: Node) -> None:
        assert self.frame is not None
        _assign.computed(self.walker, name, self.frame, self.walker.text(self.frame, node))

    def opaque_text(self, text: str, node: Node) -> None:
        assert self.frame is not None
        _assign.embedded(self.walker, ResolvedWord(text, quote(text)), self.frame)


class Walker:
    """Walks one command line; collects commands, paths and ``cd`` moves, or refuses."""

    max_depth = MAX_DEPTH
    max_work = _MAX_WORK

    def __init__(self, recorder: Recorder, *, reuse: bool = True) -> None:
        self.recorder = recorder
        self.reuse = reuse
        self.padded = False
        self.home = recorder.home
        self.cwd = recorder.cwd
        self.call_walks = 0
        self.call_stack: list[str] = []
        self.work = 0
        self.backticks = 0
        self.definitions = 0
        self.function_calls = 0
        self._sinks: list[Sink] = []

    def sink(self) -> Sink:
        sink = Sink(self)
        self._sinks.append(sink)
        return sink

    def release(self) -> None:
        """Break the reference cycles of the finished walk (a sink and its frame's resolver
        point at each other; a function and its frame's function table too), so that its
        objects are freed at once instead of by the cyclic garbage collector, whose passes
        they would otherwise trigger and lengthen."""
        for sink in self._sinks:
            if sink.frame is not None:
                sink.frame.functions.clear()
                sink.frame = None
        self._sinks.clear()

    def text(self, frame: Frame, node: Node) -> str:
        return frame.src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    # -- sources ---------------------------------------------------------------------------

    def expand_words(self, groups: Sequence[Sequence[Node]], frame: Frame) -> list[ResolvedWord]:
        """Resolve argument words (see :func:`corral.shell.analysis._argv.expand_words`)."""
        return _argv.expand_words(self, groups, frame)

    def walk_source(
        self,
        text: str,
        *,
        depth: int,
        origin: str,
        ctx: StatementContext | None = None,
        bases: Bases = START,
        positionals: tuple[str, ...] | None = None,
        functions: dict[str, FunctionInfo] | None = None,
    ) -> BasesAfter:
        """Parse ``text`` and walk it as a script at nesting ``depth``."""
        if depth > MAX_DEPTH:
            refuse(
                "nesting_too_deep",
                origin,
                f"The command nests scripts (bash -c, here-documents…) more than {MAX_DEPTH} "
                "levels deep; flatten it.",
            )
        if depth:
            bad = find_forbidden_character(text)
            if bad is not None:
                char = describe_character(text[bad])
                refuse("control_character", origin, f"The nested script contains {char}.")
        src = text.encode("utf-8", "surrogatepass")
        self.work += len(src) + 1
        if self.work > self.max_work:
            refuse("too_large", origin, "The command expands into too much script to analyse.")
        root = parse(src).root_node
        for _ in range(16):
            repaired = repair(src, root)
            if repaired is None:
                break
            src = repaired
            root = parse(src).root_node
        else:
            refuse("parse_error", origin, "The command's quoting could not be followed.")
        check_errors(src, root, depth, origin)
        check_continuations(src, root)
        sink = self.sink()
        resolver = WordResolver(src, sink, home=self.home, positionals=positionals)
        frame = Frame(src, resolver, {} if functions is None else functions, depth)
        sink.frame = frame
        flow = self.block(root.children, frame, ctx or _TOP, bases)
        if functions is None:
            _functions.check_fork_bombs(frame.functions)
        return flow

    # -- statements ------------------------------------------------------------------------

    def block(
        self, children: Sequence[Node], frame: Frame, ctx: StatementContext, bases: Bases
    ) -> BasesAfter:
        """A sequence of statements separated by ``;``, ``&`` or newlines."""
        current = bases
        last: BasesAfter = (bases, bases)
        kids = list(children)
        for index, child in enumerate(kids):
            if not child.is_named:
                continue
            kind = child.type
            if kind == "comment":
                continue
            if kind not in _STATEMENTS:
                self.descend(child, frame)
                continue
            if index + 1 < len(kids) and kids[index + 1].type == "&":
                self.stmt(child, frame, ctx.spawned(), current)
                last = (current, current)
                continue
            ok, fail = self.stmt(child, frame, ctx, current)
            current = merge(ok, fail) or current
            last = (ok or current, fail or current)
        return last

    def stmt(
        self,
        node: Node,
        frame: Frame,
        ctx: StatementContext,
        bases: Bases,
        tail: Sequence[Node] = (),
    ) -> BasesAfter:
        """Walk one statement; ``tail`` are redirects bash binds to its last command.

        tree-sitter hangs ``a && b > f`` and ``a | b > f`` on the whole list or pipeline;
        bash gives the redirect to ``b`` alone, so it is passed down to the last command.
        """
        self.work += 1
        frame.ctx = ctx
        frame.bases = bases
        kind = node.type
        if kind == "command":
            return self.command_node(node, frame, ctx, bases, list(tail))
        if kind == "redirected_statement":
            return self._redirected(node, frame, ctx, bases, tail)
        if kind == "pipeline":
            parts = [c for c in node.children if c.is_named and c.type != "comment"]
            carries: tuple[str, ...] = ()
            text: str | None = None
            for index, child in enumerate(parts):
                stdin = None if index == 0 else Stdin("pipe", text=text, carries=carries)
                last = tail if index == len(parts) - 1 else ()
                before = len(self.recorder.commands)
                self.recorder.clear_output()
                self.stmt(child, frame, ctx.spawned(stdin=stdin), bases, last)
                fed = self.recorder.commands[before:]
                text = self.recorder.last_output if len(fed) == 1 else None
                if self.recorder.unconfined:
                    carries = found_paths(fed)
            return (bases, bases)
        if kind == "list":
            return self._list(node, frame, ctx, bases, tail)
        if tail:
            return self._with_redirects(node, list(tail), frame, ctx, bases)
        if kind == "subshell":
            self.block(node.children, frame, ctx.spawned(), bases)
            return (bases, bases)
        if kind in ("compound_statement", "do_group"):
            return self.block(node.children, frame, ctx, bases)
        if kind == "if_statement":
            return _compound.if_(self, node, frame, ctx, bases)
        if kind == "while_statement":
            return _compound.while_(self, node, frame, ctx, bases)
        if kind == "for_statement":
            return _compound.for_(self, node, frame, ctx, bases)
        if kind == "c_style_for_statement":
            return _compound.c_for(self, node, frame, ctx, bases)
        if kind == "case_statement":
            return _compound.case(self, node, frame, ctx, bases)
        if kind == "function_definition":
            _functions.define(self, node, frame, bases)
        elif kind == "negated_command":
            both = merge(*self.block(node.children, frame, ctx, bases))
            return (both, both)
        elif kind == "test_command":
            _compound.test(self, node, frame)
        elif kind == "variable_assignment":
            _assign.assignment_node(self, node, frame, scope="global")
        elif kind == "variable_assignments":
            for child in node.named_children:
                _assign.assignment_node(self, child, frame, scope="global")
        elif kind == "declaration_command":
            argv = _assign.declaration(self, node, frame)
            call = Call(argv=argv, frame=frame, ctx=ctx, bases=bases)
            self.recorder.record(call, argv[0].text, mutating=False, text_only=True)
        elif kind == "unset_command":
            _assign.unset(self, node, frame)
        else:
            self.descend(node, frame)
        return (bases, bases)

    def descend(self, node: Node, frame: Frame) -> None:
        """Walk the statements, substitutions and expansions inside a non-statement node."""
        kind = node.type
        if kind in ("command_substitution", "process_substitution"):
            self.substitution(node, frame)
            return
        if kind == "expansion":
            frame.resolver.word(node, tilde=False)
            return
        if kind == "subscript":
            frame.resolver.subscript(node)
            return
        if kind == "raw_string":
            # Outside a command's words (``(( … ))``, ``[[ … ]]``, case patterns) a quoted
            # ``$(…)`` may still be evaluated as an arithmetic subscript.
            frame.resolver.literal_code(node)
            return
        for child in node.named_children:
            if child.type in _STATEMENTS:
                self.stmt(child, frame, frame.ctx, frame.bases)
            elif (
                child.named_child_count
                or child.type.endswith("substitution")
                or child.type == "raw_string"
            ):
                self.descend(child, frame)

    def _list(
        self, node: Node, frame: Frame, ctx: StatementContext, bases: Bases, tail: Sequence[Node]
    ) -> BasesAfter:
        """``a && b || c`` (tree-sitter nests lists to the left; walked as a flat chain)."""
        chain: list[tuple[str, Node]] = []
        current = node
        while current.type == "list":
            named = [c for c in current.children if c.is_named and c.type != "comment"]
            if len(named) != 2:
                break
            operator = next((c.type for c in current.children if c.type in ("&&", "||")), "&&")
            chain.append((operator, named[1]))
            current = named[0]
        else:
            chain.reverse()
            ok, fail = self.stmt(current, frame, ctx, bases)
            for index, (operator, statement) in enumerate(chain):
                last = tail if index == len(chain) - 1 else ()
                if operator == "&&":
                    right_ok, right_fail = self.stmt(statement, frame, ctx, ok or bases, last)
                    ok, fail = right_ok, merge(fail, right_fail)
                else:
                    right_ok, right_fail = self.stmt(statement, frame, ctx, fail or bases, last)
                    ok, fail = merge(ok, right_ok), right_fail
            return (ok, fail)
        return self.block(node.children, frame, ctx, bases)

    def _redirected(
        self, node: Node, frame: Frame, ctx: StatementContext, bases: Bases, tail: Sequence[Node]
    ) -> BasesAfter:
        body = node.child_by_field_name("body")
        redirect_nodes = [
            child
            for index, child in enumerate(node.children)
            if node.field_name_for_child(index) == "redirect"
        ]
        redirect_nodes.extend(tail)
        if body is not None and body.type in ("command", "list", "pipeline"):
            return self.stmt(body, frame, ctx, bases, redirect_nodes)
        return self._with_redirects(body, redirect_nodes, frame, ctx, bases)

    def _with_redirects(
        self,
        body: Node | None,
        redirect_nodes: list[Node],
        frame: Frame,
        ctx: StatementContext,
        bases: Bases,
    ) -> BasesAfter:
        """A compound statement (or nothing) with redirects that apply to all of it."""
        gathered = _redirects.gather(self, frame, redirect_nodes)
        redirs = _redirects.resolve(self, frame, gathered.files, bases)
        self.recorder.record_redirects(redirs, "", bases)
        stdin = _redirects.stdin_of(gathered, redirs, ctx.stdin)
        flow: BasesAfter = (bases, bases)
        if body is not None:
            flow = self.stmt(body, frame, ctx.with_stdin(stdin), bases)
        return self._continue(gathered, frame, ctx, bases, flow)

    def _continue(
        self,
        gathered: _redirects.Gathered,
        frame: Frame,
        ctx: StatementContext,
        bases: Bases,
        flow: BasesAfter,
    ) -> BasesAfter:
        """Statements tree-sitter hangs under a here-document: ``cat <<E | sh``, ``&&``…"""
        text = self.recorder.last_output
        if gathered.continuation:
            self.recorder.looked_back[3] += 1
        for kind, statement in gathered.continuation:
            if kind == "|":
                piped = Stdin("pipe", text=text)
                self.stmt(statement, frame, ctx.spawned(stdin=piped), bases)
                flow = (bases, bases)
            elif kind == "&&":
                ok, fail = self.stmt(statement, frame, ctx, flow[0] or bases)
                flow = (ok, merge(flow[1], fail))
            else:
                ok, fail = self.stmt(statement, frame, ctx, flow[1] or bases)
                flow = (merge(flow[0], ok), fail)
        return flow

    def resolve_redirects(self, nodes: Sequence[Node], frame: Frame, bases: Bases) -> list[Redir]:
        return _redirects.resolve(self, frame, nodes, bases)

    # -- commands --------------------------------------------------------------------------

    def command_node(
        self,
        node: Node,
        frame: Frame,
        ctx: StatementContext,
        bases: Bases,
        outer_redirects: list[Node],
    ) -> BasesAfter:
        """A simple command: prefix assignments, name, arguments, redirects."""
        assignments: list[Node] = []
        name_node: Node | None = None
        args: list[Node] = []
        redirect_nodes: list[Node] = []
        extra: list[Node] = []
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "name":
                name_node = child
                continue
            if field_name == "argument":
                args.append(child)
                continue
            kind = child.type
            if field_name == "redirect" or kind.endswith("_redirect"):
                redirect_nodes.append(child)
            elif kind == "variable_assignment" and name_node is None:
                assignments.append(child)
            elif child.is_named and kind != "comment":
                extra.append(child)
            elif name_node is not None and kind in ("=~", "=="):
                args.append(child)
        prefix = [_assign.assignment_node(self, a, frame, scope="prefix") for a in assignments]
        gathered = _redirects.gather(self, frame, [*redirect_nodes, *outer_redirects])
        if name_node is None:
            for name, value in prefix:
                _assign.check(self, name, value, frame, scope="global")
            redirs = _redirects.resolve(self, frame, gathered.files, bases)
            self.recorder.record_redirects(redirs, "", bases)
            return self._continue(gathered, frame, ctx, bases, (bases, bases))
        named = name_node.named_children
        literal = named[0] if named else name_node
        groups = adjacent([literal, *args])
        argv = [_argv.merged(self, groups[0], frame), *self.expand_words(groups[1:], frame)]
        for child in extra:
            if child.type in _STATEMENTS:
                self.stmt(child, frame, ctx.spawned(), bases)
            else:
                self.descend(child, frame)
        redirs = _redirects.resolve(self, frame, gathered.files, bases)
        stdin = _redirects.stdin_of(gathered, redirs, ctx.stdin)
        call = Call(
            argv=argv, frame=frame, ctx=ctx.with_stdin(stdin), bases=bases, redirects=redirs
        )
        return self._continue(gathered, frame, ctx, bases, self.run(call, prefix=prefix))

    def run(
        self, call: Call, *, prefix: Sequence[tuple[str | None, ResolvedWord]] = ()
    ) -> BasesAfter:
        """Judge one resolved command (and what it wraps), then record it."""
        argv = call.argv
        name_word = argv[0]
        value = name_word.value
        frame = call.frame
        if value is None:
            refuse(
                "unresolvable_command",
                name_word.text,
                f"The command name {name_word.text!r} is computed when the command runs, so "
                "it cannot be checked; write the program name literally.",
            )
        if is_glob(name_word.escaped) or _expands(name_word.escaped):
            refuse(
                "unresolvable_command",
                name_word.text,
                f"The command name {name_word.text!r} is a pattern the shell expands; write "
                "the program name literally.",
            )
        bad = find_forbidden_character(value)
        if bad is not None:
            refuse(
                "control_character",
                name_word.text,
                f"The command name contains {describe_character(value[bad])}; write it plainly.",
            )
        if value == "" or name_word.text in RESERVED:
            shown = name_word.text or "''"
            refuse(
                "parse_error",
                shown,
                f"{shown!r} cannot be a command name here; check the syntax of the command.",
            )
        base = value.rsplit("/", 1)[-1] if "/" in value.rstrip("/") else value
        if base in BLOCKED or base.startswith(BLOCKED_PREFIXES):
            refuse(
                "blocked_binary",
                name_word.text,
                f"{base!r} changes privileges, power state, disks or the kernel and is never "
                "run by an agent; do the task without it or ask a person to do it.",
            )
        if base in ("eval", "fc"):
            refuse(
                "eval",
                name_word.text,
                f"{base!r} runs text as a command, which hides what runs; write the command "
                "directly instead.",
            )
        for name, word in prefix:
            _assign.check(self, name, word, frame, scope="prefix", command=base)
        if not call.scanned:
            for word in argv[1:]:
                self.recorder.scan_word(word, call.bases)
        if call.ctx.function is not None and not call.wrappers:
            caller = frame.functions.get(call.ctx.function)
            if caller is not None:
                caller.calls.append((value, call.ctx.spawning))
        if "/" in value:
            read = check_run(self, call, name_word, "exec")
            if not read and not normalize(value).startswith(SYSTEM_PROGRAM_DIRS):
                refuse_unreadable(
                    self,
                    call,
                    name_word,
                    f"{value!r} is a program or script "
                    "file of the project, not an installed program",
                )
        info = frame.functions.get(value) if not call.wrappers else None
        if info is not None:
            self.recorder.record(call, base, mutating=False, function=True)
            return _functions.call(self, info, call)
        if self.recorder.unconfined:
            runner = project_code_runner(base, argv) or sql_script_on_stdin(base, call)
            if runner is not None:
                refuse_unreadable(
                    self,
                    call,
                    runner,
                    f"{base} runs code from files it finds (makefiles, package.json scripts, "
                    "build, test and configuration scripts, images)",
                )
        try:
            unwrapped = unwrap(base, argv)
        except OptionError as exc:
            refuse(
                "unresolvable_command",
                exc.word,
                f"{base!r} runs another command, which cannot be found because {exc.word!r} "
                f"{exc.reason}; call the program directly.",
            )
        if unwrapped is not None:
            return _handlers.wrapper(self, call, base, unwrapped)
        written = len(self.recorder.writes)
        flow = _handlers.dispatch(self, call, base)
        if self.recorder.unconfined:
            # Git runs .git/config and .git/hooks/ on its next call, whenever that is.
            check_git_writes(self, call, written)
        return flow

    # -- substitutions and scripts -----------------------------------------------------------

    def substitution(self, node: Node, frame: Frame) -> None:
        """Walk the commands of ``$(…)``, backquotes or ``<(…)``/``>(…)``."""
        ctx, bases = frame.ctx, frame.bases
        first = node.children[0].type if node.children else ""
        try:
            if first in ("`", "$`"):
                self._backtick(node, frame, ctx, bases)
            elif node.child_by_field_name("redirect") is not None:
                redirect = node.child_by_field_name("redirect")
                assert redirect is not None
                redirs = _redirects.resolve(self, frame, [redirect], bases)
                self.recorder.record_redirects(redirs, "", bases)
            else:
                stdin = Stdin("pipe") if first == ">(" else None
                self.block(node.children, frame, ctx.spawned(stdin=stdin), bases)
        finally:
            frame.ctx, frame.bases = ctx, bases

    def nested_substitution(self, text: str, frame: Frame, *, origin: str) -> None:
        """Commands of a substitution found as text (backquotes in a here-document)."""
        ctx, bases = frame.ctx, frame.bases
        try:
            self.walk_source(
                text,
                depth=frame.depth,
                origin=origin,
                ctx=ctx.spawned(),
                bases=bases,
                functions=frame.functions,
            )
        finally:
            frame.ctx, frame.bases = ctx, bases

    def _backtick(self, node: Node, frame: Frame, ctx: StatementContext, bases: Bases) -> None:
        raw = self.text(frame, node)
        inner = raw[2:-1] if raw.startswith("$`") else raw[1:-1]
        if "\\" not in inner:
            self.block(node.children, frame, ctx.spawned(), bases)
            return
        self.backticks += 1
        if self.backticks > _MAX_BACKTICKS:
            refuse("nesting_too_deep", raw, "Backquotes are nested too deeply; use $( ).")
        # Inside backquotes a backslash quotes only $, ` and \; bash removes it first.
        out: list[str] = []
        i = 0
        while i < len(inner):
            if inner[i] == "\\" and i + 1 < len(inner) and inner[i + 1] in "$`\\":
                out.append(inner[i + 1])
                i += 2
                continue
            out.append(inner[i])
            i += 1
        try:
            self.walk_source(
                "".join(out),
                depth=frame.depth,
                origin=raw,
                ctx=ctx.spawned(),
                bases=bases,
                functions=frame.functions,
            )
        finally:
            self.backticks -= 1

    def script(
        self,
        word: ResolvedWord,
        frame: Frame,
        *,
        origin: str,
        positionals: tuple[str, ...] | None = None,
        same_shell: bool,
    ) -> BasesAfter:
        """Analyse a string that will be run as a shell script, one level deeper."""
        value = word.value
        if value is None:
            shown = word.text or origin
            refuse(
                "dynamic_script",
                shown,
                f"The script {shown!r} is only known when the command runs (it contains an "
                "expansion or command output), so it cannot be checked; use single quotes so "
                "the text is literal and pass values as arguments "
                '(bash -c \'cd "$1" && make\' _ "$DIR").',
            )
        return self.walk_source(
            value,
            depth=frame.depth + 1,
            origin=origin,
            ctx=frame.ctx,
            bases=frame.bases,
            positionals=positionals,
            functions=frame.functions if same_shell else None,
        )


def _expands(e: str) -> bool:
    if "{" not in e:
        return False
    try:
        return len(brace_expand(e, limit=4)) > 1
    except BraceOverflow:
        return True
