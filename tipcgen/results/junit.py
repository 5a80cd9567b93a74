"""JUnit XML, the one writer for `run` and `suite`: results as test suites of test cases (data), rendered by
templates/report/junit.xml.j2 with every text through `xml_text`, so the file is well-formed whatever a log
holds (ANSI colours, NUL, vertical tabs, lone surrogates)."""
from __future__ import annotations

from dataclasses import dataclass, field

from tipcgen.format.words import ERROR, FAILED, PASSED, SKIPPED
from tipcgen.render import templating
from tipcgen.results.results import Summary
from tipcgen.results.summary_check import xml_text

OUTCOMES = (PASSED, FAILED, SKIPPED, ERROR)  # a case's outcome: a step's status, or an error


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    seconds: float = 0.0
    outcome: str = PASSED  # one of OUTCOMES
    message: str = ""  # the failure's, skip's or error's one line
    text: str = ""  # the failure's or error's detail (command, log, tail)
    output: str = ""  # system-out


@dataclass(frozen=True)
class Suite:
    name: str
    cases: list[Case]
    seconds: float
    properties: list[tuple[str, str]] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for case in self.cases if case.outcome == outcome)


def summary_suite(summary: Summary, prefix: str | None = None, log_dir: str = "") -> Suite:
    """A chain's Summary as one test suite: a case per step, per target metric, per chain problem."""
    prefix = prefix or f"{summary.model}.{summary.mode}"
    cases = []
    for step in summary.steps:
        outcome = step.status if step.status in (FAILED, SKIPPED) else PASSED
        detail = (f"hint: {step.hint}\n" if step.hint else "") + \
            f"command: {step.command}\nlog: {(log_dir + ' ') if log_dir else ''}{step.log}\n" + "\n".join(step.tail)
        cases.append(Case(f"{prefix}.{step.kind}", step.name, step.seconds, outcome, step.reason if outcome != PASSED else "",
                          detail if outcome == FAILED else "", step.note))
    for m in summary.target.get("metrics", []):
        shown = m["measured"] if m.get("measured") is not None else "nothing"
        message = "" if m["reproduced"] else (f"not reproduced: {m['metric']} measured {shown}, paper {m['paper']}, "
                                             f"bound {m['bound']}")
        cases.append(Case(f"{prefix}.target", f"target {m['metric']}", 0.0, PASSED if m["reproduced"] else FAILED, message))
    for number, problem in enumerate(summary.problems, 1):
        cases.append(Case(prefix, f"chain-{number}", 0.0, ERROR, problem))
    properties = [("config", summary.config), *summary.environment.items()]
    return Suite(f"tipc.{summary.chain}.{summary.model}.{summary.mode}", cases, summary.wall_seconds, properties)


def junit_text(name: str, suites: list[Suite], seconds: float) -> str:
    env = templating.environment()
    env.filters["xml"] = xml_text
    everything = Suite(name, [case for suite in suites for case in suite.cases], seconds)
    return env.get_template("report/junit.xml.j2").render(all=everything, suites=suites)
