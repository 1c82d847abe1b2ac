"""The float64 gradient check against truths of known answer (issue 44, "Derivatives" and "Shapes"), on real
paddle and torch (and, for the numeric rule itself, on plain float64 functions):

- an absorbed step (y beside 2**512 in a sum: the input moves, the forward cannot) is unresolved, never a miss,
  while a forward that does not move where the change would have shown stays a miss;
- a forward that is not finite at and around the input (logit at -0.5) has no derivative: no side is off there,
  and Paddle 0 against Torch NaN reads as the ``undefined`` convention;
- a gradient whose shape is not its input's is that side's error, not a shape convention."""
import json
import math

import numpy as np
import pytest

import diagnosis_helpers  # noqa: F401  (this directory on sys.path)
from apitester.diagnosis.conventions import convention_of, gradient_shape_reading
from apitester.diagnosis.diagnose import diagnose_config
from apitester.diagnosis.gradients import (MATCH, MISS, UNRESOLVED, absorbed, element_derivative, gradient_check,
                                           judge)
from apitester.diagnosis.sides import input_tensors
from apitester.diagnosis.shrink import draw_inputs, prepare_strict, probe
from apitester.inputs import Draw
from apitester.vocab import ConventionKind, Reading, ReadingSource, Status

import gradient_edge_specs  # noqa: F401,E402  (registers the apitester_diag.* gradient specs)
import gradient_truth_specs  # noqa: F401,E402  (registers the apitester_truth.* specs)

TYPICAL = Draw("typical", 0)
BIG = 2.0 ** 512  # the edge draw's big float64 value (inputs.big_value)


def checked(config: str, *values) -> dict:
    """The gradient check of ``config`` on its typical draw, its inputs set to ``values`` in order."""
    prepared = prepare_strict(config)
    materialised = draw_inputs(prepared, TYPICAL)
    for tensor, value in zip(input_tensors(materialised), values):
        tensor.array[...] = value
    return gradient_check(prepared, materialised, TYPICAL).to_dict()  # as the diagnosis' JSON says it


# ---------------------------------------------------------------- absorbed steps


def test_a_zero_quotient_is_an_absorbed_step_only_where_the_change_could_not_show():
    inner = lambda x: (x + 1e20) - 1e20  # noqa: E731  (an internal sum absorbs x's step: the forward reads 0)
    d = element_derivative(inner, 0.5, inner(0.5), operand=1e20)
    assert d.central == 0.0 and d.forward.still and d.backward.still
    assert absorbed(1.0, d) and judge(1.0, d) == UNRESOLVED  # the true derivative, 1: not a miss
    flat = lambda x: 0.0  # noqa: E731  (a forward that does not depend on x: a gradient of 1 is wrong)
    d = element_derivative(flat, 0.5, 0.0)
    assert not absorbed(1.0, d) and judge(1.0, d) == MISS and judge(0.0, d) == MATCH
    d = element_derivative(inner, 0.5, inner(0.5))  # no large operand said: the zero is evidence, a miss
    assert judge(1.0, d) == MISS


def test_an_input_summed_into_2_to_the_512_is_unresolved_not_a_miss_on_both_sides():
    """add(x, y) at x = [2**512, 1, 2]: y[0]'s step (1e-6) cannot move 2**512 + y[0] (its spacing is 2**460); the
    numeric derivative reads 0 where both sides' gradient (the output-gradient) is right.  x[0] itself moves."""
    check = checked('paddle.add(Tensor([3],"float64"), Tensor([3],"float64"), )', [BIG, 1.0, 2.0], [0.5, -1.5, 3.0])
    for side in ("paddle", "torch"):
        grad_y, grad_x = (check[side]["outputs"][label] for label in ("grad y", "grad x"))
        assert (grad_y[MATCH], grad_y[MISS], grad_y[UNRESOLVED], grad_y["absorbed"]) == (2, 0, 1, 1), grad_y
        assert grad_y["first_absorbed"]["index"] == [0] and "absorbed step" in grad_y["first_absorbed"]["reason"]
        assert (grad_x[MATCH], grad_x[MISS]) == (3, 0)
        assert check[side]["matches"] is True
    assert check["side_off"] is None and check["side_off_by_output"] == {}


