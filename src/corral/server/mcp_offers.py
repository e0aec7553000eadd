"""MCP resources and prompts that packages declare, offered by Corral's MCP server.

A package folder may hold ``mcp_offers.json``::

    {"resources": [{"uri": "…", "name": "…", "description": "…", "mime_type": "text/plain",
                    "text": "…"}],                     # or "blob": "<base64>"
     "resource_templates": [{"uri_template": "notes://{id}", "name": "…", "text": "note {id}"}],
     "prompts": [{"name": "…", "description": "…",
                  "arguments": [{"name": "topic", "required": true, "values": ["a", "b"]}],
                  "messages": [{"role": "user", "text": "Tell me about {topic}"},
                               {"role": "user", "image": "<base64>", "mime_type": "image/png"},
                               {"role": "user", "resource": {"uri": "…", "text": "…"}}]}]}

``{name}`` in a template's text and in a prompt's messages is replaced by the value given.
An argument's ``values`` are what completion offers for it. A caller is offered a package's
declarations when it sees at least one of the package's tools.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
)

__all__ = ["OFFERS_FILE", "OfferError", "Offers", "load_offers"]

OFFERS_FILE = "mcp_offers.json"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

Contents = TextResourceContents | BlobResourceContents


class OfferError(ValueError):
    """A declaration or a request that cannot be served; the message says what to fix."""


@dataclass(slots=True)
class Offers:
    """One package's declarations, checked."""

    package: str
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def listed_resources(self) -> list[Resource]:
        return [
            Resource(
                uri=r["uri"],
                name=r["name"],
                description=r.get("description"),
                mime_type=r.get("mime_type"),
            )
            for r in self.resources
        ]

    def listed_templates(self) -> list[ResourceTemplate]:
        return [
            ResourceTemplate(
                uri_template=t["uri_template"],
                name=t["name"],
                description=t.get("description"),
                mime_type=t.get("mime_type"),
            )
            for t in self.templates
        ]

    def listed_prompts(self) -> list[Prompt]:
        return [
            Prompt(
                name=p["name"],
                description=p.get("description"),
                arguments=[
                    PromptArgument(
                        name=a["name"],
                        description=a.get("description"),
                        required=bool(a.get("required", False)),
                    )
                    for a in p.get("arguments", [])
                ],
            )
            for p in self.prompts.values()
        ]

    def read(self, uri: str) -> Contents | None:
        """The contents at ``uri``, None when this package declares no such resource."""
        for resource in self.resources:
            if resource["uri"] == uri:
                return _contents(uri, resource, {})
        for template in self.templates:
            found = _match(template["uri_template"], uri)
            if found is not None:
                return _contents(uri, template, found)
        return None

    def completions(self, prompt: str, argument: str, prefix: str) -> list[str] | None:
        declared = self.prompts.get(prompt)
        if declared is None:
            return None
        for arg in declared.get("arguments", []):
            if arg["name"] == argument:
                return [str(v) for v in arg.get("values", []) if str(v).startswith(prefix)]
        return []

    def prompt_messages(self, name: str, arguments: dict[str, str]) -> list[PromptMessage] | None:
        declared = self.prompts.get(name)
        if declared is None:
            return None
        missing = [
            a["name"]
            for a in declared.get("arguments", [])
            if a.get("required") and a["name"] not in arguments
        ]
        if missing:
            raise OfferError(f"prompt {name!r} needs the argument(s) {', '.join(missing)}")
        return [_message(m, arguments) for m in declared.get("messages", [])]


def load_offers(package: str, folder: Path) -> Offers:
    """The package's ``mcp_offers.json``, checked; none declared when the file is absent."""
    path = folder / OFFERS_FILE
    offers = Offers(package=package)
    if not path.is_file():
        return offers
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OfferError(f"{path}: not readable JSON ({exc}); fix the file") from exc
    if not isinstance(raw, dict):
        raise OfferError(f"{path}: must be a JSON object with resources/prompts lists")
    offers.resources = _entries(path, raw, "resources", ("uri", "name"))
    offers.templates = _entries(path, raw, "resource_templates", ("uri_template", "name"))
    for prompt in _entries(path, raw, "prompts", ("name",)):
        offers.prompts[prompt["name"]] = prompt
    return offers


def _entries(path: Path, raw: dict[str, Any], key: str, needed: tuple[str, ...]) -> list[Any]:
    entries = raw.get(key, [])
    if not isinstance(entries, list):
        raise OfferError(f"{path}: {key!r} must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or any(not isinstance(entry.get(k), str) for k in needed):
            raise OfferError(f"{path}: {key}[{i}] needs the string field(s) {', '.join(needed)}")
        if key != "prompts" and ("text" in entry) == ("blob" in entry):
            raise OfferError(f"{path}: {key}[{i}] needs exactly one of 'text' or 'blob'")
    return entries


def _match(template: str, uri: str) -> dict[str, str] | None:
    pattern, last = "", 0
    for placeholder in _PLACEHOLDER.finditer(template):
        pattern += re.escape(template[last : placeholder.start()])
        pattern += f"(?P<{placeholder.group(1)}>[^/]+)"
        last = placeholder.end()
    pattern += re.escape(template[last:])
    found = re.fullmatch(pattern, uri)
    return None if found is None else found.groupdict()


def _fill(text: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def _contents(uri: str, declared: dict[str, Any], values: dict[str, str]) -> Contents:
    mime = declared.get("mime_type")
    if "blob" in declared:
        return BlobResourceContents(uri=uri, mime_type=mime, blob=_base64(declared["blob"]))
    return TextResourceContents(uri=uri, mime_type=mime, text=_fill(str(declared["text"]), values))


def _base64(value: Any) -> str:
    try:
        base64.b64decode(str(value), validate=True)
    except binascii.Error as exc:
        raise OfferError(f"a declared blob is not base64 ({exc}); fix {OFFERS_FILE}") from exc
    return str(value)


def _message(declared: dict[str, Any], values: dict[str, str]) -> PromptMessage:
    role = declared.get("role", "user")
    if role not in ("user", "assistant"):
        raise OfferError(f"a prompt message's role must be user or assistant, not {role!r}")
    if "image" in declared:
        image = ImageContent(
            data=_base64(declared["image"]), mime_type=declared.get("mime_type", "image/png")
        )
        return PromptMessage(role=role, content=image)
    if "resource" in declared:
        resource = declared["resource"]
        if not isinstance(resource, dict) or "uri" not in resource:
            raise OfferError("a prompt message's resource needs a uri and a text or blob")
        uri = _fill(str(resource["uri"]), values)
        contents = _contents(uri, {"text": "", **resource}, values)
        return PromptMessage(role=role, content=EmbeddedResource(resource=contents))
    return PromptMessage(
        role=role, content=TextContent(text=_fill(str(declared.get("text", "")), values))
    )
