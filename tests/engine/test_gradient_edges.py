"""The float64 gradient check at edges (issue 34, item 3) and the reading it gives (item 6): constructed cases of
known answer, on real paddle and torch (and, for the numeric rule itself, on plain float64 functions).

- a clamp narrower than the step: cosine_similarity's eps clamp at an all-zero x2 column (the board's config);
- kinks where both frameworks' conventions agree (relu, abs at exactly 0, clip at its bounds): no side named;
- a NaN gradient where the one-sided derivatives are finite (sin(x)/x at 0 differentiated naively): that side is off;
- the diagnosis JSON's reading, its implied verdict and the distinct failures it groups into."""
import json
import math

import numpy as np
import pytest

import diagnosis_helpers  # noqa: F401  (this directory on sys.path)
from apitester.diagnosis.diagnose import diagnose_config, group_failures
from apitester.inputs import Draw
from apitester.diagnosis.gradients import (GRAD_STEP, MATCH, MISS, UNRESOLVED, element_derivative, gradient_check,
                                           judge)
from apitester.diagnosis.sides import input_tensors
from apitester.diagnosis.shrink import draw_inputs, prepare_strict
from apitester.vocab import NoOracle, Reading, Side

import gradient_edge_specs  # noqa: F401,E402  (registers the apitester_diag.* gradient specs)

TYPICAL = Draw("typical", 0)
COSINE = ('paddle.nn.functional.cosine_similarity(Tensor([5, 1, 3],"float64"), Tensor([1, 3],"float64"), '
          'axis=0, eps=1e-08, )')


def checked(config: str, values=None) -> dict:
    """The gradient check of ``config`` on its typical draw, its first input set to ``values`` when given."""
    prepared = prepare_strict(config)
    materialised = draw_inputs(prepared, TYPICAL)
    if values is not None:
        input_tensors(materialised)[0].array[...] = values
    return gradient_check(prepared, materialised, TYPICAL).to_dict()  # as the diagnosis' JSON says it


# ---------------------------------------------------------------- the numeric rule on functions of known derivative


def derivative(f, x):
    return element_derivative(f, x, f(x))


def test_a_clamp_narrower_than_the_step_is_refined_until_the_clamped_slope_shows():
    eps = 1e-9  # x / max(|x|, eps): slope 1/eps inside the clamp, flat (+-1) outside it
    f = lambda x: x / max(abs(x), eps)  # noqa: E731
    central_at_base = (f(GRAD_STEP) - f(-GRAD_STEP)) / (2 * GRAD_STEP)
    assert central_at_base == pytest.approx(1e6)  # the fixed-step central difference: 1000x off
    d = derivative(f, 0.0)
    assert d.central == pytest.approx(1 / eps, rel=1e-9) and not d.kink
    assert judge(1 / eps, d) == MATCH and judge(1e6, d) == MISS


def test_the_step_is_scaled_to_the_magnitude_and_richardson_extrapolated():
    x = 1e10  # float64's spacing at 1e10 is 1.9e-6: a fixed step of 1e-6 moves x by 0 or by 2 ulps
    assert (x + 1e-6) - x != 1e-6
    d = derivative(lambda v: v * v, x)
    assert d.central == pytest.approx(2 * x, rel=1e-12)
    d = derivative(math.sin, 1.0)
    assert abs(d.central - math.cos(1.0)) < 1e-9  # gradcheck's one central difference is good to ~1e-11 here too,
    assert abs(d.forward.value - math.cos(1.0)) < 1e-9  # but a one-sided one only to ~4e-7 without Richardson


def test_a_kink_is_read_from_both_sides_and_any_subgradient_matches():
    d = derivative(lambda x: max(x, 0.0), 0.0)  # relu: 0 from below, 1 from above; the central difference reads 0.5
    assert d.kink and (d.forward.value, d.backward.value) == (pytest.approx(1.0), pytest.approx(0.0))
    assert [judge(g, d) for g in (0.0, 1.0, 0.5, 1.5, -0.5)] == [MATCH, MATCH, MATCH, MISS, MISS]


