"""Every event kind the board writes is in tracker.vocab.EventKind and known to the charts.

The written kinds are read from the source: every `kind=` of a call to record_event (the one writer of
Events) in tracker/, resolved through the EventKind constants it names. So a new kind is either drawn
by a chart or listed with its reason in selectors.charts.UNCHARTED_EVENT_KINDS, and a chart can never
again read a kind nobody writes (the burn-down's "merged" line was 0 on real data for that reason).
"""
import ast
from pathlib import Path

import tracker
from tracker.selectors import charts
from tracker.vocab import EventKind

TRACKER = Path(tracker.__file__).parent
WRITERS = {"record_event"}


def _is_writer(call: ast.Call) -> bool:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name in WRITERS:
        return True
    # Event.objects.create(...) / Event.objects.bulk_create(...) written directly
    return (name in {"create", "bulk_create", "get_or_create", "update_or_create"} and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute) and isinstance(func.value.value, ast.Name)
            and func.value.value.id == "Event")


def _event_kinds_named(node: ast.AST) -> set[str]:
    return {getattr(EventKind, n.attr) for n in ast.walk(node)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "EventKind"}


def written_kinds() -> tuple[set[str], list[str]]:
    """(the kinds tracker/ writes, the places that write a kind as a free string)."""
    kinds, free = set(), []
    for path in sorted(TRACKER.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for function in functions:
            if function.name in WRITERS:
                continue  # record_event itself hands its caller's kind to Event.objects.create
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call) and _is_writer(n)):
                kind = next((k.value for k in call.keywords if k.arg == "kind"), None)
                if kind is None:
                    continue
                if isinstance(kind, ast.Constant):
                    free.append(f"{path.relative_to(TRACKER)}:{call.lineno}: kind={kind.value!r}")
                elif isinstance(kind, ast.Attribute):
                    kinds |= _event_kinds_named(kind)
                else:
                    # kind=<a variable> (the board import's list of changes, collected by its steps): the
                    # kinds its module names
                    named = _event_kinds_named(tree)
                    assert named, f"{path}:{call.lineno}: kind from a variable, and its module names no EventKind"
                    kinds |= named
    return kinds, free


def test_events_are_written_with_the_vocabulary_only():
    kinds, free = written_kinds()
    assert free == []
    # The scan found the writers (claims, PR links, the runner's outcomes among them).
    assert {EventKind.CLAIMED, EventKind.PR_LINKED, EventKind.FIX_VERIFIED, EventKind.TASK_CREATED} <= kinds
    # And the vocabulary holds no kind nobody writes.
    assert set(EventKind) == kinds


def test_every_written_kind_is_known_to_the_charts():
    kinds, _free = written_kinds()
    charted = {kind for series in charts.BURNDOWN_EVENT_KINDS.values() for kind in series}
    uncharted = set(charts.UNCHARTED_EVENT_KINDS)
    assert not charted & uncharted
    assert kinds - charted - uncharted == set()
    # What the burn-down reads is something the board writes.
    assert charted <= kinds
    assert set(charts.BURNDOWN_EVENT_KINDS) <= set(charts.BURNDOWN_SERIES)
