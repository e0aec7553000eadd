"""Building the model's prompt from a conversation's timeline, every step."""

from corral.runtime.prompt.builder import Overlay, Prompt, PromptBuilder, PromptRequest
from corral.runtime.prompt.system import PromptView, StateBlock

__all__ = ["Overlay", "Prompt", "PromptBuilder", "PromptRequest", "PromptView", "StateBlock"]