def test_a_domain_boundary_and_a_vertical_tangent():
    d = derivative(lambda x: math.sqrt(x) if x >= 0 else math.nan, 0.0)
    assert d.backward.state == "outside" and (d.forward.state, d.forward.sign) == ("unbounded", 1)
    assert [judge(g, d) for g in (math.inf, -math.inf, 0.5, math.nan)] == [MATCH, UNRESOLVED, UNRESOLVED, UNRESOLVED]
    d = derivative(lambda x: x ** 1.5 if x >= 0 else math.nan, 0.0)  # one side only, finite there
    assert abs(d.forward.value) < 1e-4 and d.forward.spread < 1e-4
    assert [judge(g, d) for g in (0.0, 1e-3, 1.0, math.nan, math.inf)] == [MATCH, MISS, MISS, MISS, MISS]


def test_a_spent_budget_leaves_the_element_unresolved_never_judged():
    from apitester.diagnosis.gradients import _Budget

    d = element_derivative(math.sin, 1.0, math.sin(1.0), _Budget(forwards=0))
    assert (d.forward.state, d.backward.state, d.central) == (UNRESOLVED, UNRESOLVED, None)
    assert [judge(g, d) for g in (math.cos(1.0), 5.0, math.nan)] == [UNRESOLVED] * 3
    d = element_derivative(lambda x: x / max(abs(x), 1e-9), 0.0, 0.0, _Budget(forwards=8))  # level 0 and 1 only
    assert d.central is None and judge(1e9, d) == UNRESOLVED  # the clamp is not reached: no answer, not a miss


# ---------------------------------------------------------------- real paddle and torch


@pytest.mark.parametrize("config, values, kinks", [
    ('apitester_diag.relu_at_0(Tensor([5],"float64"), )', None, 1),           # 0, 1, -1.5, 2, -2.5
    ('apitester_diag.abs_at_0(Tensor([5],"float64"), )', None, 1),
    ('apitester_diag.relu_at_0(Tensor([5],"float32"), )', None, 1),
    ('paddle.clip(Tensor([5],"float64"), min=-1.0, max=1.0, )', [-1.0, 1.0, 0.5, 2.0, -3.0], 2),
])
def test_kinks_where_both_conventions_agree_name_no_side(config, values, kinks):
    check = checked(config, values)
    for side in ("paddle", "torch"):
        grad = check[side]["outputs"]["grad x"]
        assert check[side]["matches"] is True and (grad["match"], grad["miss"], grad["kinks"]) == (5, 0, kinks), grad
    assert check["side_off"] is None and check["side_off_by_output"] == {}


def test_a_vertical_tangent_both_frameworks_give_as_inf_matches():
    check = checked('apitester_diag.sqrt_at_0(Tensor([3],"float64"), )', [0.0, 1.0, 4.0])
    for side in ("paddle", "torch"):
        assert check[side]["matches"] is True and check[side]["outputs"]["grad x"]["match"] == 3
    assert check["side_off"] is None


@pytest.mark.parametrize("api, off, other", [("sinc_paddle_nan", "paddle", "torch"), ("sinc_torch_nan", "torch", "paddle")])
def test_a_nan_gradient_where_the_derivative_is_finite_is_that_sides(api, off, other):
    check = checked(f'apitester_diag.{api}(Tensor([4],"float64"), )')  # x = 0, 1, -1.5, 2
    miss = check[off]["outputs"]["grad x"]
    assert (miss["match"], miss["miss"], miss["missed_at"]) == (3, 1, [0])
    assert miss["first_miss"] == {"index": [0], "analytic": "nan", "numeric": pytest.approx(0.0, abs=1e-9)}
    assert check[other]["outputs"]["grad x"]["match"] == 4
    assert check["side_off"] == off and check["side_off_by_output"] == {"grad x": off}
    assert check["evidence"]["grad x"].startswith(f"float64 gradient check of grad x: {off.capitalize()}'s gradient misses")


