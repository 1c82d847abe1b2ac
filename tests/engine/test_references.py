"""The specs' independent references (Spec.ref, apitester/references.py) and how the oracle uses them.

The registry test runs every reference beside both frameworks on typical inputs (the shortest small
report configs of the API, else the written ones below): where Paddle and Torch agree at float64 the
reference must agree with both.  The constructed cases have known answers: a side wrong at every
precision (the float64 pair disputes) overruled by the reference, a float64 config settled by mpmath,
a NaN where the reference is finite and a finite value where it is NaN, the size bound, a reference
that does not cover its arguments.  Real paddle and torch, no mocks."""
import math

import mpmath
import numpy as np
import pytest

from diagnosis_helpers import EXTRA  # noqa: F401  (registers the apitester_diag.* specs)
from apitester.diagnosis import measuring, reference, reference_gradients
from apitester import references as refs
from apitester.engine.compare import Verdict
from apitester.config import ConfigSyntaxError, parse_config
from apitester.diagnosis.diagnose import diagnose_config
from apitester.inputs import Draw
from apitester.diagnosis.oracle import oracle_for
from apitester.diagnosis.records import DrawReadings, Errors, ImpliedVerdict, OutputReading, ReferenceCheck
from apitester.diagnosis.reference import check_reference
from apitester.diagnosis.shrink import draw_inputs, prepare_strict
from apitester.specs import engine_specs
from apitester.vocab import NoOracle, Reading, ReadingSource

from tests.engine_helpers.report_configs import _lines

TYPICAL = Draw("typical", 0)
MAX_ELEMENTS = 4096  # report configs above this are left out: the references run in mpmath / rationals
REPORT_SAMPLES = 1
# Typical configs for references whose API has no small float report config (or whose report configs
# exercise other arguments): one line each, the arguments the reference is written for.
WRITTEN = {
    "paddle.concat": ['paddle.concat([Tensor([2, 3],"float32"), Tensor([4, 3],"float32")], axis=0, )'],
    "paddle.combinations": ['paddle.combinations(Tensor([5],"float32"), 2, )'],
    "paddle.copysign": ['paddle.copysign(Tensor([4, 3],"float32"), Tensor([4, 3],"float32"), )'],
    "paddle.diagflat": ['paddle.diagflat(Tensor([4],"float32"), 1, )'],
    "paddle.floor": ['paddle.floor(Tensor([4, 3],"float32"), )'],
    "paddle.frexp": ['paddle.frexp(Tensor([4, 3],"float32"), )'],
    "paddle.gammaln": ['paddle.gammaln(Tensor([4, 3],"float32"), )'],
    "paddle.minimum": ['paddle.minimum(Tensor([4, 3],"float32"), Tensor([4, 3],"float32"), )'],
    "paddle.pow": ['paddle.pow(Tensor([4, 3],"float32"), 2.5, )'],
    "paddle.reciprocal": ['paddle.reciprocal(Tensor([4, 3],"float64"), )'],
    "paddle.rsqrt": ['paddle.rsqrt(Tensor([4, 3],"float32"), )'],
    "paddle.Tensor.tile": ['paddle.Tensor.tile(Tensor([2, 3],"float32"), [2, 1], )'],
    "paddle.sort": ['paddle.sort(Tensor([4, 5],"float32"), axis=0, descending=True, )'],
    "paddle.argsort": ['paddle.argsort(Tensor([4, 5],"float32"), axis=1, descending=True, )'],
    "paddle.Tensor.median": ['paddle.Tensor.median(Tensor([4, 5],"float32"), axis=1, )',
                             'paddle.Tensor.median(Tensor([4, 5],"float32"), axis=0, mode="min", )'],
    "paddle.cummax": ['paddle.cummax(Tensor([4, 5],"float32"), axis=1, )'],
    "paddle.cummin": ['paddle.cummin(Tensor([4, 5],"float32"), )'],
    "paddle.cumsum": ['paddle.cumsum(Tensor([4, 5],"float32"), axis=1, )'],
    "paddle.cumprod": ['paddle.cumprod(Tensor([4, 5],"float32"), dim=1, )'],
    "paddle.prod": ['paddle.prod(Tensor([4, 5],"float32"), axis=1, )'],
    "paddle.all": ['paddle.all(Tensor([4, 5],"float32"), axis=1, )'],
    "paddle.any": ['paddle.any(Tensor([4, 5],"float32"), axis=1, )'],
    "paddle.std": ['paddle.std(Tensor([4, 5],"float32"), axis=1, )'],
    "paddle.var": ['paddle.var(Tensor([4, 5],"float64"), )'],
    "paddle.Tensor.mean": ['paddle.Tensor.mean(Tensor([4, 5],"float32"), axis=1, keepdim=True, )'],
    "paddle.sum": ['paddle.sum(Tensor([4, 5],"float16"), axis=[0, 1], )'],
    "paddle.unique": ['paddle.unique(Tensor([12],"int64"), return_index=True, return_counts=True, )'],
    "paddle.linalg.eigvals": ['paddle.linalg.eigvals(Tensor([5, 5],"float32"), )'],
    "paddle.linalg.cond": ['paddle.linalg.cond(Tensor([4, 4],"float64"), p="fro", )',
                           'paddle.linalg.cond(Tensor([3, 4, 4],"float32"), )'],
    "paddle.linalg.norm": ['paddle.linalg.norm(Tensor([4, 4],"float32"), p="nuc", axis=[0, 1], )',
                           'paddle.linalg.norm(Tensor([4, 5],"float32"), p=3, axis=1, )'],
    "paddle.linalg.eigvalsh": ['paddle.linalg.eigvalsh(Tensor([5, 5],"float64"), UPLO="U", )'],
    "paddle.linalg.lstsq": ['paddle.linalg.lstsq(Tensor([6, 3],"float64"), Tensor([6, 2],"float64"), )'],
    "paddle.signal.istft": [
        'paddle.signal.istft(Tensor([9, 6],"complex128"), 16, None, None, Tensor([16],"float64"), True, False, '
        'True, None, False, )',
        'paddle.signal.istft(Tensor([65, 5],"complex64"), 128, 32, None, Tensor([128],"float32"), True, False, '
        'True, None, False, )'],
}


