"""delegate: subagents with their own loop, narrow-only reach, answers clipped at both ends,
and a run folder (``meta.json``, ``messages.jsonl``) under the parent conversation."""

from corral.runtime.delegation.reach import Reach, child_reach
from corral.runtime.delegation.service import Delegation

__all__ = ["Delegation", "Reach", "child_reach"]
