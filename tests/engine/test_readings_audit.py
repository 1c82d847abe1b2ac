"""The readings audit (benchmarks/readings_audit.py, issue 44) on a small fixed sample of known answer: a sum, a
matmul, a logit (mpmath at two precisions), each read by the engine's own float64 oracle and audited against the
truth the audit computes outside it -- and one constructed case where the engine's reading and the truth disagree,
which the audit must report (so the audit can fail). Real paddle and torch.
"""
import numpy as np
import pytest

from apitester import inputs as inp
from apitester.diagnosis.oracle import oracle_for
from apitester.engine.trial import prepare
from benchmarks import readings_audit as audit

FIXED = [
    ('paddle.sum(Tensor([512],"float16"), )', "paddle.sum", "typical:0@2"),
    ('paddle.matmul(Tensor([8, 16],"float32"), Tensor([16, 8],"float32"), )', "paddle.matmul", "typical:1@2"),
    ('paddle.logit(x=Tensor([64],"float32"), )', "paddle.logit", "typical:0@2"),
]
ABSORBING_SUM = 'paddle.sum(Tensor([32],"float32"), )'
# 1e8 absorbs each 1.0 in float32, so the true sum 30 is lost in an order-dependent way: Paddle and Torch both end
# far from it (given inputs: --inputs), and the truth is known by hand.
ABSORBING = np.array([1e8] + [1.0] * 30 + [-1e8], dtype=np.float32)


def engine_reading(config: str, draw: inp.Draw, output: str = "output 0") -> str:
    """The engine's reading of one forward output on one draw: its float64 oracle (what `closer` reads)."""
    strict = prepare(config).strict_layer()
    oracle = oracle_for(strict, strict.inputs_of(draw), draw, grads=False)
    return next(r.reading for r in oracle.readings if r.output == output)


@pytest.mark.parametrize("config, api, draw", FIXED)
def test_the_audit_agrees_with_the_engine_on_a_fixed_sample(config, api, draw):
    item = audit.Audit(config, api, "oracle", draw, "output 0", engine_reading(config, inp.Draw.parse(draw)))
    audited = audit.audit_reading(item)
    assert audited.verdict == "agree", (audited.engine, audited.audited, audited.reason)
    assert audited.paddle_error is not None and audited.floor > 0


def test_the_truth_of_a_sum_is_exact_where_both_sides_are_far_from_it():
    assert audit.truth_sum({"x": ABSORBING}, "float32").tolist() == 30.0  # float32 summing says 0 or 16 or 24
    draw = inp.give_inputs({"x": ABSORBING}, "test")
    item = audit.audit_reading(audit.Audit(ABSORBING_SUM, "paddle.sum", "oracle", str(draw), "output 0",
                                           engine_reading(ABSORBING_SUM, draw)))
    assert item.numbers["truth"] == 30.0
    # each side's error is |its sum - 30| on the given input, read from the outputs the engine compared
    assert item.paddle_error == abs(item.numbers["paddle"] - 30.0) >= 1.0
    assert item.torch_error == abs(item.numbers["torch"] - 30.0) >= 1.0
    assert item.verdict == "agree", (item.engine, item.audited)


def test_a_reading_the_truth_contradicts_is_reported_as_a_disagreement():
    config, api, draw = FIXED[0]
    honest = audit.audit_reading(audit.Audit(config, api, "oracle", draw, "output 0", "?"))
    # a constructed engine reading naming off a side the truth finds right
    wrong = next(r for r in ("paddle_off", "torch_off") if audit.SIDES[r] - audit.SIDES[honest.audited])
    constructed = audit.audit_reading(audit.Audit(config, api, "oracle", draw, "output 0", wrong))
    assert constructed.verdict == "wrong_side" and constructed.audited == honest.audited
    text = audit.render({"audits": [constructed], "configs_run": 1, "configs_available": 1, "apis": [api],
                         "apis_without_truth": 0, "configs_without_truth": 0, "seconds": 0.0})
    assert f"WRONG_SIDE: {config} draw {draw} output 0 [oracle]: engine {wrong}, audit {honest.audited}" in text
    assert text.splitlines()[-1].endswith("0 agree (0.0 %), 0 disagree, 1 wrong side, 0 no side named, 0 not audited")
    other = "within_rounding" if honest.audited != "within_rounding" else "both_off"
    assert audit.audit_reading(audit.Audit(config, api, "oracle", draw, "output 0", other)).verdict != "agree"
    # an engine that names no side where a truth exists is listed too, never counted as agreement
    assert audit.audit_reading(audit.Audit(config, api, "oracle", draw, "output 0", "no_oracle")).verdict == "no_side"