def _elements(line: str) -> int:
    try:
        return sum(t.numel for t in parse_config(line).tensors())
    except ConfigSyntaxError:
        return MAX_ELEMENTS + 1


def _configs(spec) -> list[str]:
    lines = {line for lane in ("cpu", "gpu") for line in _lines(lane)
             if any(line.startswith(name + "(") for name in spec.names)}
    small = sorted((line for line in lines if _elements(line) <= MAX_ELEMENTS), key=lambda line: (len(line), line))
    return small[:REPORT_SAMPLES] + WRITTEN.get(spec.api, [])


# The families whose references tests/engine/test_references_nn.py checks against both frameworks.
NN_FAMILIES = {f"apitester.specs.{name}" for name in ("nn_functional", "vision", "indexing", "fused", "geometric")}


def _with_ref():
    """The references of elementwise/reductions/linalg/signal; those of the nn, vision, indexing, fused and geometric
    families (beside their specs) are checked against both frameworks in tests/engine/test_references_nn.py."""
    return {api: spec for api, spec in sorted(engine_specs().items())
            if spec.ref is not None
            and getattr(spec.ref, "__module__", "") not in NN_FAMILIES}


def test_every_reference_agrees_with_both_frameworks_where_they_agree():
    checked, disagreements, never = set(), [], []
    for api, spec in _with_ref().items():
        for config in _configs(spec):
            prepared = prepare_strict(config)
            if isinstance(prepared, Verdict):
                continue
            result = check_reference(prepared, draw_inputs(prepared, TYPICAL))
            assert ReferenceCheck.from_dict(result.to_dict()).to_dict() == result.to_dict()
            for row in result.outputs:
                if not row.frameworks_agree:
                    continue
                checked.add(api)
                if not row.ref_agrees:
                    disagreements.append(f"{config} output {row.output}: gap {row.gap}")
        if api not in checked:
            never.append(api)
    assert disagreements == [], "references that miss what both frameworks compute:\n" + "\n".join(disagreements)
    # every reference is exercised: an API with no small report config gets a WRITTEN config above
    assert never == [], f"references never checked (give a WRITTEN config): {never}"
    assert len(checked) >= 60, sorted(checked)


