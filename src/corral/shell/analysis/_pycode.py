"""Python code given inline (``python3 -c``, a here-document): the commands it runs.

The code is parsed with :mod:`ast`. A call that runs a program (``os.system``,
``subprocess.run``, ``os.exec*``, ``pty.spawn``…) with a literal argument yields that
command for analysis. Everything that could run a command the text does not show (such a
call with a computed argument, ``exec``/``eval``, ``__import__``, ``getattr`` with a
computed name, ``ctypes``, a runner passed around as a value) is reported as *hidden*;
unconfined mode refuses it.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["PythonFindings", "read_python", "strict_recursion"]

_local = threading.local()


@contextmanager
def strict_recursion() -> Iterator[None]:
    """While active (in this thread), code too deep for the stack is an error, not "no
    findings": the caller is analysing from a deliberately deeper stack and will start
    over from the real one (see :func:`corral.shell.analysis._functions.define`)."""
    _local.strict = getattr(_local, "strict", 0) + 1
    try:
        yield
    finally:
        _local.strict -= 1


_SHELL_CALLS = frozenset(
    {"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
     "commands.getoutput", "commands.getstatusoutput", "platform.popen",
     "asyncio.create_subprocess_shell"}
)  # fmt: skip
_ARGV_CALLS = frozenset(
    {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
     "subprocess.Popen", "pty.spawn", "asyncio.create_subprocess_exec", "os.posix_spawn",
     "os.posix_spawnp"}
)  # fmt: skip
_EXEC_PREFIXES = ("os.exec", "os.spawn")
_HIDDEN_CALLS = frozenset({"exec", "eval", "compile", "__import__", "breakpoint", "globals",
                           "locals", "vars", "open_code"})  # fmt: skip
_HIDDEN_MODULES = frozenset(
    {"ctypes", "cffi", "importlib", "marshal", "pickle", "dill", "code", "codeop", "runpy",
     "_posixsubprocess", "posix", "nt", "builtins", "__builtin__", "multiprocessing", "shlex"}
)  # fmt: skip
_HIDDEN_ATTRIBUTES = frozenset(
    {"__builtins__", "__globals__", "__subclasses__", "__dict__", "__code__", "__class__",
     "__bases__", "__mro__", "__getattribute__", "__loader__", "__spec__", "__import__",
     "__reduce__", "__reduce_ex__", "__self__", "__func__", "f_globals", "f_builtins"}
)  # fmt: skip
_RUNNER_MODULES = frozenset({"os", "subprocess", "pty", "commands", "platform", "asyncio"})


@dataclass(slots=True)
class PythonFindings:
    """What inline Python runs."""

    scripts: list[str] = field(default_factory=list)
    """Literal shell command lines (``os.system("make")``)."""
    argvs: list[list[str]] = field(default_factory=list)
    """Literal programs with arguments (``subprocess.run(["git", "status"])``)."""
    hidden: list[str] = field(default_factory=list)
    """Why the code may run something the text does not show."""


def _literal_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _literal_argv(node: ast.AST | None) -> list[str] | None:
    if isinstance(node, ast.List | ast.Tuple):
        items = [_literal_str(item) for item in node.elts]
        if items and all(item is not None for item in items):
            return [item for item in items if item is not None]
    return None


class _Reader(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found = PythonFindings()
        self.aliases: dict[str, str] = {}
        self.called: set[int] = set()

    def _name(self, node: ast.AST) -> str | None:
        """The dotted name of ``node`` with import aliases resolved (``sp.run``)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self._name(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(alias.name)
            self.aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._imported(module)
        for alias in node.names:
            if alias.name == "*" and module.split(".")[0] in _RUNNER_MODULES:
                self.found.hidden.append(f"'from {module} import *' hides which runner is called")
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"

    def _imported(self, module: str) -> None:
        if module.split(".")[0] in _HIDDEN_MODULES:
            self.found.hidden.append(f"the module {module!r} can run code the text does not show")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _HIDDEN_ATTRIBUTES:
            self.found.hidden.append(f"the attribute {node.attr!r} reaches hidden functions")
        self._reference(node)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self._reference(node)

    def _reference(self, node: ast.AST) -> None:
        """A runner used as a value (``f = os.system``) hides what it later runs."""
        if id(node) in self.called:
            return
        name = self._name(node)
        if name is not None and _runner(name):
            self.found.hidden.append(f"{name} is used as a value, not called with a literal")
        elif name in _HIDDEN_CALLS:
            self.found.hidden.append(f"{name} is used as a value")

    def visit_Call(self, node: ast.Call) -> None:
        self.called.add(id(node.func))
        name = self._name(node.func)
        first = node.args[0] if node.args else None
        if name is not None and _runner(name):
            self._runner_call(name, node, first)
        elif name in _HIDDEN_CALLS:
            self.found.hidden.append(f"{name}() runs code the text does not show")
        elif name in ("getattr", "setattr", "delattr", "hasattr"):
            attribute = node.args[1] if len(node.args) > 1 else None
            text = _literal_str(attribute)
            if text is None or _runner(f"os.{text}") or text in _HIDDEN_ATTRIBUTES:
                self.found.hidden.append(f"{name}() with the name {ast.unparse(attribute or node)}")
        self.generic_visit(node)

    def _runner_call(self, name: str, node: ast.Call, first: ast.AST | None) -> None:
        shell = any(
            k.arg == "shell" and not (isinstance(k.value, ast.Constant) and not k.value.value)
            for k in node.keywords
        )
        if name.startswith(_EXEC_PREFIXES):
            spawn = name.startswith("os.spawn") and len(node.args) > 1
            path = _literal_str(node.args[1] if spawn else first)
            if path is None:
                self.found.hidden.append(f"{name}() runs a program computed at run time")
            else:
                self.found.argvs.append([path])
            return
        text = _literal_str(first)
        if name in _SHELL_CALLS or (shell and text is not None):
            if text is None:
                self.found.hidden.append(f"{name}() runs a command line computed at run time")
            else:
                self.found.scripts.append(text)
            return
        argv = _literal_argv(first)
        if argv is None and text is not None:
            argv = [text]
        if argv is None:
            self.found.hidden.append(f"{name}() runs a program computed at run time")
        else:
            self.found.argvs.append(argv)


def _runner(name: str) -> bool:
    return name in _SHELL_CALLS or name in _ARGV_CALLS or name.startswith(_EXEC_PREFIXES)


@lru_cache(maxsize=256)
def read_python(code: str) -> PythonFindings:
    """The commands ``code`` runs; code that does not parse runs nothing (cached: callers
    only read the findings)."""
    try:
        tree = ast.parse(code)
    except RecursionError:
        if getattr(_local, "strict", 0):
            raise
        return PythonFindings()
    except (SyntaxError, ValueError, MemoryError):
        return PythonFindings()
    reader = _Reader()
    reader.visit(tree)
    return reader.found
