"""Named vocabularies, not free strings (issue 32): the engine compares and returns verdict statuses through
``apitester.vocab.Status``, and templates compare run states and statuses through what the view or a
template filter hands them, never a quoted value. Read statically (ast for Python, a regex for templates).
"""
from __future__ import annotations

import ast
import re
import string
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


def generated_sources(source: str) -> dict[str, str]:
    """name -> Python source of each module-level *_TEMPLATE string (the repro script the engine writes),
    its str.format fields filled with a plain name so that it parses."""
    out = {}
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                and any(isinstance(t, ast.Name) and t.id.endswith("TEMPLATE") for t in node.targets)):
            fields = {name for _text, name, _spec, _conv in string.Formatter().parse(node.value.value) if name}
            out[node.targets[0].id] = node.value.value.format(**dict.fromkeys(fields, "_"))
    return out


def engine_status_literals() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted((REPO / "apitester").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(REPO).as_posix()
        for where, text in {name: source, **{f"{name}:{t}": g for t, g in generated_sources(source).items()}}.items():
            found = status_literals(text)
            if found:
                out[where] = found
    return out


# `{% if x == "queued" %}`, `{% elif "pass" != r.status %}`, `{% if a and b == 'done' %}` …
_TEMPLATE_TAG = re.compile(r"{%-?\s*(?:if|elif)\b(?P<condition>.*?)-?%}", re.S)
_QUOTED_COMPARISON = re.compile(r"""(?:==|!=|\bin)\s*(?P<q>["'])(?P<a>[^"']*)(?P=q)|(?P<r>["'])(?P<b>[^"']*)(?P=r)\s*(?:==|!=|\bin\b)""")


# A page script's `d.state === "running"`: the JSON says `active`, the script never lists the states.
_SCRIPT_COMPARISON = re.compile(r"""(?:===|!==)\s*(?P<q>["'])(?P<a>[^"']*)(?P=q)|(?P<r>["'])(?P<b>[^"']*)(?P=r)\s*(?:===|!==)""")


def template_literals(text: str, values: frozenset[str]) -> list[tuple[int, str]]:
    """(line, value) of every quoted run-state / status value compared in an {% if %} or {% elif %}, or by a
    page script's === / !==."""
    found = []
    for tag in _TEMPLATE_TAG.finditer(text):
        found += [(text.count("\n", 0, tag.start()) + 1, value)
                  for value in _compared(_QUOTED_COMPARISON, tag.group("condition")) if value in values]
    for comparison in _SCRIPT_COMPARISON.finditer(text):
        value = comparison.group("a") if comparison.group("a") is not None else comparison.group("b")
        if value in values:
            found.append((text.count("\n", 0, comparison.start()) + 1, value))
    return sorted(found)


def _compared(pattern: re.Pattern, condition: str) -> list[str]:
    return [m.group("a") if m.group("a") is not None else m.group("b") for m in pattern.finditer(condition)]


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


def test_the_engine_scan_reads_the_scripts_the_engine_writes():
    planted = (
        "SCRIPT_TEMPLATE = '''\n"
        "def report(status):\n"
        "    if status != \"pass\":\n"
        "        raise AssertionError({message})\n"
        "'''\n"
    )
    scripts = generated_sources(planted)
    assert list(scripts) == ["SCRIPT_TEMPLATE"] and status_literals(scripts["SCRIPT_TEMPLATE"]) == [(3, "pass")]
    # the repro script is one of them, and it parses
    assert "_TEMPLATE" in generated_sources((REPO / "apitester" / "diagnosis" / "repro.py").read_text(encoding="utf-8"))


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
        '<script>if (d.state === "running" || "failed" !== d.state || s === "loading") poll();</script>\n'
    )
    assert template_literals(planted, STATUS_VALUES | RUN_STATE_VALUES) == [
        (1, "queued"), (1, "running"), (2, "done"), (2, "pass"), (4, "failed"), (4, "running")]


def test_the_scans_read_the_real_tree():
    assert (REPO / "apitester" / "engine" / "execute.py").exists() and (REPO / "templates" / "tracker").is_dir()
    assert Path(__file__).parent.name == "layout"