# ---------------------------------------------------------------- constructed cases of known answer


def _readings(config: str, draw: Draw = TYPICAL) -> list[dict]:
    prepared = prepare_strict(config)
    found = oracle_for(prepared, draw_inputs(prepared, draw), draw, grads=False)
    assert found.no_oracle is None, found
    assert DrawReadings.from_dict(found.to_dict()) == found  # its JSON reads back
    return [r.to_dict() for r in found.readings]  # the JSON a diagnosis prints


@pytest.mark.parametrize("api, expected, matches", [
    ("apitester_diag.ref_paddle_off", Reading.PADDLE_OFF, {"paddle": False, "torch": True}),
    ("apitester_diag.ref_torch_off", Reading.TORCH_OFF, {"paddle": True, "torch": False}),
    ("apitester_diag.ref_neither", Reading.BOTH_OFF, {"paddle": False, "torch": False}),
])
def test_the_reference_overrules_a_disputed_float64_pair(api, expected, matches):
    (got,) = _readings(f'{api}(Tensor([16],"float32"), )')
    assert got["reading"] == expected, got
    assert got["oracle"] == ReadingSource.REFERENCE and api in got["evidence"], got
    assert got["float64_match"] == matches
    # the pair's gap, of Torch's scale: 5 % of Paddle's tanh, 5 % of Torch's 1.05 tanh, 10 % of Torch's 0.95 tanh
    scale = {Reading.PADDLE_OFF: 1.0, Reading.TORCH_OFF: 1.05, Reading.BOTH_OFF: 0.95 / 2}[expected]
    assert got["oracle_gap"] == pytest.approx(0.05 / scale, rel=1e-3)
    for side, ok in matches.items():  # the side off is off by its constructed 5 %, the other is float32 rounding
        assert got[side]["max_rel"] == (pytest.approx(0.05, rel=1e-3) if not ok else pytest.approx(0, abs=1e-6))


def test_a_strict_failure_the_reference_reads_torch_off_implies_torch_suspect_naming_the_reference():
    diagnosis = diagnose_config('apitester_diag.ref_torch_off(Tensor([16],"float32"), )', max_seconds=20)
    assert diagnosis["reading"]["reading"] == Reading.TORCH_OFF
    implied = diagnosis["implied_verdict"]
    assert implied["status"] == "torch_suspect"
    assert "independent reference" in implied["evidence"] and "apitester_diag.ref_torch_off" in implied["evidence"]
    assert diagnosis["failure"]["reading"] == Reading.TORCH_OFF  # what distinct failures group by
    # the typed reading and the verdict it implies read back from the JSON as they were written (keys, values)
    reading = OutputReading.from_dict(diagnosis["reading"])
    assert reading.oracle == ReadingSource.REFERENCE and reading.torch.rmse > reading.paddle.rmse
    assert reading.to_dict() == diagnosis["reading"]
    assert ImpliedVerdict.from_dict(implied).to_dict() == implied and implied["k"] == reading.k


