"""Issue 34 items 4, 5, 7, 8 with constructed cases of known answer, on real paddle and torch: a failure that is not
about values reads as a convention naming both behaviours (dtype, shape, raises, tie), a declared known failure the
run does not reproduce is stale, ties are drawn and read, and a shrink keeps the failing element."""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from diagnosis_helpers import REPO
from apitester.diagnosis.conventions import tie_rule
from apitester.diagnosis.diagnose import failure_signature
from apitester.engine.execute import run_config
from apitester.inputs import Draw
from apitester.known import stale_known_failures
from apitester.diagnosis.repro import draw_arguments, repro_script
from apitester.diagnosis.shrink import probe, shrink
from apitester.vocab import TieRule


def reading_of(api: str, shape: str = "[6]"):
    config = f'apitester_diag.{api}(Tensor({shape},"float32"), )'
    verdict = run_config(config)
    return probe(config, Draw.parse(verdict.draw)), verdict


def test_a_dtype_failure_reads_as_a_convention_naming_both_dtypes():
    result, _ = reading_of("dtype_convention")
    assert result.failure.reading == "convention"
    assert result.reading.convention.text == "dtype: int32 (Paddle) vs int64 (Torch)"
    assert (result.reading.convention.paddle, result.reading.convention.torch) == ("int32", "int64")


def test_a_shape_failure_names_both_shapes_sizes_left_out_of_its_key():
    result, _ = reading_of("shape_convention")
    convention = result.reading.convention.to_dict()
    assert convention["kind"] == "shape" and convention["text"] == "shape (n,) (Paddle) vs (n, 1) (Torch)"
    assert (convention["paddle"], convention["torch"]) == ("[6]", "[6, 1]")
    assert reading_of("shape_convention", "[9]")[0].failure.convention == result.failure.convention


def test_paddle_raising_where_torch_returns_and_the_other_way_round():
    paddle, verdict = reading_of("paddle_raises")
    assert verdict.strict_status == "paddle_error"
    assert paddle.reading.convention.text == "Paddle raises ValueError: x must be a matrix where Torch returns"
    assert paddle.reading.convention.to_dict()["raises"] == "paddle"
    torch, verdict = reading_of("torch_raises")
    assert verdict.strict_status == "torch_error"
    assert torch.reading.convention.text == "Torch raises RuntimeError: expected a matrix where Paddle returns"
    assert torch.failure.convention != paddle.failure.convention


def test_a_value_failure_is_not_a_convention():
    result, _ = reading_of("paddle_off")
    assert result.failure.reading == "paddle_off" and result.reading.convention is None


def test_distinct_failures_group_by_the_convention():
    dtype, _ = reading_of("dtype_convention")
    shape, _ = reading_of("shape_convention")
    base = {"api": "x", "config": 'x(Tensor([6],"float32"), )'}
    a = failure_signature({**base, "failure": dtype.failure.to_dict()})
    b = failure_signature({**base, "failure": {**dtype.failure.to_dict(), "convention": shape.failure.convention}})
    assert "dtype: int32 vs int64" in a["key"] and a["hash"] != b["hash"]


# ---------------------------------------------------------------- ties


def test_tie_rules_from_choices():
    # (floor of the tied coordinate, rounded up?): 0.5 -> 0, 1.5 -> 2, -0.5 -> -0
    assert tie_rule([(0, False), (1, True), (-1, True)]) == TieRule.HALF_TO_EVEN
    assert tie_rule([(0, True), (1, True), (-1, False)]) == TieRule.HALF_AWAY_FROM_ZERO
    assert tie_rule([(0, True), (1, True), (-1, True)]) == TieRule.HALF_UP
    assert tie_rule([(0, True), (1, False)]) == TieRule.MIXED


def test_an_edge_draw_places_ties_and_a_rounding_difference_reads_as_a_tie_convention():
    config = 'apitester_diag.round_ties(Tensor([4, 8],"float32"), )'
    verdict = run_config(config)
    assert verdict.strict_status == "accuracy_error" and verdict.draw["kind"] == "edge"
    result = probe(config, Draw.parse(verdict.draw))
    convention = result.reading.convention.to_dict()
    assert convention["kind"] == "tie"
    assert (convention["paddle_rule"], convention["torch_rule"]) == ("half_away_from_zero", "half_to_even")
    # the edge draw's ties: +-0.5 and +-2.5 go different ways (1.5 and 3.5 round up under both rules)
    assert convention["ties"] >= 4


ENV_300 = REPO / "var" / "paddle-envs" / "3.0.0" / "bin" / "python"
GRID = ('paddle.nn.functional.grid_sample(Tensor([1, 2, 4, 4],"float32"), Tensor([1, 4, 4, 2],"float32"), '
        'mode="nearest", padding_mode="zeros", align_corners=False, )')


