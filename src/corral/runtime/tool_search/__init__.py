"""tool_search: deferring tools beyond the core set when their schemas crowd the context.

- ``deferral``: which tools the model gets in full each step, and the list of the others;
- ``context_windows``: a model's context size (genai-prices data);
- ``matching`` and ``bm25``: regex and BM25 search over names, descriptions, parameters;
- ``service``: the prompt's tool plan and the search a tool_search call runs.
"""

from corral.runtime.tool_search.deferral import TOOL_SEARCH, ToolPlan
from corral.runtime.tool_search.service import ToolSearch

__all__ = ["TOOL_SEARCH", "ToolPlan", "ToolSearch"]
