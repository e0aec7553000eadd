"""⟦fs:read:URI⟧ in a person's message: read as the sender, stored with the message, and
shown to the model as text, real media or a marker."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import BinaryContent

from corral.errors import UsageError
from corral.platform import Platform
from corral.runtime.prompt.attachments import references
from tests.fixtures.packages.demo.handlers import PNG
from tests.packages.drive.conftest import recording_model, user_content


async def test_a_text_file_is_inlined_with_the_message(platform: Platform, drive: Path) -> None:
    (drive / "plan.md").write_text("step one\nstep two\n")
    seen = recording_model(platform, "test:text", [{"text": "read it"}])
    turn = await platform.chat("Summarise ⟦fs:read:data://plan.md⟧ please", model="test:text")
    assert turn.status == "finished"
    content = user_content(seen[-1])
    assert content[0] == "Summarise ⟦fs:read:data://plan.md⟧ please"
    assert content[1] == "[attachment ⟦fs:read:data://plan.md⟧]"
    assert content[2] == "data://plan.md (2 lines)\n     1\tstep one\n     2\tstep two"
    stored = next(r for r in turn.rows if r.kind == "user_message")
    assert stored.data["attachments"][1]["text"].endswith("step two")


async def test_a_long_text_attachment_is_capped(platform: Platform, drive: Path) -> None:
    (drive / "big.txt").write_text("z" * 90 + "\n" * 1 + ("w" * 90 + "\n") * 2000)
    seen = recording_model(platform, "test:cap", [{"text": "ok"}])
    await platform.chat("⟦fs:read:big.txt⟧", model="test:cap")
    text = user_content(seen[-1])[2]
    assert len(text) < 21_000 and "call again with offset=" in text


async def test_an_image_is_pixels_for_an_image_model_and_a_marker_otherwise(
    platform: Platform, drive: Path
) -> None:
    (drive / "dot.png").write_bytes(PNG)
    eyes = recording_model(platform, "test:eyes", [{"text": "a dot"}], images=True)
    turn = await platform.chat("what is ⟦fs:read:data://dot.png⟧", model="test:eyes")
    content = user_content(eyes[-1])
    assert isinstance(content[-1], BinaryContent) and content[-1].data == PNG
    stored = next(r for r in turn.rows if r.kind == "user_message").data["attachments"]
    assert stored[-1] == {
        "type": "resource",
        "uri": "data://dot.png",
        "media_type": "image/png",
        "title": "dot.png",
    }
    blind = recording_model(platform, "test:blind", [{"text": "?"}])
    await platform.chat("what is ⟦fs:read:data://dot.png⟧", model="test:blind")
    assert user_content(blind[-1])[-1] == (
        f"[image image/png, {len(PNG)} bytes: from data://dot.png; this model does not take "
        "image input]"
    )


async def test_access_is_checked_as_the_sender(
    platform: Platform, drive: Path, member: str
) -> None:
    (drive / "vault").mkdir()
    (drive / "vault" / "k.txt").write_text("secret")
    await platform.admin.add_source("vault", str(drive / "vault"))
    recording_model(platform, "test:any", [{"text": "?"}])
    with pytest.raises(UsageError, match=r"the message was not sent: .*denied"):
        await platform.chat("⟦fs:read:data://vault/k.txt⟧", model="test:any", user=member)
    with pytest.raises(UsageError, match="not covered by any source"):
        await platform.chat("⟦fs:read:/etc/shadow⟧", model="test:any", user=member)
    conversations = await platform.runtime.list_conversations(user=member)
    rows = [await platform.runtime.conversations.rows(c.id) for c in conversations]
    assert all(r.kind != "user_message" for group in rows for r in group)  # nothing written


def test_references_are_found_once_each_in_order() -> None:
    text = "⟦fs:read:b.txt⟧ and ⟦fs:read:a.txt⟧ then ⟦fs:read:b.txt⟧ but not ⟦fs:write:c⟧"
    assert references(text) == ["b.txt", "a.txt"]