def test_a_reference_derivative_judges_both_sides_when_given():
    def sinc_gradient(inputs, grad_of):  # d/dx sin(x)/x = (x cos x - sin x) / x^2, 0 at 0
        x = inputs["x"].array
        with np.errstate(all="ignore"):
            d = np.where(x == 0, 0.0, (x * np.cos(x) - np.sin(x)) / (x * x))
        return [d * grad_of[0]]

    prepared = prepare_strict('apitester_diag.sinc_paddle_nan(Tensor([4],"float64"), )')
    check = gradient_check(prepared, draw_inputs(prepared, TYPICAL), TYPICAL, reference_gradient=sinc_gradient)
    assert check.against == "reference" and check.side_off_by_output == {"grad x": Side.PADDLE}
    assert "a reference derivative" in check.evidence["grad x"]
    assert check.output(Side.PADDLE, "grad x").miss > 0 and check.output(Side.TORCH, "grad x").miss == 0


def test_a_reference_derivative_of_two_inputs_where_both_sides_agree_names_no_side():
    def maximum_gradient(inputs, grad_of):  # d max(x, y): to the larger; a tie has no derivative (NaN: not judged)
        x, y = (inputs[name].array for name in ("x", "y"))
        tie = np.where(x == y, np.nan, 0.0)
        return [(x > y) * grad_of[0] + tie, (x < y) * grad_of[0] + tie]

    prepared = prepare_strict('paddle.maximum(Tensor([3],"float64"), Tensor([3],"float64"), )')
    materialised = draw_inputs(prepared, TYPICAL)
    x, y = input_tensors(materialised)
    x.array[...], y.array[...] = [1.0, 2.0, 3.0], [3.0, 2.0, 1.0]
    check = gradient_check(prepared, materialised, TYPICAL, reference_gradient=maximum_gradient).to_dict()
    for side in ("paddle", "torch"):
        assert {label: (o["match"], o["unresolved"]) for label, o in check[side]["outputs"].items()} == \
            {"grad x": (2, 1), "grad y": (2, 1)}
    assert check["side_off"] is None


def test_a_huge_output_beside_does_not_swallow_the_change_a_step_makes():
    """clip(x, min) with x = [1e246, -5, -7]: the output [1e246, min, min]; d/dmin = g1 + g2.  Summed before
    differencing, 1e246 * g0 swallows a 1e-6 step in min (the numeric derivative read 0 and Torch's right
    gradient as off); differenced term by term it is exact.  Paddle gives a tensor min no gradient: Paddle's."""
    prepared = prepare_strict('paddle.clip(x=Tensor([1, 3],"float64"), min=Tensor([1],"float64"), max=None, )')
    materialised = draw_inputs(prepared, TYPICAL)
    x, low = input_tensors(materialised)
    x.array[...], low.array[...] = [[1e246, -5.0, -7.0]], [0.5]
    check = gradient_check(prepared, materialised, TYPICAL).to_dict()
    torch_min = check["torch"]["outputs"]["grad min"]
    assert check["torch"]["matches"] is True and torch_min["match"] == 1
    missed = check["paddle"]["outputs"]["grad min"]["first_miss"]
    assert missed["analytic"] == 0.0 and missed["numeric"] != 0.0
    assert check["side_off_by_output"] == {"grad min": "paddle"}


# ---------------------------------------------------------------- the diagnosis' reading


