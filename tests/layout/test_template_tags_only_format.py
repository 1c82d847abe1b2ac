"""Template tags only format (issue 42, docs/architecture.md "Rules a new module follows"): a page's data is read
by selectors the view calls and handed to the tags, so a tag runs no query of its own. Read statically (ast): no
tag module imports a service, touches a model manager (`X.objects`) or calls a queryset method, and the selector
functions a tag may call are the few listed below, each checked to run no query."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from .imports import REPO

TAGS = REPO / "tracker" / "templatetags"
QUERYSET_CALLS = {"filter", "exclude", "select_related", "prefetch_related", "annotate", "aggregate", "values_list",
                  "order_by", "exists", "raw", "extra", "in_bulk", "iterator", "distinct", "only", "defer", "latest",
                  "earliest", "get_or_create", "update_or_create"}

# Selector functions a tag calls, each a rule over plain values (no model read), with a call that proves it.
ALLOWED_SELECTOR_CALLS = {
    "tracker.selectors.visibility.shown_source_ref": ("/srv/reports/ci_ce_cpu", {"staff": False}),
    "tracker.selectors.visibility.shown_staff_name": ("alice", {"staff": False}),
    "tracker.selectors.visibility.shown_run_message": ("cancelled by alice", {"staff": False}),
    "tracker.selectors.summary.config_command": ("paddle.abs(Tensor([2],\"float32\"), )", {}),
}


def _selector_uses(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, dotted selector name) a tag module uses: `from ..selectors.m import f` and `m.f` after
    `from ..selectors import m`."""
    aliases, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [node.module or ""]) \
                if node.level else node.module or ""
            module = module.rstrip(".")
            for alias in node.names:
                if module == "tracker.selectors":
                    aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
                elif module.startswith("tracker.selectors."):
                    found.append((node.lineno, f"{module}.{alias.name}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.append((node.lineno, f"{aliases[node.value.id]}.{node.attr}"))
    return sorted(found)


def query_uses(path: Path, package: str = "tracker.templatetags") -> list[tuple[int, str]]:
    """(line, what) of everything in a tag module that reads the database or may."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if (node.level and module.startswith("services")) or module.startswith("tracker.services"):
                found.append((node.lineno, f"imports a service: {module}"))
        elif isinstance(node, ast.Attribute) and node.attr == "objects":
            found.append((node.lineno, f"model manager: {ast.unparse(node)}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in QUERYSET_CALLS
              and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "register")):
            found.append((node.lineno, f"queryset call: {ast.unparse(node.func)}"))
    found += [(line, f"selector call: {name}") for line, name in _selector_uses(tree, package)
              if name not in ALLOWED_SELECTOR_CALLS]
    return sorted(found)


def test_no_template_tag_reads_the_database():
    offending = {path.name: found for path in sorted(TAGS.glob("*.py")) if (found := query_uses(path))}
    assert offending == {}, "read it in a selector the view calls and hand it to the tag"


def test_the_scan_sees_the_selector_calls_it_allows():
    seen = {name for path in sorted(TAGS.glob("*.py"))
            for _line, name in _selector_uses(ast.parse(path.read_text(encoding="utf-8")), "tracker.templatetags")}
    assert seen == set(ALLOWED_SELECTOR_CALLS), "a listed call no tag makes any more leaves the list"


@pytest.mark.parametrize("name", sorted(ALLOWED_SELECTOR_CALLS))
def test_each_allowed_selector_call_runs_no_query(name):
    """No database is open to this test (no django_db mark): any query the call made would raise."""
    module, _, function = name.rpartition(".")
    args, kwargs = ALLOWED_SELECTOR_CALLS[name]
    assert isinstance(getattr(importlib.import_module(module), function)(args, **kwargs), str)


def test_the_scan_catches_a_planted_query(tmp_path):
    planted = tmp_path / "planted_tags.py"
    planted.write_text(
        "from django import template\n"
        "from ..models import Claim\n"
        "from ..services.site_claims import site_contributor\n"
        "from ..selectors import claims as claim_selectors\n"
        "from ..selectors.runs import task_runs_panel\n"
        "register = template.Library()\n"
        "@register.filter\n"
        "def open_claims(task):\n"
        "    return Claim.objects.filter(task=task).count() + task.claims.exclude(withdrawn_at=None).count()\n"
        "@register.simple_tag\n"
        "def state(task, user):\n"
        "    return claim_selectors.task_claim_state(task, user), task_runs_panel(task)\n", encoding="utf-8")
    assert query_uses(planted) == [
        (3, "imports a service: services.site_claims"),
        (5, "selector call: tracker.selectors.runs.task_runs_panel"),
        (9, "model manager: Claim.objects"),
        (9, "queryset call: Claim.objects.filter"),
        (9, "queryset call: task.claims.exclude"),
        (12, "selector call: tracker.selectors.claims.task_claim_state"),
    ]
