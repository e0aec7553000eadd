"""Errors raised while turning a fetched body into text."""

from __future__ import annotations

from corral.errors import ToolError

__all__ = ["UnsupportedContent"]


class UnsupportedContent(ToolError):
    """The body cannot be rendered as text: binary data, an unreadable or encrypted PDF, or a
    body that is not what the requested format needs (``format: "json"`` on non-JSON)."""

    default_code = "unsupported_content"