def test_the_boards_cosine_similarity_edge_draw_reads_paddle_off_in_the_diagnosis_json():
    """eps's clamp at the all-zero x2 column (index [0, 1]): the fixed-step central difference read both sides off
    there; refined, each side's gradient matches its own function (Paddle clamps |x1||x2|, Torch each norm). At
    [0, 2] (x1 = +-1.34e154: |x1|^2 overflows) Paddle's gradient is NaN where the derivative is 0 (cosine is
    scale-invariant in x2) and Torch's is 0: Paddle is off."""
    # what `python -m apitester diagnose CONFIG --draw edge:0@2 --json` prints (the runner's process: see
    # tests/runner/test_gradient_reading_board.py); in this process to keep the test fast
    diagnosis = json.loads(json.dumps(diagnose_config(COSINE, draw="edge:0@2")))
    assert diagnosis["verdict"]["output"] == "grad x2" and diagnosis["verdict"]["strict_status"] == "accuracy_error"
    check = diagnosis["gradient_check"]
    # The shrink cuts the failing draw down around the failing element (x1 = +-1.34e154 against x2's column 2).
    shrunk = diagnosis["shrink"]["config"]
    assert shrunk.startswith('paddle.nn.functional.cosine_similarity(Tensor([1, 1, ') and diagnosis["shrink"][
        "elements_after"] < diagnosis["shrink"]["elements_before"]
    miss = check["paddle"]["outputs"]["grad x2"]["first_miss"]
    assert miss["analytic"] == "nan" and check["paddle"]["outputs"]["grad x2"]["missed_at"] == [miss["index"][-1]]
    assert check["torch"]["matches"] is True and check["side_off"] == "paddle"
    reading = diagnosis["reading"]
    assert (reading["output"], reading["reading"], reading["oracle"]) == ("grad x2", "paddle_off", "gradient_check")
    # What the oracle said before the check: float64 config (no oracle), or the reference's derivative reading both
    # off (Torch's gradient is its own function's, which clamps each norm, not the product: a convention)
    before = reading["float64_oracle"]
    assert before.get("no_oracle") == NoOracle.FLOAT64_CONFIG or (before.get("reading"), before.get("oracle")) == (
        "both_off", "reference")
    assert f"at {miss['index']}: nan where the numeric derivative is " in reading["evidence"]
    assert math.isfinite(miss["numeric"])  # finite; Paddle's is NaN
    assert diagnosis["implied_verdict"] is None  # Paddle off: the verdict stays the strict one
    assert "| paddle_off (gradient_check) |" in diagnosis["signature"]["key"]


def test_a_torch_nan_gradient_implies_torch_suspect_and_groups_by_the_new_reading():
    torch_off = diagnose_config('apitester_diag.sinc_torch_nan(Tensor([4],"float64"), )')
    assert (torch_off["reading"]["reading"], torch_off["reading"]["oracle"]) == (Reading.TORCH_OFF, "gradient_check")
    implied = torch_off["implied_verdict"]
    assert implied["status"] == "torch_suspect" and implied["source"] == "gradient_check"
    assert implied["evidence"] == torch_off["reading"]["evidence"] and "Torch's gradient misses" in implied["evidence"]

    longer = diagnose_config('apitester_diag.sinc_torch_nan(Tensor([8],"float64"), )')
    # the same failure with the float64 oracle's old reading (no_oracle) is another distinct failure
    old = {**torch_off, "config": "old", "reading": torch_off["reading"]["float64_oracle"] | {"reading": "no_oracle"},
           "signature": None}
    groups = group_failures([torch_off, longer, old])
    assert [g["count"] for g in groups] == [2, 1]
    assert "torch_off (gradient_check)" in groups[0]["key"] and "no_oracle" in groups[1]["key"]


def test_a_gradient_the_shrunk_config_leaves_unsettled_is_read_on_the_reported_config():
    """Shrinking keeps (status, direction, output, no_oracle) and can land on a candidate where the check names no
    side: here Torch's gradient of 2x is right on the reported 8 elements and wrong (4) on one, Paddle's is always 3.
    The shrunk config leaves the gradient unsettled (both miss); the reading comes from the reported config,
    says so, and keeps what the shrunk one said; the repro stays the shrunk one."""
    diagnosis = json.loads(json.dumps(diagnose_config('apitester_diag.double_paddle_off(Tensor([8],"float64"), )')))
    assert diagnosis["shrink"]["elements_after"] < 8  # the repro is the shrunk one
    reading = diagnosis["reading"]
    assert (reading["output"], reading["reading"], reading["oracle"]) == ("grad x", "paddle_off", "gradient_check")
    assert reading["read_on"] == "reported"
    assert reading["shrunk_reading"]["no_oracle"] == NoOracle.FLOAT64_CONFIG
    assert "Paddle's gradient misses its own float64 forward's derivative at 8 of 8 elements" in reading["evidence"]
    assert "Torch's matches at 8 of 8" in reading["evidence"] and "on the reported config" in reading["evidence"]
    assert diagnosis["gradient_check"]["elements"] == 8  # the check shown is the one that named the side
    assert diagnosis["implied_verdict"] is None  # Paddle off