def test_what_has_no_independent_path_is_not_audited_never_agreement():
    config, api, draw = FIXED[1]
    grad = audit.audit_reading(audit.Audit(config, api, "closer", draw, "grad x", "within_rounding"))
    other = audit.audit_reading(audit.Audit('paddle.sort(Tensor([4],"float32"), )', "paddle.sort", "closer",
                                            "typical:0@2", "output 0", "within_rounding"))
    assert (grad.verdict, other.verdict) == ("not_audited", "not_audited")
    assert "(gradient)" in grad.reason and "no independent path" in other.reason
    assert audit.summary_line([grad, other]).startswith("2 readings: 0 audited, 0 agree (n/a)")


def test_a_gradient_where_no_derivative_exists_is_left_out_not_blamed():
    """logit outside (0, 1): no derivative (issue 44's class 5). A reading that blames a side for its value there is
    a wrong side; inside the domain both float64 gradients are the exact 1/(x(1-x)) * g within rounding."""
    config = 'paddle.logit(x=Tensor([4],"float64"), )'
    draw = str(inp.give_inputs({"x": np.array([0.25, -0.5, 0.75, 1.5])}, "test"))
    item = audit.audit_reading(audit.Audit(config, "paddle.logit", "diagnosis", draw, "grad x", "torch_off"))
    assert item.reason.startswith("2 elements without a derivative left out")
    assert item.audited == "within_rounding" and item.verdict == "wrong_side"


def test_exact_rounding_is_to_nearest_even_from_the_exact_value():
    from fractions import Fraction

    one, ulp = Fraction(1), Fraction(1, 2 ** 23)
    assert audit.round_exact(one + ulp / 2, "float32") == 1.0  # a tie: to the even significand
    assert audit.round_exact(one + ulp / 2 + Fraction(1, 2 ** 80), "float32") == 1.0 + 2.0 ** -23  # past the tie
    assert audit.round_exact(Fraction(-1, 3), "float16") == float(np.float16(-1 / 3))
    assert audit.round_exact(Fraction(70000), "float16") == float("inf")


def test_the_sample_is_seeded_and_stratified_by_api():
    by_api = {"a": ["a1", "a2", "a3"], "b": ["b1"], "c": ["c1", "c2"]}
    first = list(audit.stratified(by_api, seed=3))
    assert first == list(audit.stratified(by_api, seed=3))  # seeded: the same sample again
    assert sorted(first) == sorted((api, c) for api, configs in by_api.items() for c in configs)
    assert {api for api, _ in first[:3]} == {"a", "b", "c"}  # every API once before any API twice
    assert [api for api, _ in first[3:5]] and "b" not in {api for api, _ in first[3:]}


def test_polynomial_and_ramp_gradients_are_exact():
    x, g = np.array([0.5, 2.0], np.float32), np.array([[1, 1, 1], [0.5, 0.25, 1]], np.float32)
    truth, defined = audit.grad_vander({"x": x, "n": 3, "increasing": False}, g, "x", "float32")
    assert truth.tolist() == [2.0, 2.25] and defined.all()  # columns x^2, x, 1: 2x*g0 + g1
    ramp = {"x": np.array([-2.5, 0.0, 3.0], np.float32), "slope": 0.2, "offset": 0.5}
    truth, defined = audit.grad_hardsigmoid(ramp, np.ones(3, np.float32), "x", "float32")
    assert truth.tolist() == [0.0, float(np.float32(0.2)), 0.0]  # 0.2 * 1 rounded to float32
    assert defined.tolist() == [False, True, True]  # -2.5 * 0.2 + 0.5 == 0 exactly: the kink, left out


def test_a_convention_agrees_only_where_the_elements_left_out_carry_it():
    """The engine's convention (a tie, a domain's outside) agrees with an audit that left elements without a
    derivative out and finds no side off on the rest; a convention that hides a side off on those elements does not,
    nor does a convention where the audit left nothing out."""
    assert audit.classify("convention", "within_rounding", left_out=True) == "agree"
    assert audit.classify("convention", "paddle_off", left_out=True) == "no_side"
    assert audit.classify("convention", "within_rounding", left_out=False) == "no_side"
    assert audit.classify("torch_off", "within_rounding", left_out=True) == "wrong_side"
