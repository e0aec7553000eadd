"""The OpenAPI document states the error answers the app really gives.

FastAPI documents only its own request-validation 422. The app's handlers also answer
``{"detail": "...", "code": ..., "data": ...}`` (400 usage, 403 refused, 404 not found, 422
invalid arguments, 413 body too large): each operation's 422 may be either shape, and the
others are listed with the ``Problem`` shape, so clients and schema checks see the truth.
"""

from __future__ import annotations

from typing import Any

__all__ = ["document_errors"]

PROBLEM = {
    "title": "Problem",
    "type": "object",
    "required": ["detail"],
    "properties": {
        "detail": {"title": "Detail", "description": "What was wrong and what to do."},
        "code": {"title": "Code", "type": ["string", "null"]},
        "data": {"title": "Data"},
    },
}
ANSWERS = {
    "400": "Bad request: the detail says what was wrong",
    "401": "No valid credentials",
    "403": "Not allowed for this caller",
    "404": "Not found",
    "413": "Request body too large (live setting http_body_max_bytes)",
}
_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_VALIDATION_REF = {"$ref": "#/components/schemas/HTTPValidationError"}


def document_errors(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the error answers added to every operation (idempotent)."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    if "Problem" in schemas:
        return document
    schemas["Problem"] = PROBLEM
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for status, description in ANSWERS.items():
                responses.setdefault(status, _answer(description, _PROBLEM_REF))
            invalid = responses.get("422")
            if invalid is None:
                responses["422"] = _answer("Invalid arguments or body", _PROBLEM_REF)
            else:
                invalid["content"] = {
                    "application/json": {"schema": {"anyOf": [_VALIDATION_REF, _PROBLEM_REF]}}
                }
    return document


def _answer(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}