def test_cholesky_solves_shrink_keeps_a_valid_factor_and_the_reference_reads_torch_off():
    """The 3.3.1 report's float64 cholesky_solve: Paddle's gradient for the factor y covers only the triangle the
    function reads (the derivative elsewhere is 0), Torch's is dense.  The factor's domain reads x's shape, so a
    cut of the failing draw (which once landed on a factor with a zero on its diagonal: both gradients NaN) is not
    used once y or x shrinks (inputs.CutBreaksDomain); the shrunk config's own draw is a valid factor, and the
    reference's derivative reads Torch off."""
    config = 'paddle.linalg.cholesky_solve(x=Tensor([5, 4, 3],"float64"), y=Tensor([5, 4, 4],"float64"), )'
    diagnosis = json.loads(json.dumps(diagnose_config(config)))
    reading = diagnosis["reading"]
    # the reported config is read itself (issue 44): its 140 elements are over the reference derivative's 128, and
    # its gradient check reads Torch off there; the shrunk repro's reference reading agrees, kept as evidence
    assert (reading["output"], reading["reading"], reading["describes"]) == ("grad y", "torch_off", "reported")
    assert reading["oracle"] == "gradient_check" and "Paddle's matches at 80 of 80" in reading["evidence"]
    assert reading["evidence_readings"]["repro"] == {"reading": "torch_off", "describes": "repro", "output": "grad y",
                                                     "oracle": "reference"}
    assert diagnosis["shrink"]["elements_after"] < 140 and "cut" not in diagnosis["shrink"]["final_draw"]
    assert diagnosis["implied_verdict"]["status"] == "torch_suspect"


def test_a_hermitian_gradient_convention_is_settled_on_the_part_the_api_defines():
    """eigh / eigvalsh / pinv(hermitian=True) declare that only a gradient's Hermitian part is defined
    (Spec.gradient_part).  The reference's derivative used to stop at that declaration (no_oracle); it now
    judges both sides' Hermitian parts.  Batched float64 eigh on Paddle 3.3.1: Paddle's gradient is off even on
    its diagonal (checked by hand: for [[[0.7]], [[-1.3]]] and eigenvalue cotangents 0.5 and 2.0 Paddle returns
    0.5 for both matrices, Torch and d(lambda)/dA = 1 give 0.5 and 2.0); Torch's Hermitian part matches."""
    diagnosis = json.loads(json.dumps(diagnose_config('paddle.linalg.eigh(Tensor([2, 3, 3],"float64"), )')))
    reading = diagnosis["reading"]
    assert (reading["output"], reading["reading"], reading["oracle"]) == ("grad x", "paddle_off", "reference")
    assert reading["gradient_match"] == {"paddle": False, "torch": True}
    assert "on the gradients' Hermitian part (the declared gradient convention)" in reading["evidence"]
    assert float(reading["torch"]["rmse"]) < 1e-8 < float(reading["paddle"]["rmse"])


