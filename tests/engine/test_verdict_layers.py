"""Verdicts in two layers (docs/verdicts.md): strict = Paddle vs the plain Torch call on identical
inputs; adapted = after the spec's declared adaptations.  Real paddle and torch, real report configs."""
import inspect
import json

import tests.fake_specs.engine  # noqa: F401  (registers apitester_test.precise_sum)
import pytest

from apitester.engine.compare import final_status
from apitester.engine.execute import run_config
from apitester.specs import all_specs, engine_specs
from apitester.specs.base import NEEDS_STRICT_REFERENCE, SILENT_KINDS, Adaptation, Spec

from tests.engine_helpers.report_configs import report_line, verdict_of
from tests.engine_helpers.cli import run

EMBEDDING = "paddle.nn.functional.embedding"


def _embedding_padding_config() -> str:
    return report_line(EMBEDDING, 'Tensor([12, 7],"int32")', 'weight=Tensor([99, 32],"float32")', "padding_idx=0,")


def test_embedding_padding_idx_is_a_documented_difference_not_a_pass():
    config = _embedding_padding_config()
    v = verdict_of(config)
    # strict: the plain torch.nn.functional.embedding keeps the weight row at padding_idx
    assert (v.strict["status"], v.strict["direction"]) == ("accuracy_error", "forward")
    assert v.strict["max_abs"] > 0.01 and v.strict["mismatched"] > 0
    # adapted: Paddle's documented all-zero row agrees exactly
    assert v.adapted["status"] == "pass" and v.adapted["max_abs"] == 0.0
    assert v.status == "documented_difference" and not v.ok
    assert v.strict_status == "accuracy_error"
    kinds = [a["kind"] for a in v.adaptations]
    assert kinds == ["documented_semantics"]  # the silent sparse mapping is not shown
    assert "73445" in v.adaptations[0]["link"]
    assert v.message.startswith("differs from Torch by design: Paddle documents an all-zero output row")
    # the top-level figures and diff map are the strict layer's
    assert v.max_abs == v.strict["max_abs"] and v.diff_map is not None


def test_cli_shows_both_layers_in_json_and_human_form():
    config = _embedding_padding_config()
    proc = run(f"--api_config={config}", "--json")
    assert proc.returncode == 1, proc.stderr  # a documented difference is not a pass
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["status"] == "documented_difference"
    assert data["strict"]["status"] == "accuracy_error" and data["adapted"]["status"] == "pass"
    assert data["adaptations"][0]["kind"] == "documented_semantics"
    human = run(f"--api_config={config}")
    out = human.stdout
    assert f"[documented_difference forward] {config}" in out
    assert "strict  (plain Torch call): accuracy_error forward" in out
    assert "adapted (spec's adaptation): pass" in out
    assert "adaptation documented_semantics:" in out
    assert out.strip().splitlines()[-2:] == ["1 configs: documented_difference=1",
                                             "strict layer (plain Torch call): accuracy_error=1"]


def test_a_plain_spec_has_one_layer():
    config = report_line("paddle.logit", 'x=Tensor([4],"float64")')
    spec = all_specs()["paddle.logit"]
    assert not spec.visible_adaptations  # its only adaptation (argument mapping) changes no result
    v = verdict_of(config)
    assert v.status == "pass" and v.adapted is None and v.adaptations == []
    assert v.strict == {"status": "pass", "direction": None, "max_abs": v.max_abs, "max_rel": v.max_rel,
                        "mismatched": 0, "output": None, "message": v.message,
                        "exact": v.exact, "max_ulp": v.max_ulp, "facts": {}}
    # logit's float64 values pass 1e-2 a few ULPs apart: the exact rule reads them, the status does not change
    assert v.exact is False and v.max_ulp >= 1 and v.rule == "within_tolerance"


def test_a_random_api_keeps_its_statistical_check_marked():
    config = report_line("paddle.nn.functional.rrelu", "training=True")
    v = verdict_of(config)
    assert v.statistical and v.status == "pass"
    assert [a["kind"] for a in v.adaptations] == ["randomness"]
    assert v.strict_separate is False and v.adapted is None  # no plain comparison of random draws exists
    assert "statistical check" in v.message


def test_torch_suspect_when_paddle_matches_the_higher_precision_reference():
    v = run_config('apitester_test.precise_sum(x=Tensor([4096],"float32"), )')
    assert v.strict["status"] == "accuracy_error"          # what the plain (float16-accumulating) call says
    assert v.adapted["status"] == "pass"
    assert v.status == "torch_suspect" and not v.ok
    assert "higher-precision reference" in v.evidence


def test_a_gradient_convention_does_not_excuse_a_strict_failure():
    config = report_line("paddle.clip", "min=Tensor([1]")
    v = verdict_of(config)
    assert (v.strict["status"], v.strict["output"]) == ("accuracy_error", "grad min")
    assert v.adapted["status"] == "pass"
    assert v.status == "accuracy_error"


@pytest.mark.parametrize("strict, adapted, kinds, expected", [
    ("pass", "pass", ["documented_semantics"], "pass"),
    ("pass", "accuracy_error", ["documented_semantics"], "pass"),       # Paddle now agrees with Torch
    ("accuracy_error", "pass", ["documented_semantics"], "documented_difference"),
    ("shape_mismatch", "pass", ["documented_semantics"], "documented_difference"),
    ("accuracy_error", "pass", ["reference_precision"], "torch_suspect"),
    ("accuracy_error", "pass", ["gradient_convention"], "accuracy_error"),
    ("accuracy_error", "accuracy_error", ["documented_semantics"], "accuracy_error"),
    ("torch_error", "pass", ["documented_semantics"], "torch_error"),
])
def test_final_status_rules(strict, adapted, kinds, expected):
    assert final_status(strict, adapted, kinds) == expected


