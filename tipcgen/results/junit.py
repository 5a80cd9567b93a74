"""JUnit XML, the one writer for `run` and `suite`: results as test suites of test cases (data), built with
xml.etree.ElementTree (as pytest's junitxml is), which escapes every text once. Before a text goes in, `xml_safe`
drops ANSI escape sequences and writes each character XML 1.0 cannot hold as `#xNN`, so the file is well-formed
whatever a log holds (ANSI colours, NUL, vertical tabs, lone surrogates)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from tipcgen.format.words import ERROR, FAILED, INTERRUPTED, PASSED, SKIPPED
from tipcgen.results.summary import Summary

OUTCOMES = (PASSED, FAILED, SKIPPED, ERROR)  # a case's outcome: a step's status, or an error
_ELEMENT = {FAILED: "failure", SKIPPED: SKIPPED, ERROR: ERROR}  # JUnit's element of each outcome but a pass

# colour and cursor codes (CSI), window titles (OSC) and other escapes: dropped
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Outside XML 1.0's Char ([^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]), written as what it leaves out:
# the same characters (test_integrity_reports.py checks every code point), compiled in 0.4 ms where that negated
# class took 16 ms in every process that imports this module.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(value: Any) -> str:
    """Text XML 1.0 can hold (not yet escaped: ElementTree does that): ANSI codes dropped, any other character
    XML cannot hold (NUL, \\x0b, lone surrogates, U+FFFE) written as `#xNN`, as pytest's junitxml does."""
    text = _ANSI.sub("", str(value))
    return _NOT_XML.sub(lambda m: f"#x{ord(m.group()):02X}", text)


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
        # A step a stop signal cut short is an <error> (as a test whose run broke off), never a <skipped>: a CI
        # page counts errors with failures, and shows skips as harmless. Its message says it was interrupted.
        outcomes: dict[str, str] = {FAILED: FAILED, SKIPPED: SKIPPED, INTERRUPTED: ERROR}
        outcome = outcomes.get(step.status, PASSED)
        message = step.reason if outcome != PASSED else ""
        if step.status == INTERRUPTED:
            message = f"{INTERRUPTED}" + (f" by {summary.interrupted_by}" if summary.interrupted_by else "") + \
                ": the run was stopped while this step ran"
        detail = (f"hint: {step.hint}\n" if step.hint else "") + \
            f"command: {step.command}\nlog: {(log_dir + ' ') if log_dir else ''}{step.log}\n" + "\n".join(step.tail)
        cases.append(Case(f"{prefix}.{step.kind}", step.name, step.seconds, outcome, message,
                          detail if outcome in (FAILED, ERROR) else "", step.note))
    for m in summary.target.get("metrics", []):
        shown = m["measured"] if m.get("measured") is not None else "nothing"
        message = "" if m["reproduced"] else (f"not reproduced: {m['metric']} measured {shown}, paper {m['paper']}, "
                                             f"bound {m['bound']}")
        cases.append(Case(f"{prefix}.target", f"target {m['metric']}", 0.0, PASSED if m["reproduced"] else FAILED, message))
    for number, problem in enumerate(summary.problems, 1):
        cases.append(Case(prefix, f"chain-{number}", 0.0, ERROR, problem))
    properties = [("config", summary.config), *summary.environment.items()]
    return Suite(f"tipc.{summary.chain}.{summary.model}.{summary.mode}", cases, summary.wall_seconds, properties)


def _element(parent: ET.Element | None, tag: str, text: str = "", **attributes: Any) -> ET.Element:
    safe = {key: xml_safe(value) for key, value in attributes.items()}
    node = ET.Element(tag, safe) if parent is None else ET.SubElement(parent, tag, safe)
    if text:
        node.text = xml_safe(text)
    return node


def _totals(suite: Suite) -> dict[str, str]:
    return {"name": suite.name, "tests": str(len(suite.cases)), "failures": str(suite.count(FAILED)),
            "skipped": str(suite.count(SKIPPED)), "errors": str(suite.count(ERROR)), "time": f"{suite.seconds:.3f}"}


def junit_text(name: str, suites: list[Suite], seconds: float) -> str:
    """The <testsuites> document: totals over every suite, then each suite with its properties and cases."""
    everything = Suite(name, [case for suite in suites for case in suite.cases], seconds)
    root = _element(None, "testsuites", **_totals(everything))
    for suite in suites:
        node = _element(root, "testsuite", **_totals(suite))
        if suite.properties:
            properties = _element(node, "properties")
            for key, value in suite.properties:
                _element(properties, "property", name=key, value=value)
        for case in suite.cases:
            test = _element(node, "testcase", classname=case.classname, name=case.name, time=f"{case.seconds:.3f}")
            if case.outcome in _ELEMENT:
                _element(test, _ELEMENT[case.outcome], "" if case.outcome == SKIPPED else case.text, message=case.message)
            if case.output:
                _element(test, "system-out", case.output)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