def test_grid_sample_nearest_ties_on_paddle_3_0_0_round_half_away_from_zero():
    """Paddle 3.0.0's nearest grid_sample rounds a tied source coordinate half away from zero, Torch half to even;
    the engine's edge draw puts grid values on the ties (PaddleAPITest saw 4-12 tied elements differ)."""
    if not ENV_300.exists():
        pytest.fail(f"{ENV_300} is missing: build it with manage.py paddle_envs add 3.0.0")
    code = ("import json; from apitester.engine.execute import run_config; from apitester.diagnosis.shrink import probe; "
            "from apitester.inputs import Draw; import sys; c = sys.argv[1]; v = run_config(c, draw='edge:0@2'); "
            "p = probe(c, Draw.parse(v.draw)); print(json.dumps([v.strict_status, p.reading.convention.to_dict()], default=str))")
    out = subprocess.run([str(ENV_300), "-c", code, GRID], capture_output=True, text=True, timeout=300,
                         cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    status, convention = json.loads(out.stdout.strip().splitlines()[-1])
    assert status == "accuracy_error"
    assert (convention["paddle_rule"], convention["torch_rule"]) == ("half_away_from_zero", "half_to_even")
    assert 4 <= convention["ties"] <= 16


def test_grid_sample_nearest_ties_agree_on_this_paddle():
    verdict = run_config(GRID, draw="edge:0@2")
    assert verdict.strict_status == "pass"


# ---------------------------------------------------------------- shrinking keeps the failing elements

MUL = 'paddle.Tensor.__mul__(Tensor([64, 128],"float16"), 1000000.0, )'


def test_a_failure_one_element_shows_shrinks_to_that_element_and_replays():
    result = shrink(MUL, "typical:0")
    assert result.config == 'paddle.Tensor.__mul__(Tensor([1, 1],"float16"), 1000000.0, )'
    assert result.failure["reading"] == "paddle_off" and result.final.elements == 1
    worst = result.start.verdict.worst_index
    final = Draw.parse(result.to_dict()["final_draw"])
    assert final.cut == (((64, worst[0]), (128, worst[1])),)
    # the cut draw replays the failing element itself, from its text as from its dict
    args = draw_arguments(result.config, str(final))
    (name,) = [k for k, v in args.items() if isinstance(v, tuple)]
    whole = draw_arguments(MUL, "typical:0")[name][0]
    assert args[name][0].reshape(-1)[0] == whole[worst]
    assert probe(result.config, Draw.parse(str(final))).failure == result.final.failure
    assert "float16" in repro_script(result.config, final)


def test_draw_texts_without_a_cut_stay_valid():
    assert Draw.parse("edge:0@2") == Draw("edge", 0, 2) and Draw.parse("typical:3").cut is None
    cut = Draw.parse("edge:0@2/64+5,128+28;128+28")
    assert cut.cut == (((64, 5), (128, 28)), ((128, 28),)) and str(cut) == "edge:0@2/64+5,128+28;128+28"
    assert Draw.parse(cut.to_dict()) == cut
    with pytest.raises(ValueError):
        Draw.parse("edge:0@2/64")


# ---------------------------------------------------------------- stale known failures


def verdicts_of(*configs):
    out = []
    for config in configs:
        verdict = run_config(config)
        out.append({"config": config, "status": verdict.status, "direction": verdict.direction,
                    "paddle_version": __import__("paddle").__version__})
    return out


def test_a_known_failure_that_does_not_reproduce_is_stale_and_one_that_does_is_not():
    verdicts = verdicts_of('apitester_diag.known_stale(Tensor([4],"float32"), )',
                           'apitester_diag.known_stale(Tensor([2, 3],"float32"), )',
                           'apitester_diag.known_still(Tensor([4],"float32"), )')
    assert [v["status"] for v in verdicts] == ["pass", "pass", "accuracy_error"]
    stale = stale_known_failures(verdicts)
    # the float16 entry had nothing in scope (neither stale nor reproduced); known_still reproduces
    assert [(s["api"], s["known"]["status"], s["in_scope"], s["statuses"]) for s in stale] == [
        ("apitester_diag.known_stale", "accuracy_error", 2, {"pass": 2})]
    # a crash says nothing: out of scope
    assert stale_known_failures([{**verdicts[0], "status": "crash"}]) == []


def test_coverage_prints_a_stale_line_before_its_totals(tmp_path):
    from tests.engine_helpers.cli import run

    configs = tmp_path / "configs.txt"
    configs.write_text('apitester_diag.known_stale(Tensor([4],"float32"), )\n'
                       'apitester_diag.known_still(Tensor([4],"float32"), )\n')
    proc = run("coverage", str(configs), "--workers=1", "--quiet",
               extra_env={"APITESTER_EXTRA_SPECS": "tests.engine.diagnosis_test_specs"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    stale = [line for line in lines if line.startswith("STALE ")]
    assert len(stale) == 1 and stale[0].startswith("STALE apitester_diag.known_stale: known accuracy_error forward "
                                                   "(dtypes float32) on Paddle ")
    assert stale[0].endswith(": 1 configs in scope, none gives it: pass=1")
    assert lines.index(stale[0]) < len(lines) - 2 and lines[-1].startswith("TOTAL configs=2 verdict=2")