def _reference_is_a_call_mapping(spec: Spec) -> bool:
    """Mechanical criterion: the torch reference is built by torch_call and nothing else is custom."""
    return (spec.torch.__name__.startswith("torch_call(")
            and spec.paddle is None and spec.outputs is None and spec.check is None)


def test_every_spec_whose_reference_is_more_than_a_call_mapping_declares_its_adaptations():
    # the engine's registry: the test-only specs imported above, or loaded by a runner test earlier in this
    # worker process (paddle.testonly.*), are not part of it
    specs = engine_specs()
    custom = {api: spec for api, spec in specs.items() if not _reference_is_a_call_mapping(spec)}
    assert len(custom) > 100  # the registry walk sees the real registry
    undeclared = sorted(api for api, spec in custom.items() if not spec.adaptations)
    assert undeclared == []
    for api, spec in specs.items():
        for a in spec.adaptations:
            assert isinstance(a, Adaptation)
            if a.kind not in SILENT_KINDS:
                assert a.reason, api
            if a.kind in NEEDS_STRICT_REFERENCE:
                assert spec.has_strict_reference, api
        if spec.random:
            assert "randomness" in [a.kind for a in spec.adaptations], api
        if spec.strict_torch is not None:
            # a strict reference takes the same arguments as the adapted one
            assert inspect.signature(spec.strict_torch).parameters, api


def test_result_changing_adaptations_named_by_issue_11_are_declared():
    specs = all_specs()
    expected = {
        EMBEDDING: "documented_semantics",
        "paddle.nn.functional.rnnt_loss": "documented_semantics",
        "paddle.nn.functional.ctc_loss": "documented_semantics",
        "paddle.unique_consecutive": "documented_semantics",
        "paddle.unique": "documented_semantics",
        "paddle.linalg.eigh": "gradient_convention",
        "paddle.linalg.eigvalsh": "gradient_convention",
        "paddle.linalg.pinv": "gradient_convention",
        "paddle.nn.functional.binary_cross_entropy": "gradient_convention",
        "paddle.nn.functional.cross_entropy": "gradient_convention",
        "paddle.add_n": "reference_precision",
        "paddle.incubate.softmax_mask_fuse": "reference_precision",
        "paddle.nn.functional.gumbel_softmax": "randomness",
        "paddle.nn.functional.rrelu": "randomness",
        "paddle.linalg.svd_lowrank": "randomness",
    }
    for api, kind in expected.items():
        assert kind in [a.kind for a in specs[api].visible_adaptations], api


def test_an_undeclared_strict_reference_is_refused_at_registration():
    from apitester.specs.base import register

    with pytest.raises(ValueError, match="gives no strict_torch"):
        register(Spec(api="apitester_test.no_strict", torch=lambda **_: None,
                      adaptations=(Adaptation("documented_semantics", "x"),)))
    with pytest.raises(ValueError, match="unknown adaptation kind"):
        Adaptation("whatever", "x")
    with pytest.raises(ValueError, match="needs a reason"):
        Adaptation("documented_semantics")


def test_every_maps_arguments_has_its_reason():
    from apitester.specs.base import maps_arguments

    with pytest.raises(TypeError):
        maps_arguments()  # noqa  (the reason is a required argument)
    with pytest.raises(ValueError, match="needs its reason"):
        maps_arguments("  ")
    mappings = [(api, a) for api, spec in engine_specs().items()
                for a in spec.adaptations if a.kind == "argument_mapping"]
    assert len(mappings) > 80
    assert [api for api, a in mappings if len(a.reason.strip()) < 10] == []


def test_no_tolerance_differs_from_the_default_without_its_reason():
    specs = engine_specs()
    tuned = {api: spec for api, spec in specs.items() if spec.tolerances}
    assert len(tuned) >= 5  # nextafter (exact) and the fused ops
    assert [api for api, spec in tuned.items() if spec.comparison is None or not spec.comparison.note] == []
    from apitester.specs.base import register

    with pytest.raises(ValueError, match="no silent widening"):
        register(Spec(api="apitester_test.widened", torch=lambda **_: None, tolerances={"float16": (0.1, 0.1)}))


def test_the_tolerance_and_convention_decisions_are_on_the_entry_and_in_the_verdict():
    specs = all_specs()
    for api in ("paddle.nn.functional.interpolate", "paddle.nn.functional.upsample", "paddle.linalg.pinv",
                "paddle.linalg.cholesky_solve", "paddle.Tensor.cholesky_solve"):
        assert specs[api].comparison is not None and specs[api].comparison.source, api
    config = report_line("paddle.linalg.cholesky_solve", 'x=Tensor([4, 1],"float64")', 'y=Tensor([4, 4],"float64")')
    out = run("--json", f"--api_config={config}")
    data = json.loads(out.stdout.splitlines()[0])
    assert (data["status"], data["output"]) == ("accuracy_error", "grad y")
    assert "triangle" in data["comparison"]["note"] and data["comparison"]["source"]
    human = run(f"--api_config={config}").stdout
    assert "  comparison: gradients compared against the plain torch.cholesky_solve" in human


def test_the_docs_table_of_adaptations_is_the_commands_output():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "verdicts.md").read_text(encoding="utf-8")
    begin, end = "<!-- adaptations-table: begin -->\n", "\n<!-- adaptations-table: end -->"
    table = doc[doc.index(begin) + len(begin):doc.index(end)]
    out = run("adaptations", "--markdown")
    assert out.returncode == 0
    assert table == out.stdout.rstrip("\n"), "docs/verdicts.md is stale: paste `python -m apitester adaptations --markdown`"
    assert "| `paddle.cumprod (paddle.Tensor.cumprod)` | documented_semantics | separate" in table
