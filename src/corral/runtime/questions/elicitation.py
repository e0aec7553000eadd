"""An MCP server's elicitation as questions to the person who started the run.

A form elicitation becomes one question record: first what to do (accept, decline or
cancel, with the server's message), then one question per field of the requested schema,
each carrying that field's schema (``schema`` on the asked question) so an answer is
checked against it when it is given (``corral questions answer``, the HTTP API): a number
must be a number, a choice one of the choices, a required field given. ``-`` leaves an
optional field out; a decline or cancel needs no other answers. A URL elicitation is one
question naming the link, with "I opened it" / decline / cancel: the link goes to the
person only, never to the model.

The record's ``call_id`` holds :data:`ELICITATION_MARK`: nothing in the run waits on it as a
call (the MCP call is still running), so answering resolves no wait; the connection reads
the answer from the record.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from corral.errors import UsageError

__all__ = [
    "EGRESS_MARK",
    "ELICITATION_MARK",
    "NOT_GIVEN",
    "check_elicited",
    "elicited_answer",
    "form_questions",
    "is_elicitation",
    "padded",
    "url_questions",
]

ELICITATION_MARK = "#elicitation-"
EGRESS_MARK = "#egress-"
"""A sandboxed command's question about a domain: its proxy holds the connection and reads
the answer from the record, as an MCP connection does."""
NOT_GIVEN = "-"
_ACTIONS = ("accept", "decline", "cancel")
_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def is_elicitation(call_id: str) -> bool:
    """Whether a live call reads the question's answer itself (nothing in the run waits)."""
    return ELICITATION_MARK in call_id or EGRESS_MARK in call_id


def _choices(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(value, title) of a single-choice field, or of an array field's items."""
    if "enum" in schema:
        names = schema.get("enumNames") or []
        values = [str(v) for v in schema["enum"]]
        return [(v, str(names[i]) if i < len(names) else v) for i, v in enumerate(values)]
    listed = schema.get("oneOf") or schema.get("anyOf") or []
    return [(str(o["const"]), str(o.get("title", o["const"]))) for o in listed if "const" in o]


def form_questions(server: str, message: str, requested: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The questions (as ``ask_question`` JSON) for a form elicitation."""
    asked: list[dict[str, Any]] = [
        {
            "question": f"The MCP server {server!r} asks: {message}",
            "options": list(_ACTIONS),
            "schema": {"elicitation": "action"},
        }
    ]
    required = set(requested.get("required") or ())
    for name, field in (requested.get("properties") or {}).items():
        title = str(field.get("title") or name)
        about = f" ({field['description']})" if field.get("description") else ""
        optional = "" if name in required else f" [optional: {NOT_GIVEN} leaves it out]"
        kind = field.get("type")
        options: list[str] = []
        multi = False
        if kind == "boolean":
            options = ["true", "false"]
        elif kind == "array":
            options = [title for _, title in _choices(field.get("items") or {})]
            multi = True
        else:
            options = [title for _, title in _choices(field)]
        default = f" (default {field['default']})" if "default" in field else ""
        asked.append(
            {
                "question": f"{title}{about}{default}{optional}",
                "options": options,
                "multi_select": multi and len(options) >= 2,
                "schema": {
                    "elicitation": "field",
                    "name": name,
                    "field": dict(field),
                    "required": name in required,
                },
            }
        )
    return asked


def url_questions(server: str, message: str, url: str) -> list[dict[str, Any]]:
    """The question for a URL elicitation: the link is the person's to open."""
    return [
        {
            "question": f"The MCP server {server!r} asks you to open {url} : {message}",
            "options": ["I opened it", "decline", "cancel"],
            "schema": {"elicitation": "url"},
        }
    ]


def _action(given: str) -> str:
    return "accept" if given in ("accept", "I opened it") else given


def padded(schemas: Sequence[Mapping[str, Any] | None], given: Sequence[Any]) -> list[Any]:
    """``given``, with a lone decline or cancel followed by :data:`NOT_GIVEN` for each field."""
    # Options 2 and 3 of the first question are decline and cancel.
    ends = ("decline", "cancel", "2", "3")
    if len(given) == 1 and len(schemas) > 1 and str(given[0]).strip() in ends:
        return [given[0], *([NOT_GIVEN] * (len(schemas) - 1))]
    return list(given)


def _field_value(field: Mapping[str, Any], answer: Any, label: str) -> Any:
    """The answer as the field's type, or a :class:`UsageError` saying what is wrong."""
    kind = field.get("type")
    if kind == "array":
        items = answer if isinstance(answer, list) else [answer]
        by_title = {title: value for value, title in _choices(field.get("items") or {})}
        picked = [by_title.get(str(i), str(i)) for i in items]
        unknown = [p for p in picked if p not in by_title.values()]
        if unknown:
            raise UsageError(f"{label}: {unknown[0]!r} is not one of {sorted(by_title)}")
        return picked
    text = str(answer).strip()
    if kind == "boolean":
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise UsageError(f"{label}: answer true or false, not {text!r}")
    if kind in ("number", "integer"):
        try:
            number: float | int = int(text) if kind == "integer" else float(text)
        except ValueError:
            whole = "a whole" if kind == "integer" else "a"
            raise UsageError(f"{label}: {text!r} is not {whole} number") from None
        low, high = field.get("minimum"), field.get("maximum")
        if (low is not None and number < low) or (high is not None and number > high):
            raise UsageError(f"{label}: {number} is outside {low} to {high}")
        return number
    choices = _choices(field)
    if choices:
        for value, title in choices:
            if text in (value, title):
                return value
        raise UsageError(f"{label}: {text!r} is not one of {[t for _, t in choices]}")
    low, high = field.get("minLength"), field.get("maxLength")
    if (low is not None and len(text) < low) or (high is not None and len(text) > high):
        raise UsageError(f"{label}: give {low or 0} to {high or 'any'} characters")
    if field.get("format") == "email" and not _EMAIL.match(text):
        raise UsageError(f"{label}: {text!r} is not an email address")
    return text


def elicited_answer(
    schemas: Sequence[Mapping[str, Any] | None], answers: Sequence[Any]
) -> tuple[str, dict[str, Any] | None]:
    """The elicitation's answer: its action and, for an accepted form, the content.

    Raises :class:`UsageError` naming the answer that breaks the requested schema."""
    action = _action(str(answers[0]))
    if action not in _ACTIONS:
        raise UsageError(f"answer 1: {answers[0]!r} is none of accept, decline or cancel")
    if action != "accept" or (schemas[0] or {}).get("elicitation") == "url":
        return action, None
    content: dict[str, Any] = {}
    for number, (schema, answer) in enumerate(zip(schemas, answers, strict=True), start=1):
        if number == 1 or schema is None:
            continue
        label = f"answer {number} ({schema['name']})"
        if answer == NOT_GIVEN or answer == [NOT_GIVEN]:
            if schema.get("required"):
                raise UsageError(f"{label} is required when you accept")
            continue
        content[str(schema["name"])] = _field_value(schema["field"], answer, label)
    return action, content


def check_elicited(schemas: Sequence[Mapping[str, Any] | None], answers: Sequence[Any]) -> None:
    """Raise :class:`UsageError` when ``answers`` break the elicitation's schema."""
    elicited_answer(schemas, answers)