def test_gradients_equal_on_the_defined_part_read_as_a_gradient_convention_naming_both():
    """pinv(hermitian=True) of a 2x2 float64 matrix: the strict layer fails (Torch's plain gradient is not
    Hermitian), both Hermitian parts match the reference's derivative: a convention naming what each side
    returns outside the defined part, never a side off."""
    config = 'paddle.linalg.pinv(x=Tensor([2, 2],"float64"), hermitian=True, )'
    diagnosis = json.loads(json.dumps(diagnose_config(config)))
    assert diagnosis["verdict"]["strict_status"] == "accuracy_error"
    reading = diagnosis["reading"]
    assert reading["reading"] == "convention"
    convention = reading["convention"]
    assert {k: convention[k] for k in ("kind", "paddle", "torch", "part")} == {
        "kind": "gradient", "paddle": "the Hermitian part only", "torch": "more than the Hermitian part",
        "part": "Hermitian part"}
    assert diagnosis["implied_verdict"] is None
    assert "| convention (reference) |" in diagnosis["signature"]["key"]
    # pinv without hermitian=True reads the whole matrix: the convention does not apply there
    from apitester.specs import get_spec
    part = get_spec("paddle.linalg.pinv").gradient_part
    assert part(np.ones((2, 2)), hermitian=False) is None
    g = np.array([[1.0, 2.0], [0.0, 3.0]])
    assert part(g, hermitian=True).tolist() == [[1.0, 1.0], [1.0, 3.0]]


def test_gradients_that_differ_only_at_kinks_read_as_a_subgradient_convention():
    """|x| at an exact 0: Paddle's gradient is 0, this Torch side's +1; both lie between the one-sided derivatives
    (-1 and +1), so the strict failure is a choice of subgradient (Paddle 3.0.0's maximum gives a tie's gradient
    to one input -- the left derivative -- while Torch splits it -- their mean), read as a convention naming both
    rules, never a side off."""
    diagnosis = json.loads(json.dumps(diagnose_config('apitester_diag.abs_subgradients(Tensor([6],"float64"), )')))
    assert diagnosis["verdict"]["strict_status"] == "accuracy_error" and diagnosis["verdict"]["output"] == "grad x"
    reading = diagnosis["reading"]
    assert (reading["reading"], reading["oracle"]) == ("convention", "gradient_check")
    convention = reading["convention"]
    assert convention["kind"] == "subgradient" and convention["kinks"] >= 1
    # at 0, |x| has left derivative -1 and right +1 (times the output's gradient g): Paddle's 0 is their mean,
    # this Torch side's +g the right derivative; the key leaves the values out, so configs group by the rules
    assert (convention["paddle"], convention["torch"]) == ("the mean of the one-sided derivatives",
                                                          "the right derivative")
    assert convention["key"] == "subgradient: the mean of the one-sided derivatives vs the right derivative"
    assert convention["text"].startswith("grad x at 1 kink (a tie, a clamp bound, a domain edge): both sides give a "
                                         "subgradient (between the one-sided derivatives): Paddle the mean of the "
                                         "one-sided derivatives (0), Torch the right derivative (")
    assert reading["float64_oracle"]["no_oracle"] == NoOracle.FLOAT64_CONFIG
    assert diagnosis["implied_verdict"] is None and "| convention (gradient_check) |" in diagnosis["signature"]["key"]
    # a side whose gradient misses elsewhere is still named: the kink does not excuse it
    off = diagnose_config('apitester_diag.sinc_paddle_nan(Tensor([4],"float64"), )')
    assert off["reading"]["reading"] == Reading.PADDLE_OFF


def test_a_subgradient_choice_is_named_by_the_one_sided_derivatives():
    from apitester.diagnosis.diagnose import subgradient_choice

    kink = {"left": 0.0, "right": 0.96}
    assert subgradient_choice({**kink, "analytic": 0.0}) == ("the left derivative", " (0)")
    assert subgradient_choice({**kink, "analytic": 0.96})[0] == "the right derivative"
    assert subgradient_choice({**kink, "analytic": 0.48})[0] == "the mean of the one-sided derivatives"
    assert subgradient_choice({**kink, "analytic": 0.2}) == ("another value between them", " (0.2 between 0 and 0.96)")
    assert subgradient_choice(None) == ("a subgradient", "")
