"""Every API of the board's 183 tasks has a spec in the engine's registry (issue: engine coverage)."""
import json
from pathlib import Path

from apitester.reports import TASK_NAME_ALIASES
from apitester.specs import engine_specs, get_spec
from apitester.specs.base import resolve_torch

BOARD = Path(__file__).resolve().parents[2] / "fixtures" / "board.json"


def board_apis() -> set[str]:
    rows = json.loads(BOARD.read_text(encoding="utf-8"))
    return {row["fields"]["api"] for row in rows if row["model"] == "tracker.task"}


def test_the_board_has_142_distinct_apis():
    assert len(board_apis()) == 142


def test_every_board_api_has_a_spec():
    # A task named paddle.Tensor.mul runs configs traced as paddle.Tensor.__mul__: either name may carry the spec.
    missing = sorted(api for api in board_apis()
                     if get_spec(api) is None and get_spec(TASK_NAME_ALIASES.get(api, api)) is None)
    assert missing == [], f"board APIs without a spec: {missing}"


def test_registry_entries_are_declarative_and_documented():
    """Every entry names a reference that exists and says in its note what the reference is."""
    # Test-only specs (tests/fake_specs, registered when another test loads them) are fixtures for the
    # engine's own paths, not entries of the engine's registry.
    specs = engine_specs()
    assert specs, "the registry is empty"
    for name, spec in specs.items():
        assert callable(spec.torch), name
        reference = getattr(spec.torch, "__name__", "")
        if reference.startswith("torch_call("):  # a renaming wrapper: its torch target must exist
            assert callable(resolve_torch(reference[len("torch_call("):-1])), f"{name}: {reference}"
        assert spec.note.strip(), f"{name} has no note saying what its reference computes"
        assert all(callable(domain) for domain in spec.domains.values()), f"{name}: a domain is not callable"
        assert all(len(pair) == 2 and min(pair) >= 0 for pair in spec.tolerances.values()), \
            f"{name}: tolerances must be (atol, rtol) pairs"
        if spec.random:
            assert spec.check is not None or spec.backward is False, f"random API {name} needs a statistical check"
