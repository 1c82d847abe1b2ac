"""Issue #44 item 2: a reference counts only where it is certain of itself -- its value, rounded to float64, the
same at 40 and at 80 digits -- and a singularity or a rank is decided exactly, never by a 40-digit SVD's
smallest singular value against zero.  Constructed cases of known answer; real paddle and torch."""
import math

import mpmath
import numpy as np
import pytest

from diagnosis_helpers import EXTRA  # noqa: F401  (the apitester_diag.* specs and their register())
from diagnosis_test_specs import register
from apitester import references as refs
from apitester.inputs import Draw, InputTensor
from apitester.diagnosis.oracle import oracle_for
from apitester.diagnosis.shrink import draw_inputs, prepare_strict
from apitester.references import mp_apply
from apitester.specs.base import Spec
from apitester.specs.linalg import _ref_cond, _ref_norm, _ref_pinv
from apitester.vocab import NoOracle, Reading, ReadingSource

TYPICAL = Draw("typical", 0)
# Row 3 is twice row 1: exactly singular (float64 integers are exact), so the true cond is +inf.  Paddle 3.3.1
# returns inf here, Torch 1.05e16; a 40-digit SVD gives a smallest singular value of ~1e-41 (cond 1.36e41), which
# read Paddle's exact inf as paddle_off.
SINGULAR = np.array([[-1.0, -2.0, 3.0], [3.0, 0.0, 2.0], [-2.0, -4.0, 6.0]])
COND = 'paddle.linalg.cond(Tensor([3, 3],"float64"), )'


def _tanh_cancelled(v):
    """tanh(v) through 1e45: at 40 digits the sum keeps nothing below 1e5 (0 comes back), at 80 it keeps tanh."""
    return (mpmath.tanh(v) + mpmath.mpf(10) ** 45) - mpmath.mpf(10) ** 45


def _ref_uncertain(x, **_):
    return mp_apply(_tanh_cancelled, x)


def _ref_uncertain_near_zero(x, **_):
    return mp_apply(lambda v: mpmath.tanh(v) if abs(v) >= 1e-3 else _tanh_cancelled(v), x)


def _paddle_tanh_off(x):
    import paddle

    return paddle.tanh(x) * 1.05


def _torch_tanh(x, **_):
    import torch

    return torch.tanh(x)


register(
    Spec(api="apitester_diag.ref_uncertain", paddle=_paddle_tanh_off, torch=_torch_tanh, ref=_ref_uncertain,
         signature=lambda x: None, backward=False,
         note="test-only: Paddle 5% off tanh (the float64 pair disputes); the ref cancels 1e45 at 40 digits"),
    Spec(api="apitester_diag.ref_uncertain_near_zero", paddle=_paddle_tanh_off, torch=_torch_tanh,
         ref=_ref_uncertain_near_zero, signature=lambda x: None, backward=False,
         note="test-only: as ref_uncertain, the ref uncertain where |x| < 1e-3 only"),
)


def _readings(config: str, **arrays) -> list[dict]:
    prepared = prepare_strict(config)
    materialised = draw_inputs(prepared, TYPICAL)
    for name, array in arrays.items():
        materialised[name] = InputTensor(array, materialised[name].dtype)
    found = oracle_for(prepared, materialised, TYPICAL, grads=False)
    assert found.no_oracle is None, found
    return [r.to_dict() for r in found.readings]  # the JSON a diagnosis prints


def test_the_cond_of_an_exactly_singular_matrix_is_inf_and_torch_is_the_side_off():
    import paddle
    import torch

    # the real behaviour the case stands on: Paddle exact (inf), Torch finite
    assert math.isinf(paddle.linalg.cond(paddle.to_tensor(SINGULAR)).item())
    assert math.isfinite(torch.linalg.cond(torch.tensor(SINGULAR)).item())
    assert refs.exact_rank(SINGULAR) == 2 and float(_ref_cond(SINGULAR)) == math.inf
    (got,) = _readings(COND, x=SINGULAR)
    assert got["reading"] == Reading.TORCH_OFF, got
    assert got["oracle"] == ReadingSource.REFERENCE and "paddle.linalg.cond" in got["evidence"]
    assert got["paddle"]["max_abs"] == 0.0 and "torch" in got["nonfinite"]
    assert got["reference_check"] == {"digits": [40, 80], "uncertain": 0}  # +inf at both precisions


