"""Permission rules on commands and tool calls: the rule model, the two file syntaxes
(Codex's ``prefix_rule`` calls and our TOML) and the folder of rule files. Matching a
command line's analysis against them is :mod:`corral.shell.command_rules`."""

from corral.policy.command_rules.codex_file import parse_codex_rules
from corral.policy.command_rules.folder import RulesFolder, load_rule_file
from corral.policy.command_rules.model import (
    DECISIONS,
    Decision,
    HostExecutable,
    PrefixRule,
    RuleError,
    RuleOrigin,
    ToolRule,
    strictest,
)
from corral.policy.command_rules.ruleset import RuleSet
from corral.policy.command_rules.toml_file import parse_toml_rules

__all__ = [
    "DECISIONS",
    "Decision",
    "HostExecutable",
    "PrefixRule",
    "RuleError",
    "RuleOrigin",
    "RuleSet",
    "RulesFolder",
    "ToolRule",
    "load_rule_file",
    "parse_codex_rules",
    "parse_toml_rules",
    "strictest",
]
