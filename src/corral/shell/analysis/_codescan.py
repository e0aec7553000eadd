"""A conservative scan of inline perl, ruby, node, awk, php, lua, R and Tcl code.

These languages are not parsed. The scan finds the calls that run a command when their
argument is one plain string literal (``system("make")``, ``` `ls` ```, ``"cmd" |
getline``) and yields that command for analysis. Every other mention of a way to run a
command or code (the same calls with a computed argument, ``eval``, a variable used as a
function…) is reported as *hidden*; unconfined mode refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["CodeFindings", "Language", "language_of", "scan_code"]

# A plain string: no interpolation ($, @, #{, ${), no escapes to decode.
_SQ = r"'([^'\\]*)'"
_DQ = r'"([^"\\$@#`{]*)"'
_LITERAL = rf"(?:{_SQ}|{_DQ})"


@dataclass(frozen=True, slots=True)
class Language:
    """Where a language hides command execution."""

    name: str
    calls: tuple[str, ...]
    """Functions that run their first (string) argument as a command."""
    danger: re.Pattern[str]
    """Anything that may run a command or code."""
    literal_forms: tuple[re.Pattern[str], ...] = ()
    """Extra literal forms (backquotes, ``qx{}``, awk pipes); group 1 is the command."""
    inert_quotes: str = ""
    """Quote characters whose strings never run code (no interpolation): their contents
    are blanked before looking for danger, so ``print "a|b"`` is not a pipe."""
    piped_forms: tuple[re.Pattern[str], ...] = ()
    """Forms that pipe the program's output into the command (awk ``print | "cmd"``)."""


def _calls(*names: str) -> tuple[str, ...]:
    return names


def _danger(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(patterns))


_PERL = Language(
    "perl",
    _calls("system", "exec", "readpipe"),
    _danger(r"\b(system|exec|readpipe|qx|eval|syscall|pipe|open)\b", r"\bdo\s*[$'\"]",
            r"\brequire\s*[$'\"]", r"`", r"&\s*[{$]", r"->\s*can\b", r"\bCORE::", r"\bIPC::",
            r"\*\{", r"->\s*\$", r"\bUNIVERSAL::"),
    (re.compile(r"`([^`$@\\]*)`"), re.compile(r"\bqx\s*\{([^}$@\\]*)\}"),
     re.compile(r"\bqx\s*\(([^)$@\\]*)\)"), re.compile(r"\bqx\s*/([^/$@\\]*)/")),
    "'",
)  # fmt: skip
_RUBY = Language(
    "ruby",
    _calls("system", "exec", "spawn", "IO.popen", "Process.spawn", "Kernel.system",
           "Kernel.exec", "Kernel.spawn", "Open3.capture2", "Open3.capture3",
           "Open3.popen3", "Open3.capture2e"),
    _danger(r"\b(system|exec|spawn|popen|Open3|eval|instance_eval|class_eval|module_eval|send"
            r"|__send__|public_send|syscall|const_get|Kernel|binding|define_method"
            r"|instance_variable_get)\b", r"(?<![.\w])(open|load|method)\b",
            r"\brequire\s*\(?\s*[^'\"\s(]", r"`", r"%x"),
    (re.compile(r"`([^`#\\]*)`"), re.compile(r"%x\{([^}#\\]*)\}"),
     re.compile(r"%x\(([^)#\\]*)\)")),
    "'",
)  # fmt: skip
_NODE = Language(
    "node",
    _calls("exec", "execSync", "spawn", "spawnSync", "execFile", "execFileSync",
           "child_process.exec", "child_process.execSync"),
    _danger(r"\b(child_process|exec|execSync|spawn|spawnSync|execFile|execFileSync|fork|eval"
            r"|Function|import|process\.binding|dlopen|vm|worker_threads|Worker"
            r"|Deno|Bun|constructor|globalThis|global|Reflect|Proxy)\b", r"\$`",
            r"\brequire\s*\((?!\s*['\"](?:node:)?(?:fs|path|os|util|url|crypto|zlib|assert|events"
            r"|stream|readline|buffer|http|https|querystring|string_decoder|timers|tty)['\"]\s*\))"),
)  # fmt: skip
_AWK = Language(
    "awk",
    _calls("system"),
    _danger(r"\bsystem\b", r"\|\s*getline\b", r"\|&", r"\bprintf?\b[^;}\n]*[^|]\|(?!\|)"),
    (re.compile(rf"{_DQ}\s*\|&?\s*getline"),),
    '"',
    (re.compile(rf"\|&?\s*{_DQ}(?!\s*\|)"),),
)
_PHP = Language(
    "php",
    _calls("system", "exec", "shell_exec", "passthru", "popen", "proc_open", "pcntl_exec"),
    _danger(r"\b(system|exec|shell_exec|passthru|popen|proc_open|pcntl_exec|eval|assert"
            r"|create_function|call_user_func|call_user_func_array|include|require|include_once"
            r"|require_once|preg_replace|mail|putenv|dl|ffi|FFI)\b", r"`", r"\$\w+\s*\(",
            r"\$\{"),
    (re.compile(r"`([^`$\\{]*)`"),),
    "'",
)  # fmt: skip
_LUA = Language(
    "lua",
    _calls("os.execute", "io.popen"),
    _danger(r"\b(os\.execute|io\.popen|execute|popen|load|loadstring|dofile|loadfile|require"
            r"|package|debug|_G|_ENV|setfenv|getfenv|rawget|ffi)\b"),
    (),
    "'\"",
)  # fmt: skip
_R = Language(
    "R",
    _calls("system", "system2", "shell", "pipe"),
    _danger(r"\b(system|system2|shell|pipe|eval|parse|do\.call|get|match\.fun|source"
            r"|Sys\.setenv|dyn\.load|processx|callr|getFromNamespace)\b"),
    (),
    "'\"",
)  # fmt: skip
_TCL = Language(
    "tcl",
    _calls("exec", "spawn", "system"),
    _danger(r"\b(exec|spawn|system|open|eval|uplevel|subst|source|interp|load|package"
            r"|after|trace|namespace|apply|rename|proc|expr)\b", r"\["),
    (re.compile(r"\b(?:exec|spawn)\s+([^\[\]$;\n\"{}\\]+)"),),
)  # fmt: skip