def test_a_float64_config_is_settled_by_the_mpmath_reference():
    # Paddle's side is exp(x) - 1 at x ~ 1e-9: float64 cancels to ~1e-7 relative; Torch's expm1 is exact
    (got,) = _readings('apitester_diag.expm1_naive(Tensor([16],"float64"), )')
    assert got["reading"] == Reading.PADDLE_OFF and got["oracle"] == ReadingSource.REFERENCE, got
    assert got["dtype"] == "float64" and "float64_match" not in got  # no higher precision pair to compare
    assert 1e-9 < got["paddle"]["max_rel"] < 1e-5 and got["torch"]["max_rel"] <= 2.0 ** -52
    # the same value by hand: mpmath at 50 digits against numpy's exp(x) - 1
    x = draw_inputs(prepare_strict('apitester_diag.expm1_naive(Tensor([16],"float64"), )'), TYPICAL)["x"].array
    with mpmath.workdps(50):
        exact = np.array([float(mpmath.expm1(mpmath.mpf(float(v)))) for v in x])
    assert got["paddle"]["max_abs"] == pytest.approx(float(np.max(np.abs((np.exp(x) - 1.0) - exact))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_nan_where_the_reference_is_finite_is_that_sides_error(dtype):
    # sin(x)/x at x = 0: Paddle's side 0/0 = NaN, the function's value (its limit) 1
    (got,) = _readings(f'apitester_diag.sinc_naive(Tensor([16],"{dtype}"), )')
    assert got["reading"] == Reading.PADDLE_OFF and got["oracle"] == ReadingSource.REFERENCE, got
    assert got["nonfinite"] == {"paddle": "NaN where the reference is finite (4 of 16 elements)"}
    assert "NaN where the reference is finite" in got["reason"]
    assert got["paddle"]["max_abs"] == "inf" and got["torch"]["max_abs"] < 1e-6


def test_a_nan_both_float64_results_agree_on_is_overruled_where_the_reference_is_finite():
    (got,) = _readings('apitester_diag.sinc_both_naive(Tensor([16],"float32"), )')
    assert got["reading"] == Reading.BOTH_OFF and got["oracle"] == ReadingSource.REFERENCE, got
    assert got["reason"].startswith("the float64 results agree on a non-finite value where the reference differs")
    assert set(got["nonfinite"]) == {"paddle", "torch"}


def test_a_finite_value_where_the_reference_is_nan_is_that_sides_error():
    # sqrt of a negative is NaN; Torch's side gives sqrt(max(x, 0)) = 0 there
    (got,) = _readings('apitester_diag.sqrt_zero_fill(Tensor([16],"float64"), )')
    assert got["reading"] == Reading.TORCH_OFF, got
    negatives = int((draw_inputs(prepare_strict('apitester_diag.sqrt_zero_fill(Tensor([16],"float64"), )'),
                                 TYPICAL)["x"].array < 0).sum())
    assert negatives > 0
    assert got["nonfinite"] == {"torch": f"finite where the reference is NaN/inf ({negatives} of 16 elements)"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_disputed_gradient_is_settled_by_the_references_derivative(dtype):
    # Torch's side doubles tanh's gradient at every precision: the float64 gradients dispute (or, at float64,
    # there is nothing to upcast to); the derivative of the mpmath tanh says Paddle's is the true one
    config = f'apitester_diag.ref_torch_grad_off(Tensor([3, 2],"{dtype}"), )'
    prepared = prepare_strict(config)
    found = oracle_for(prepared, draw_inputs(prepared, TYPICAL), TYPICAL, grads=True)
    got = {r.output: r.to_dict() for r in found.readings}["grad x"]
    assert got["reading"] == Reading.TORCH_OFF and got["oracle"] == ReadingSource.REFERENCE, got
    assert got["gradient_match"] == {"paddle": True, "torch": False}
    assert "derivative of the independent reference" in got["evidence"]
    assert got["paddle"]["max_abs"] < 1e-8  # the true derivative 1 - tanh^2 against differences of the reference
    assert got["torch"]["max_abs"] > 0.1


def test_a_reference_derivative_past_its_time_bound_is_not_taken_and_says_so(monkeypatch):
    # The same disputed gradient as above, with no time for the derivative: the reading stays disputed and says why.
    monkeypatch.setattr(reference_gradients, "REF_GRAD_MAX_SECONDS", 0.0)
    prepared = prepare_strict('apitester_diag.ref_torch_grad_off(Tensor([3, 2],"float32"), )')
    found = oracle_for(prepared, draw_inputs(prepared, TYPICAL), TYPICAL, grads=True)
    got = {r.output: r.to_dict() for r in found.readings}["grad x"]
    assert (got["reading"], got["no_oracle"]) == (Reading.NO_ORACLE, NoOracle.DISPUTED), got
    assert "no reference derivative: over 0 s after 0 of 6 elements" in got["reason"]


def test_a_declared_gradient_convention_is_not_settled_by_the_reference():
    # clip's Tensor bounds: Paddle gives them no gradient by declaration (gradient_convention)
    prepared = prepare_strict('paddle.clip(x=Tensor([1, 3],"float64"), min=Tensor([1],"float64"), max=None, )')
    found = oracle_for(prepared, draw_inputs(prepared, TYPICAL), TYPICAL, grads=True)
    got = {r.output: r.to_dict() for r in found.readings}["grad min"]
    assert got["reading"] == Reading.NO_ORACLE and "declared gradient convention" in got["reason"], got


def test_a_reference_that_does_not_cover_the_arguments_leaves_the_reading_disputed():
    (got,) = _readings('apitester_diag.ref_not_covered(Tensor([16],"float32"), )')
    assert (got["reading"], got["no_oracle"]) == (Reading.NO_ORACLE, NoOracle.DISPUTED)
    assert "the test reference covers nothing" in got["reason"]


def test_over_the_size_bound_the_reading_is_too_large_so_shrinking_adopts_a_smaller_ones(monkeypatch):
    monkeypatch.setattr(reference, "REF_MAX_ELEMENTS", 8)
    (got,) = _readings('apitester_diag.ref_paddle_off(Tensor([16],"float32"), )')
    assert (got["reading"], got["no_oracle"]) == (Reading.NO_ORACLE, NoOracle.TOO_LARGE)
    (small,) = _readings('apitester_diag.ref_paddle_off(Tensor([8],"float32"), )')
    assert small["reading"] == Reading.PADDLE_OFF


def test_an_agreed_float64_pair_is_still_the_oracle_where_it_exists():
    # the existing path: no reference consulted, no "oracle" field added
    (got,) = _readings('apitester_diag.paddle_off(Tensor([16],"float32"), )')
    assert got["reading"] == Reading.PADDLE_OFF and "oracle" not in got


# ---------------------------------------------------------------- the helpers


def test_mp_apply_rounds_once_from_40_digits():
    x = np.array([1e-20, 1.0, np.nan, np.inf, -np.inf])
    got = refs.mp_apply(mpmath.expm1, x)
    # e - 1 = 1.71828182845904523536...: the nearer float64 is 1.7182818284590453 (libm's expm1 gives the
    # one below, 1.718281828459045, one ulp off)
    assert got[0] == 1e-20 and got[1] == 1.7182818284590453 and np.isnan(got[2]) and got[3] == np.inf
    with mpmath.workdps(60):
        exact = mpmath.e - 1
        assert abs(mpmath.mpf(got[1]) - exact) < abs(mpmath.mpf(math.nextafter(got[1], 0)) - exact)
    assert got[4] == -1.0


def test_exact_apply_sums_without_cancellation():
    a = np.array([[1e16, 1.0, -1e16]])
    assert refs.exact_apply(lambda v: v.sum(axis=1), a)[0] == 1.0  # float64 np.sum gives 0.0
    assert refs.exact_apply(np.matmul, np.array([[1e16, 1.0]]), np.array([[1.0], [1.0]]))[0, 0] == 1e16 + 2 - 2
    assert list(refs.exact_cumulative(np.array([1e16, 1.0, -1e16, 1.0]))) == [1e16, 1e16, 1.0, 2.0]
    assert refs.exact_mean(np.array([1e16, 1.0, -1e16])) == pytest.approx(1 / 3, rel=1e-16)


def test_the_noise_floor_and_rmse_of_huge_values_do_not_overflow():
    # clip of 1.5e246 at float64: squaring overflowed, the floor was inf and an inf error read within_rounding
    assert measuring.rms(np.array([1e300, -1e300])) == 1e300
    assert measuring.noise_floor(np.array([1e300, 0.0]), "float32") == pytest.approx(2.0 ** -23 * 1e300 / math.sqrt(2))
    huge = np.array([1.5e246, 0.5])
    errors = measuring.error_to_oracle(np.array([3.4e38, 0.5]), huge)
    assert errors.rmse == pytest.approx((1.5e246 - 3.4e38) / math.sqrt(2))
    # the typed reading and its JSON (apitester.diagnosis.records): an inf error is "inf" there and reads back
    inf = measuring.error_to_oracle(np.array([np.nan, 0.5]), huge)
    assert inf.to_dict()["max_abs"] == "inf" and Errors.from_dict(inf.to_dict()) == inf
    assert Errors.from_dict(errors.to_dict()) == errors