def test_outputs_after_2_to_the_512_in_a_cumsum_absorb_their_part_and_the_rest_matches():
    """cumsum of [0.5, -1, 2, 2**512, 3]: a step on x[0] moves outputs 0-2 and not 3-4 (2**512 + ...): the numeric
    derivative is g0 + g1 + g2 where the gradient (right) is g0 + ... + g4.  The part through the outputs of
    2**512 is the side's own gradient of those outputs alone; without it the gradient matches: unresolved.  x[4]
    moves nothing at all (the whole forward still, 2**512 among the inputs): unresolved too.  x[3] itself moves."""
    check = checked('paddle.cumsum(Tensor([5],"float64"), )', [0.5, -1.0, 2.0, BIG, 3.0])
    for side in ("paddle", "torch"):
        grad = check[side]["outputs"]["grad x"]
        assert (grad[MATCH], grad[MISS], grad[UNRESOLVED], grad["absorbed"]) == (1, 0, 4, 4), grad
        assert "outputs of magnitude" in grad["first_absorbed"]["reason"]
    assert check["side_off"] is None


def test_a_wrong_gradient_beside_2_to_the_512_is_still_a_miss():
    """2x with Paddle's gradient 3 (apitester_diag.double_paddle_off): the output 2**513 is coarse, but the other
    elements do not feed it, and x[0]'s own step moves it: Paddle misses everywhere, Torch matches."""
    check = checked('apitester_diag.double_paddle_off(Tensor([4],"float64"), )', [BIG, 1.0, -2.0, 0.5])
    paddle, torch = (check[side]["outputs"]["grad x"] for side in ("paddle", "torch"))
    assert (paddle[MISS], paddle["absorbed"], torch[MATCH]) == (4, 0, 4)
    assert check["side_off"] == "paddle" and check["side_off_by_output"] == {"grad x": "paddle"}


# ---------------------------------------------------------------- undefined derivatives


def test_logit_outside_its_domain_has_no_derivative_to_miss():
    """paddle.logit / torch.logit at -0.5: NaN there and all around.  Both sides' gradients there are NaN on
    Paddle 3.3.1 (0 * NaN); the finite part's numeric derivative is 0, and each NaN used to read as a miss."""
    check = checked('paddle.logit(Tensor([3],"float64"), )', [-0.5, 0.3, 0.6])
    for side in ("paddle", "torch"):
        grad = check[side]["outputs"]["grad x"]
        assert (grad[MATCH], grad[MISS], grad["undefined"]) == (2, 0, 1), grad
        assert grad["first_undefined"] == {"index": [0], "analytic": "nan"}
    assert check["side_off"] is None


def test_a_function_defined_past_an_inf_is_still_judged_on_its_finite_part():
    """cumsum past an inf: every element before it feeds the inf, but the finite part's gradient is finite on both
    sides, so the elements are judged as before (not undefined)."""
    check = checked('paddle.cumsum(Tensor([4],"float64"), )', [1.0, 2.0, math.inf, 3.0])
    for side in ("paddle", "torch"):
        grad = check[side]["outputs"]["grad x"]
        assert grad["undefined"] == 0 and grad[MISS] == 0 and grad[MATCH] >= 2, grad


def test_paddle_zero_against_torch_nan_outside_the_domain_reads_the_undefined_convention():
    """Paddle 3.0.0's logit gradient is 0 at -0.5, Torch's NaN (10 logit configs on 3.0.0 read torch_off)."""
    diagnosis = json.loads(json.dumps(diagnose_config('apitester_truth.logit_paddle_zero(Tensor([3],"float64"), )')))
    assert diagnosis["verdict"]["output"] == "grad x"
    check = diagnosis["gradient_check"]
    assert check["paddle"]["outputs"]["grad x"]["first_undefined"]["analytic"] == 0.0
    assert check["torch"]["outputs"]["grad x"]["first_undefined"]["analytic"] == "nan"
    reading = diagnosis["reading"]
    assert reading["reading"] == Reading.CONVENTION and reading["oracle"] == ReadingSource.GRADIENT_CHECK, reading
    convention = reading["convention"]
    assert (convention["kind"], convention["paddle"], convention["torch"]) == (ConventionKind.UNDEFINED, "0", "NaN")
    assert "undefined outside the domain" in convention["text"] and convention["elements"] == 1
    assert diagnosis["implied_verdict"] is None


# ---------------------------------------------------------------- a gradient's shape


