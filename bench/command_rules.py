"""Permission rules' cost on command analysis: the mixed corpus analysed with no rules and
analysed then judged against 200 rules, in the same run, three rounds.

Run: ``.venv/bin/python bench/command_rules.py [--seconds 1]``

Target (issue 34): analysis with 200 rules loaded within 10 % of analysis without rules
(the median of three rounds; each round times both, one after the other). Times are this
process's CPU time, so other work on a shared machine does not count.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from corral.policy.command_rules import PrefixRule, RuleOrigin, RuleSet
from corral.shell.analysis import Analysis
from corral.shell.command_rules import judge_analysis
from outcome import Figure, finish
from shell_analysis import analyse, corpus_commands

TARGET_OVERHEAD = 0.10
PROGRAMS = (
    "git", "npm", "ls", "cat", "grep", "find", "sed", "awk", "head", "tail", "make", "python3",
    "docker", "curl", "rm", "cp", "mv", "tar", "echo", "sort",
)  # fmt: skip
SUBCOMMANDS = ("status", "log", "diff", "show", "test", "run", "build", "push", "-l", "-n")


def two_hundred_rules() -> RuleSet:
    """200 rules over the common programs: prefixes of one to three words, alternatives,
    each decision."""
    rules: list[PrefixRule] = []
    decisions = ("allow", "prompt", "forbidden")
    for index in range(200):
        program = PROGRAMS[index % len(PROGRAMS)]
        sub = SUBCOMMANDS[(index // len(PROGRAMS)) % len(SUBCOMMANDS)]
        pattern: tuple[str | tuple[str, ...], ...] = (
            (program,) if index % 4 == 0 else
            (program, sub) if index % 4 == 1 else
            (program, (sub, f"--{sub}")) if index % 4 == 2 else
            (program, sub, f"x{index}")
        )  # fmt: skip
        rules.append(
            PrefixRule(
                pattern=pattern,
                decision=decisions[index % 3],
                origin=RuleOrigin(file="bench.rules", line=index + 1),
                id=f"bench.rules:{index + 1}",
            )
        )
    return RuleSet(rules)


def rate(commands: list[str], seconds: float, work: Callable[[str], object]) -> float:
    done = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        for command in commands:
            work(command)
        done += len(commands)
    return done / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    rules = two_hundred_rules()
    commands = corpus_commands("allowed.txt", "evasions.txt")
    analyses: list[Analysis] = [a for a in map(analyse, commands) if isinstance(a, Analysis)]
    found = sum(len(a.commands) for a in analyses)

    def with_rules(command: str) -> object:
        analysis = analyse(command)
        assert isinstance(analysis, Analysis)
        return judge_analysis(analysis, rules) if analysis.allowed else analysis

    bare_rates: list[float] = []
    ruled_rates: list[float] = []
    for _ in range(3):
        bare_rates.append(rate(commands, args.seconds, analyse))
        ruled_rates.append(rate(commands, args.seconds, with_rules))
    overheads = [bare / ruled - 1 for bare, ruled in zip(bare_rates, ruled_rates, strict=True)]
    start = time.process_time()
    rounds = 0
    while time.process_time() - start < args.seconds:
        for analysis in analyses:
            if analysis.allowed:
                judge_analysis(analysis, rules)
        rounds += 1
    judge_us = (time.process_time() - start) / (rounds * found) * 1e6
    print(f"corpus            : {len(commands)} command lines, {found} commands found")
    print(f"no rules          : {', '.join(f'{r:,.0f}' for r in bare_rates)} lines/s")
    print(f"200 rules         : {', '.join(f'{r:,.0f}' for r in ruled_rates)} lines/s")
    print(
        f"overhead          : min {min(overheads):.1%}, median {statistics.median(overheads):.1%}"
    )
    print(f"judging alone     : {judge_us:.2f} µs per command found")
    median = statistics.median(overheads)
    finish(
        "command_rules",
        [
            Figure(
                name="analysis + 200 rules (lines/s, median)",
                value=statistics.median(ruled_rates),
                unit="lines/s",
                baseline=statistics.median(bare_rates),
                target=f"within {TARGET_OVERHEAD:.0%}",
                met=median <= TARGET_OVERHEAD,
            ),
            Figure(name="overhead (min of 3)", value=min(overheads) * 100, unit="%"),
            Figure(name="overhead (median of 3)", value=median * 100, unit="%"),
            Figure(name="judging per command found", value=judge_us, unit="µs"),
        ],
    )


if __name__ == "__main__":
    main()