def test_the_other_singular_value_references_see_the_exact_zero():
    assert float(_ref_norm(SINGULAR, p=-2, axis=[0, 1])) == 0.0  # the smallest singular value, not 1e-41
    assert float(_ref_cond(SINGULAR, p=-2)) == 0.0 and float(_ref_cond(SINGULAR, p=1)) == math.inf
    # rcond=0 cuts nothing: the exact zero is still never inverted (1 / 1e-41 was 1e41 in the pseudo-inverse)
    np.testing.assert_allclose(_ref_pinv(SINGULAR, rcond=0.0), np.linalg.pinv(SINGULAR), atol=1e-12)


def test_a_nonsingular_matrix_keeps_its_finite_cond():
    regular = SINGULAR.copy()
    regular[2, 2] = 7.0  # det = -2 * ... != 0: full rank, decided exactly
    assert refs.exact_rank(regular) == 3
    assert float(_ref_cond(regular)) == pytest.approx(np.linalg.cond(regular), rel=1e-9)


def test_a_reference_whose_two_precisions_disagree_names_no_side():
    (got,) = _readings('apitester_diag.ref_uncertain(Tensor([16],"float32"), )')
    assert (got["reading"], got["no_oracle"]) == (Reading.NO_ORACLE, NoOracle.REFERENCE_UNCERTAIN), got
    assert got["reference_check"] == {"digits": [40, 80], "uncertain": 16}
    assert "16 of 16 elements differ at 40 and 80 digits" in got["reason"]


def test_uncertain_elements_that_do_not_decide_the_reading_leave_it_standing():
    x = np.linspace(-0.9, 0.9, 16).astype(np.float32)
    x[[3, 11]] = [-1e-4, 1e-4]  # the ref is uncertain on these two: tanh is ~1e-4 there, Paddle's 5 % is ~0.03
    (got,) = _readings('apitester_diag.ref_uncertain_near_zero(Tensor([16],"float32"), )', x=x)
    assert got["reading"] == Reading.PADDLE_OFF, got  # and on the 14 certain elements alone
    assert got["reference_check"] == {"digits": [40, 80], "uncertain": 2}
    assert "the reading is the same without them" in got["reason"]


def test_uncertain_elements_that_decide_the_reading_name_no_side():
    x = np.linspace(-0.9, 0.9, 16).astype(np.float32)  # uncertain on the 8 negatives: 0 at 40 digits there
    x[x < 0] = -1e-4
    x[x >= 0] = 0.5
    (got,) = _readings('apitester_diag.ref_uncertain_near_zero(Tensor([16],"float32"), )', x=x)
    assert got["reading"] == Reading.PADDLE_OFF, got  # the certain half alone reads the same
    x[x > 0] = 1e-4  # now every element is uncertain
    (got,) = _readings('apitester_diag.ref_uncertain_near_zero(Tensor([16],"float32"), )', x=x)
    assert (got["reading"], got["no_oracle"]) == (Reading.NO_ORACLE, NoOracle.REFERENCE_UNCERTAIN), got


def test_every_ref_helper_honours_the_precision_context():
    x = np.array([0.5])
    assert mp_apply(_tanh_cancelled, x)[0] == 0.0  # at the references' 40 digits
    with refs.precision(refs.CHECK_DPS):
        assert refs.DPS == refs.MP_DIGITS == 80
        assert mp_apply(_tanh_cancelled, x)[0] == math.tanh(0.5)
    assert refs.DPS == refs.MP_DIGITS == 40  # restored


@pytest.mark.parametrize("matrix, rank", [
    ([[1.0, 2.0], [2.0, 4.0]], 1),
    ([[0.1, 0.2], [0.3, 0.6]], 1),  # doubling is exact in binary: rank 1
    ([[0.1, 0.3], [0.3, 0.9]], 2),  # 0.1 * 0.9 != 0.3 * 0.3 as float64 rationals: full rank (numpy's tolerance says 1)
    ([[0.0, 0.0], [0.0, 0.0]], 0),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], 2),
    ([[1e-300, 0.0], [0.0, 1e300]], 2),
])
def test_the_rank_of_a_float64_matrix_is_decided_exactly(matrix, rank):
    assert refs.exact_rank(np.array(matrix)) == rank
