"""Span and attribute names: the OpenTelemetry GenAI semantic conventions (status:
development, as published in 2026: ``invoke_agent``, ``chat``, ``execute_tool``) and
Corral's own ``corral.*`` names for what the conventions do not cover (pipeline stages).

Content attributes (``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``,
``gen_ai.system_instructions``, ``gen_ai.input.messages``, ``gen_ai.output.messages``) are
opt-in in the conventions; Corral sets them only when the ``trace_content`` live setting is
on.
"""

from __future__ import annotations

__all__ = ["Attr", "Op"]


class Op:
    """``gen_ai.operation.name`` values, also the first word of the span names."""

    INVOKE_AGENT = "invoke_agent"
    CHAT = "chat"
    EXECUTE_TOOL = "execute_tool"
    INVOKE_WORKFLOW = "invoke_workflow"


class Attr:
    OPERATION = "gen_ai.operation.name"
    PROVIDER = "gen_ai.provider.name"
    AGENT_NAME = "gen_ai.agent.name"
    AGENT_ID = "gen_ai.agent.id"
    CONVERSATION_ID = "gen_ai.conversation.id"
    REQUEST_MODEL = "gen_ai.request.model"
    RESPONSE_MODEL = "gen_ai.response.model"
    RESPONSE_ID = "gen_ai.response.id"
    FINISH_REASONS = "gen_ai.response.finish_reasons"
    INPUT_TOKENS = "gen_ai.usage.input_tokens"
    OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
    WORKFLOW_NAME = "gen_ai.workflow.name"
    INPUT_MESSAGES = "gen_ai.input.messages"
    OUTPUT_MESSAGES = "gen_ai.output.messages"
    SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
    TOOL_NAME = "gen_ai.tool.name"
    TOOL_CALL_ID = "gen_ai.tool.call.id"
    TOOL_TYPE = "gen_ai.tool.type"
    TOOL_DESCRIPTION = "gen_ai.tool.description"
    TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
    TOOL_RESULT = "gen_ai.tool.call.result"
    ERROR_TYPE = "error.type"

    RUN_ID = "corral.run.id"
    RUN_KIND = "corral.run.kind"
    RUN_STATUS = "corral.run.status"
    RUN_REASON = "corral.run.reason"
    STAGE = "corral.stage.name"
    STAGE_DECISION = "corral.stage.decision"
    STAGE_CODE = "corral.stage.error_code"
    TOOL_PACKAGE = "corral.tool.package"
    RESULT_STATUS = "corral.tool.result.status"
    WAIT_KINDS = "corral.wait.kinds"
    WAIT_IDS = "corral.wait.ids"
    DECISION = "corral.decision"
    DECIDED_BY = "corral.decision.by"
    DECISION_SURFACE = "corral.decision.surface"
    SHELL_STEP = "corral.shell.step"
    SHELL_OUTCOME = "corral.shell.outcome"
    SHELL_RULE = "corral.shell.rule"
    SHELL_PLANE = "corral.shell.plane"
    SHELL_CONFINEMENT = "corral.shell.confinement"
    HOOK_EVENT = "corral.hook.event"
    HOOK_KIND = "corral.hook.kind"
    HOOK_OUTCOME = "corral.hook.outcome"
    WORKFLOW_ID = "corral.workflow.id"
    WORKFLOW_TRIGGER = "corral.workflow.trigger"