def test_a_gradient_not_shaped_as_its_input_is_that_sides_error():
    found = probe('apitester_truth.narrow_grad_paddle(Tensor([2, 5],"float64"), )', TYPICAL)
    strict = found.verdict.strict or {}
    layer = {"status": found.verdict.status, "facts": found.verdict.facts, "output": found.verdict.output}
    assert layer["status"] == Status.SHAPE_MISMATCH and layer["facts"]["input_shape"] == [2, 5], (strict, layer)
    reading = found.reading.to_dict()
    assert (reading["output"], reading["reading"], reading["oracle"]) == (
        "grad x", Reading.PADDLE_OFF, ReadingSource.INPUT_SHAPE)
    assert reading["evidence"].startswith("Paddle's grad x has shape [2, 3], its input [2, 5]")
    assert found.failure.reading == Reading.PADDLE_OFF and convention_of(layer) is None
    check = checked('apitester_truth.narrow_grad_paddle(Tensor([2, 5],"float64"), )')  # not judged element-wise
    assert check["paddle"] == {"matches": None, "error": "grad x has shape [2, 3], its input [2, 5]"}
    assert check["torch"]["matches"] is True


@pytest.mark.parametrize("shapes, reading", [
    ([[2, 5], [2, 3]], Reading.TORCH_OFF), ([[2, 3], [5, 2]], Reading.BOTH_OFF), ([[2, 5], [2, 5, 1]], Reading.TORCH_OFF),
])
def test_the_side_whose_gradient_is_not_its_inputs_shape_is_named(shapes, reading):
    layer = {"status": Status.SHAPE_MISMATCH, "output": "grad x", "facts": {"shapes": shapes, "input_shape": [2, 5]}}
    assert gradient_shape_reading(layer).reading == reading and convention_of(layer) is None


def test_a_shape_difference_of_forward_outputs_stays_a_convention():
    layer = {"status": Status.SHAPE_MISMATCH, "output": "output 0", "facts": {"shapes": [[3], [3, 1]]}}
    assert gradient_shape_reading(layer) is None and convention_of(layer).kind == ConventionKind.SHAPE


# ---------------------------------------------------------------- a parameter rounded to float32


HARDSIGMOID = 'apitester_truth.hardsigmoid_at_bound(Tensor([4],"float64"), slope={slope}, offset=0.5, )'


def test_a_slope_paddle_keeps_at_float32_moves_the_bound_and_reads_as_a_convention():
    """x = 2.5: 0.2 * 2.5 + 0.5 is exactly 1 at float64 (Torch on its bound: gradient 0.2), past 1 with Paddle's
    float32 slope 0.2000000030 (gradient 0).  Before, the float64 config read no_oracle (both match their own
    forwards; only Torch sees a kink); with Torch's slope rounded to float32 Torch gives Paddle's gradient."""
    found = probe(HARDSIGMOID.format(slope=0.2), TYPICAL)
    assert (found.verdict.status, found.verdict.output) == (Status.ACCURACY_ERROR, "grad x")
    convention = found.reading.convention.to_dict()
    assert found.reading.reading == Reading.CONVENTION and convention["kind"] == ConventionKind.PARAMETER
    assert (convention["rounds"], convention["parameters"], convention["paddle"]) == (
        "paddle", "slope=0.2", "slope rounded to float32")
    assert "Paddle computes slope=0.2 as float32 (0.200000003)" in convention["text"]


def test_a_slope_float32_holds_exactly_names_no_rounding():
    from apitester.diagnosis.conventions import rounded_parameter_convention

    prepared = prepare_strict(HARDSIGMOID.format(slope=0.25))  # 0.25 is exact at float32: both bounds at x = 2
    materialised = draw_inputs(prepared, TYPICAL)
    input_tensors(materialised)[0].array[...] = [2.0, 0.3, -1.0, 1.0]
    assert rounded_parameter_convention(prepared, materialised, TYPICAL, "grad x", "backward") is None


def test_who_is_closer_settles_a_small_unsettled_gradient_as_the_diagnosis_does():
    """`closer` (apitester.readings) of a gradient the float64 oracle leaves disputed (Paddle 0, Torch NaN where no
    derivative exists) runs the diagnosis' gradient check on inputs this small and reads the undefined convention,
    as the diagnosis does -- not no_oracle (the readings audit's 10 logit closers on 3.0.0)."""
    from apitester.readings import CLOSER_GRADCHECK_ELEMENTS, run_with_readings

    verdict = run_with_readings('apitester_truth.logit_paddle_zero(Tensor([3],"float64"), )')
    assert verdict.closer_output == "grad x" and 3 <= CLOSER_GRADCHECK_ELEMENTS
    assert verdict.closer == Reading.CONVENTION, (verdict.closer, verdict.closer_code, verdict.closer_draws)
