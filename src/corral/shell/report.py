"""The completion report of a background shell: exit code and a bounded head + tail."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ShellReport", "build_report"]

_WORDS = {
    "exited": "exited",
    "stopped": "was stopped",
    "timed_out": "timed out",
    "lost": "was lost",
    "failed": "failed to start",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellReport:
    title: str
    text: str
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "text": self.text, "data": self.data}


def _excerpt(head: str, tail: str, total: int | None, budget: int) -> tuple[str, int]:
    """The output to show and how many characters it leaves out."""
    if total is not None and total <= budget:
        whole = tail if len(tail) >= total else head
        return whole[-total:] if total else "", 0
    half = budget // 2
    head, tail = head[:half], tail[-half:]
    left_out = (total - len(head) - len(tail)) if total is not None else -1
    gap = f"{left_out:,} characters" if left_out >= 0 else "the middle of the output"
    return f"{head}\n[… {gap} left out …]\n{tail}", max(left_out, 0)


def build_report(
    *,
    shell_id: str,
    command: str,
    status: str,
    exit_code: int | None,
    duration_s: float | None,
    confinement: str,
    head: str,
    tail: str,
    total_chars: int | None,
    budget: int,
    detail: str = "",
    output_uri: str,
) -> ShellReport:
    """A report the conversation receives when a background shell ends."""
    what = _WORDS.get(status, status)
    code = f" with exit code {exit_code}" if exit_code is not None and status == "exited" else ""
    took = f" after {duration_s:.1f} s" if duration_s is not None else ""
    title = f"Background shell {shell_id} {what}{code}"
    output, left_out = _excerpt(head, tail, total_chars, budget)
    lines = [
        f"Background shell {shell_id} {what}{code}{took} (confinement: {confinement}).",
        f"Command: {command if len(command) <= 300 else command[:299] + '…'}",
    ]
    if detail:
        lines.append(detail)
    lines.append(
        f"Output ({'head + tail, ' if left_out else ''}full log at {output_uri}):"
        if output
        else "It printed nothing."
    )
    if output:
        lines.append(output)
    lines.append(
        "This report was written by the platform; the command is not running any more, so do "
        "not run it again just to see this result."
    )
    data = {
        "shell_id": shell_id,
        "status": status,
        "exit_code": exit_code,
        "duration_s": duration_s,
        "confinement": confinement,
        "command": command,
        "output_chars": total_chars,
        "left_out": left_out,
        "output_uri": output_uri,
    }
    return ShellReport(title=title, text="\n".join(lines), data=data)