_BY_PROGRAM: dict[str, Language] = {}
for _language, _names in (
    (_PERL, "perl"),
    (_RUBY, "ruby irb"),
    (_NODE, "node nodejs deno bun"),
    (_AWK, "awk gawk mawk nawk busybox-awk"),
    (_PHP, "php"),
    (_LUA, "lua luajit"),
    (_R, "Rscript R"),
    (_TCL, "tclsh wish expect"),
):
    for _name in _names.split():
        _BY_PROGRAM[_name] = _language
_VERSIONED = re.compile(r"^([A-Za-z]+)[0-9.]*$")


@lru_cache(maxsize=1024)
def language_of(program: str) -> Language | None:
    """The scanned language of an interpreter (``perl5.36`` is perl), or ``None``."""
    found = _BY_PROGRAM.get(program)
    if found is None:
        match = _VERSIONED.match(program)
        found = _BY_PROGRAM.get(match.group(1)) if match else None
    return found


@dataclass(slots=True)
class CodeFindings:
    """What scanned code runs."""

    scripts: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)


def _blank(code: str, quotes: str) -> str:
    """``code`` with the contents of inert string literals replaced by spaces."""
    if not quotes:
        return code
    out = list(code)
    i, n = 0, len(code)
    while i < n:
        if code[i] in quotes:
            closing = code[i]
            j = i + 1
            while j < n and code[j] != closing:
                if code[j] == "\\" and closing != "'":
                    out[j] = " "
                    j += 1
                if j < n:
                    out[j] = " "
                j += 1
            i = j + 1
            continue
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def scan_code(language: Language, code: str) -> CodeFindings:
    """Literal commands in ``code`` and every mention of a way to run something else
    (cached: callers only read the findings)."""
    out = CodeFindings()
    covered: list[tuple[int, int]] = []
    names = "|".join(re.escape(name) for name in sorted(language.calls, key=len, reverse=True))
    call = re.compile(rf"(?<![\w$])(?:{names})\s*\(?\s*{_LITERAL}\s*\)?")
    for match in call.finditer(code):
        out.scripts.append(match.group(1) if match.group(1) is not None else match.group(2))
        covered.append(match.span())
    for form in language.literal_forms:
        for match in form.finditer(code):
            out.scripts.append(next(g for g in match.groups() if g is not None))
            covered.append(match.span())
    for form in language.piped_forms:
        for match in form.finditer(code):
            # The command reads the program's output: analysed as the end of a pipe.
            out.scripts.append(": | " + next(g for g in match.groups() if g is not None))
            covered.append(match.span())
    for match in language.danger.finditer(_blank(code, language.inert_quotes)):
        start = match.start()
        if not any(low < match.end() and start < high for low, high in covered):
            out.hidden.append(f"{language.name} code mentions {match.group(0).strip()!r}")
            break
    return out
