"""Workflow delivery: a workflow bound to channels posts each run's answer there.

A workflow's ``delivery`` lists channel names (``name``, or ``name:chat`` for one chat).
When one of its runs ends, its final answer — or its status and the reason it failed — goes
to every chat of those channels that is paired to the workflow run's user.
"""

from __future__ import annotations

from corral.channels.relay import Chat, Relay
from corral.channels.store import ChannelStore
from corral.runtime.delegation.answer import last_substantive_text
from corral.runtime.runs import RunRecord
from corral.runtime.runtime import Runtime
from corral.runtime.workflows import Workflows

__all__ = ["WorkflowDelivery"]


class WorkflowDelivery:
    """The run-end hook that delivers workflow runs to their bound channels."""

    def __init__(
        self, runtime: Runtime, store: ChannelStore, relay: Relay, workflows: Workflows | None
    ) -> None:
        self.rt = runtime
        self.store = store
        self.relay = relay
        self._workflows = workflows

    async def deliver_workflow_run(self, run: RunRecord, status: str) -> None:
        """The run-end hook: a workflow run bound to channels posts its answer there."""
        if run.kind != "workflow" or self._workflows is None:
            return
        link = await self._workflows.store.run_link(run.id)
        if link is None:
            return
        workflow = await self._workflows.store.get(link.workflow_id)
        targets = list(workflow.setup.get("delivery") or ())
        if not targets:
            return
        title = workflow.setup.get("title", workflow.id)
        if status == "finished":
            rows = await self.rt.conversations.rows(run.conversation_id, run_id=run.id)
            answer = last_substantive_text(rows) or "(no answer text)"
            text = f"Workflow “{title}” finished:\n{answer}"
        else:
            ended = await self.rt.runs.get(run.id)
            why = ended.detail or ended.reason or "no reason given"
            text = f"Workflow “{title}” {status}: {why}"
        for chat in await self._delivery_chats(targets, run.user_id):
            self.relay.say(chat, text)

    async def _delivery_chats(self, targets: list[str], user_id: str) -> list[Chat]:
        chats: list[Chat] = []
        for target in targets:
            name, _, chat_id = target.partition(":")
            for sender in await self.store.senders(status="approved", connections=[name]):
                if sender.user_id != user_id or (chat_id and sender.chat_id != chat_id):
                    continue
                chat = Chat(connection=name, chat_id=sender.chat_id, thread=sender.thread)
                if chat not in chats:
                    chats.append(chat)
        return chats
