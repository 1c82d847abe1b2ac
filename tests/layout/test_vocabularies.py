"""Named vocabularies, not free strings (issue 32): the engine compares and returns verdict statuses through
``apitester.vocab.Status``, and templates compare run states and statuses through what the view or a
template filter hands them, never a quoted value. Read statically (ast for Python, a regex for templates).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from apitester.vocab import Status
from tracker.vocab import RunState

from .imports import REPO

STATUS_VALUES = frozenset(s.value for s in Status)
RUN_STATE_VALUES = frozenset(s.value for s in RunState)


def _status_constants(node: ast.AST) -> list[str]:
    """The status strings a comparison operand or a returned value spells out: a constant, the constants
    inside a tuple / list / set literal, or either branch of a conditional expression."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in STATUS_VALUES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [value for element in node.elts for value in _status_constants(element)]
    if isinstance(node, ast.IfExp):
        return _status_constants(node.body) + _status_constants(node.orelse)
    return []


def status_literals(source: str) -> list[tuple[int, str]]:
    """(line, value) of every status literal used in a comparison (==, !=, in, not in) or returned."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Return) and node.value is not None:
            operands = [node.value]
        else:
            continue
        found += [(node.lineno, value) for operand in operands for value in _status_constants(operand)]
    return sorted(found)


def engine_status_literals() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted((REPO / "apitester").rglob("*.py")):
        found = status_literals(path.read_text(encoding="utf-8"))
        if found:
            out[path.relative_to(REPO).as_posix()] = found
    return out


# `{% if x == "queued" %}`, `{% elif "pass" != r.status %}`, `{% if a and b == 'done' %}` …
_TEMPLATE_TAG = re.compile(r"{%-?\s*(?:if|elif)\b(?P<condition>.*?)-?%}", re.S)
_QUOTED_COMPARISON = re.compile(r"""(?:==|!=|\bin)\s*(?P<q>["'])(?P<a>[^"']*)(?P=q)|(?P<r>["'])(?P<b>[^"']*)(?P=r)\s*(?:==|!=|\bin\b)""")


def template_literals(text: str, values: frozenset[str]) -> list[tuple[int, str]]:
    """(line, value) of every quoted run-state / status value compared in an {% if %} or {% elif %}."""
    found = []
    for tag in _TEMPLATE_TAG.finditer(text):
        line = text.count("\n", 0, tag.start()) + 1
        for comparison in _QUOTED_COMPARISON.finditer(tag.group("condition")):
            value = comparison.group("a") if comparison.group("a") is not None else comparison.group("b")
            if value in values:
                found.append((line, value))
    return found


def template_state_literals() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted((REPO / "templates").rglob("*.html")):
        found = template_literals(path.read_text(encoding="utf-8"), STATUS_VALUES | RUN_STATE_VALUES)
        if found:
            out[path.relative_to(REPO).as_posix()] = found
    return out


def test_the_engine_spells_no_status_in_a_comparison_or_a_return():
    assert engine_status_literals() == {}, "compare against apitester.vocab.Status members"


def test_no_template_compares_a_run_state_or_a_status_to_a_quoted_value():
    assert template_state_literals() == {}, "pass the flag from the selector or use a runs_tags filter"


# ----------------------------------------------------------------------------- the checks see what they check


def test_the_engine_scan_finds_a_planted_status_literal():
    planted = (
        "def judge(verdict):\n"
        "    if verdict.status == 'pass':\n"
        "        return 'accuracy_error'\n"
        "    if verdict.status in ('crash', Status.TIMEOUT, 'not_a_status'):\n"
        "        return 'engine_error' if verdict.engine_error else 'unsupported'\n"
        "    return 'something else'\n"
    )
    assert status_literals(planted) == [(2, "pass"), (3, "accuracy_error"), (4, "crash"), (5, "unsupported")]


def test_the_engine_scan_leaves_names_and_other_strings_alone():
    clean = (
        "def judge(verdict):\n"
        "    counts['timeout'] += 1\n"              # a key, not a comparison
        "    if verdict.status == Status.PASS:\n"
        "        return 'passed'\n"
        "    return verdict.kind == 'edge'\n"
    )
    assert status_literals(clean) == []


def test_the_template_scan_finds_a_planted_state_literal():
    planted = (
        '{% load i18n %}<p>{% if run.state == "queued" or run.state == \'running\' %}\n'
        '…{% elif "done" != run.state %}x{% elif r.status in "pass" %}{% endif %}\n'
        '{% if run.kind == "queued_elsewhere" %}{% endif %}{{ "queued" }}\n'
    )
    assert template_literals(planted, STATUS_VALUES | RUN_STATE_VALUES) == [
        (1, "queued"), (1, "running"), (2, "done"), (2, "pass")]


def test_the_scans_read_the_real_tree():
    assert (REPO / "apitester" / "execute.py").exists() and (REPO / "templates" / "tracker").is_dir()
    assert Path(__file__).parent.name == "layout"
