"""An approved sender's event: a message to the bound conversation, or an answer to a wait.

A message starts a turn of the conversation bound to the chat (created on the first
message), as the platform user the owner mapped the sender to, with their rights resolved
now; the text reaches the model inside the untrusted-content envelope. While that
conversation's run waits for an approval or a question, a button press — or, on a vendor
without buttons, a numbered or written reply — answers it, and only when the sender is
mapped to the user the decision belongs to (a button of a notified decision of another
conversation too); another paired person of the chat is told whose it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.channels.relay import Chat, Relay
from corral.channels.store import ChannelStore, ConnectionRecord, SenderRecord
from corral.channels.vendors import Inbound
from corral.errors import AlreadyDecided, CorralError, NotFound
from corral.kernel import Decision, rule_proposals
from corral.kernel.decisions import check_surface
from corral.runtime.agents import load_agent
from corral.runtime.caller_scope import CallerScope
from corral.runtime.prompt_hooks import PromptBlocked, prompt_hooks
from corral.runtime.questions import AnswerInput, Questions
from corral.runtime.runs import RunRecord
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow
from corral.runtime.turns import start_scoped_turn, turn_spec

__all__ = ["Router"]

_APPROVE = {"1", "approve", "yes", "y", "ok"}
_DENY = {"2", "deny", "no", "n"}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Context:
    connection: ConnectionRecord
    sender: SenderRecord
    chat: Chat


class Router:
    """Routes a paired sender's events into the platform."""

    def __init__(
        self, runtime: Runtime, store: ChannelStore, relay: Relay, questions: Questions | None
    ) -> None:
        self._rt = runtime
        self._store = store
        self._relay = relay
        self._questions = questions

    async def route(
        self, connection: ConnectionRecord, sender: SenderRecord, event: Inbound
    ) -> None:
        chat = Chat(connection=connection.name, chat_id=sender.chat_id, thread=event.thread)
        here = _Context(connection=connection, sender=sender, chat=chat)
        try:
            if event.choice is not None:
                await self._choose(here, event.choice)
            elif event.text.strip():
                await self._message(here, event.text)
        except CorralError as exc:
            self._relay.say(chat, f"That did not work: {exc}")

    # -- messages ---------------------------------------------------------------------------

    async def _conversation_id(self, here: _Context) -> str:
        sender, fields = here.sender, here.connection.fields
        if sender.conversation_id is not None:
            if here.chat.thread != sender.thread:
                await self._store.bind_thread(sender.id, here.chat.thread)
            self._relay.bound[sender.conversation_id] = here.chat
            return sender.conversation_id
        conversation = await self._rt.start_conversation(
            agent=fields.get("agent") or None,
            user=sender.user_id,
            model=fields.get("model") or None,
            title=f"{here.connection.provider}: {sender.sender_name or sender.sender_id}",
        )
        await self._store.bind(sender.id, conversation.id, here.chat.thread)
        self._relay.bound[conversation.id] = here.chat
        return conversation.id

    async def _message(self, here: _Context, text: str) -> None:
        assert here.sender.user_id is not None
        conversation_id = await self._conversation_id(here)
        conversation = await self._rt.conversations.get(conversation_id)
        if conversation.active_run_id is not None:
            run = await self._rt.runs.find(conversation.active_run_id)
            if run is not None and run.status == "parked" and run.waiting:
                await self._answer_in_words(here, run, text)
                return
            self._relay.say(
                here.chat, "Still working on your last message; I will answer it first."
            )
            return
        caller = await self._rt.kernel.caller(here.sender.user_id)
        conversation.check_access(caller)
        agent = await load_agent(self._rt.kernel.sessions, conversation.agent)
        spec = await turn_spec(
            self._rt, conversation, user_id=caller.user_id, trigger="user_message", agent=agent
        )
        model = await self._rt.models.resolve_for(
            spec.model, user_id=caller.user_id, credentials=self._rt.kernel.services.credentials
        )
        try:
            context = await prompt_hooks(self._rt.hooks, conversation, text)
        except PromptBlocked as blocked:
            self._relay.say(here.chat, f"Your message was not sent: {blocked.reason}")
            return
        row = NewRow(
            kind="user_message",
            user_id=caller.user_id,
            data={
                "text": text,
                **({"hook_context": context} if context else {}),
                "channel": {
                    "connection": here.connection.name,
                    "provider": here.connection.provider,
                    "chat_id": here.sender.chat_id,
                    "sender_id": here.sender.sender_id,
                    "sender_name": here.sender.sender_name,
                },
            },
        )
        scope = CallerScope(caller=caller, agent=agent, model=model, profile=spec.profile)
        if await start_scoped_turn(self._rt, scope, spec, [row]) is None:
            self._relay.say(
                here.chat, "Still working on your last message; I will answer it first."
            )

    # -- answers ----------------------------------------------------------------------------

    async def _answer_in_words(self, here: _Context, run: RunRecord, text: str) -> None:
        wait = run.waiting[0]
        if wait.kind == "approval":
            word = text.strip().lower()
            if word in _APPROVE | _DENY:
                await self._decide(here, wait.id, "approve" if word in _APPROVE else "deny")
                return
            self._relay.say(here.chat, "Reply 1 to approve or 2 to deny.")
            return
        if wait.kind == "question":
            lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
            answers: list[AnswerInput] = [int(a) if a.isdigit() else a for a in lines]
            await self._answer(here, wait.id, answers)
            return
        self._relay.say(here.chat, "The agent is waiting for something only the web app answers.")

    async def _choose(self, here: _Context, value: str) -> None:
        kind, _, rest = value.partition(":")
        wait_id, _, pick = rest.rpartition(":")
        if kind == "a" and pick in ("approve", "deny", "remember"):
            await self._decide(
                here, wait_id, "deny" if pick == "deny" else "approve", remember=pick == "remember"
            )
        elif kind == "q" and pick.isdigit():
            await self._answer(here, wait_id, [int(pick)])
        else:
            self._relay.say(
                here.chat, "That button is not one I know; it may be from an old message."
            )

    async def _not_yours(self, here: _Context, owner: str) -> None:
        """Another paired person of the chat pressed a button of someone else's decision."""
        try:
            name = (await self._rt.kernel.caller(owner)).name
        except CorralError:
            name = "the person this run belongs to"
        self._relay.say(
            here.chat,
            f"Only {name} can answer this: the decision is theirs. Nothing was changed.",
        )

    async def _offered_here(
        self, here: _Context, wait_id: str, conversation_id: str | None
    ) -> bool:
        """Whether this chat was offered the decision: its conversation is bound here, or a
        notification sent it here. A button made up for another one decides nothing."""
        if conversation_id is not None and conversation_id == here.sender.conversation_id:
            return True
        if await self._relay.decision_messages.offered(
            wait_id, here.chat.connection, here.chat.chat_id
        ):
            return True
        self._relay.say(
            here.chat,
            "That decision was not offered in this chat; answer it where it was asked. "
            "Nothing was changed.",
        )
        return False

    async def _decide(
        self, here: _Context, approval_id: str, decision: Decision, *, remember: bool = False
    ) -> None:
        """Answer an approval; ``remember`` also keeps the command's families as rules for
        the run's agent (scope ``agent``: the person's own), as the web card's choice does.
        The answer is the compare-and-set on the decision's record: a chat that lost to an
        answer from anywhere is told who answered, from where and when."""
        kernel = self._rt.kernel
        try:
            record = await kernel.approvals.get(approval_id)
        except NotFound:
            self._relay.say(here.chat, "That approval no longer exists.")
            return
        # The decision's own person answers, from any chat they are paired in (a decision of
        # another conversation reaches them as a notification).
        if record.user_id != here.sender.user_id:
            await self._not_yours(here, record.user_id)
            return
        run = await self._rt.runs.find(record.run_id or "")
        conversation_id = record.conversation_id or (run.conversation_id if run else None)
        if not await self._offered_here(here, approval_id, conversation_id):
            return
        if run is None and record.status == "pending":
            self._relay.say(here.chat, "That approval no longer belongs to a run.")
            return
        decider = await kernel.caller(here.sender.user_id)
        note = f"from {here.connection.provider} channel {here.connection.name!r}"
        surface = check_surface(here.connection.provider)
        planned = None
        try:
            if remember:  # refused (before the claim) for a call that is not a command
                planned = await rule_proposals.plan(kernel.command_rules, record, "family")
            claimed = await kernel.approvals.claim(
                approval_id,
                decision,
                by=decider.user_id,
                by_name=decider.name,
                note=note,
                surface=surface,
            )
        except AlreadyDecided as exc:  # the first answer, from any surface, won
            self._relay.say(here.chat, f"{_sentence(str(exc))} Nothing was changed.")
            return
        if planned:
            await rule_proposals.remember(
                kernel.command_rules,
                claimed,
                planned,
                approved=True,
                scope="agent",
                decided_by=decider.name,
                note=note,
            )
        await self._rt.decide_approval(claimed, decision, decider, note, surface=surface)

    async def _answer(self, here: _Context, question_id: str, answers: list[AnswerInput]) -> None:
        if self._questions is None:
            return
        try:
            record = await self._questions.store.get(question_id)
        except NotFound:
            self._relay.say(here.chat, "That question no longer exists.")
            return
        if record.user_id != here.sender.user_id:
            await self._not_yours(here, record.user_id)
            return
        if not await self._offered_here(here, question_id, record.conversation_id):
            return
        try:
            await self._questions.answer(
                question_id,
                answers,
                surface=check_surface(here.connection.provider),
                user=here.sender.user_id,
            )
        except AlreadyDecided as exc:  # the first answer, from any surface, won
            self._relay.say(here.chat, f"{_sentence(str(exc))} Nothing was changed.")


def _sentence(text: str) -> str:
    """``approval 'ap_1' was already decided by…`` as a sentence of its own."""
    text = text.rstrip(".")
    return f"{text[:1].upper()}{text[1:]}."
