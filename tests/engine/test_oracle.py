"""The float64 oracle's readings on constructed cases with known answers, and one real config checked
against a float64 value computed independently with numpy.  Real paddle and torch, no mocks."""
import numpy as np
import pytest

from diagnosis_helpers import MUL_FP16
from apitester.diagnosis.diagnose import diagnose_config
from apitester.inputs import Draw
from apitester.diagnosis.measuring import K, read_errors
from apitester.diagnosis.repro import draw_arguments
from apitester.diagnosis.shrink import probe
from apitester.vocab import NoOracle, Reading

TYPICAL = Draw("typical", 0)


def reading(config: str) -> dict:
    return probe(config, TYPICAL).reading.to_dict()  # the JSON a diagnosis prints


@pytest.mark.parametrize("api, expected", [
    ("apitester_diag.paddle_off", Reading.PADDLE_OFF),
    ("apitester_diag.torch_off", Reading.TORCH_OFF),
    ("apitester_diag.both_off", Reading.BOTH_OFF),
])
def test_a_side_made_off_by_hand_is_read_as_that_side(api, expected):
    got = reading(f'{api}(Tensor([16],"float32"), )')
    assert got["reading"] == expected, got
    off, exact = {"paddle_off": ("paddle", "torch"), "torch_off": ("torch", "paddle")}.get(expected, (None, None))
    if off:
        # the 5% error is the side's own; the other side is within float32 rounding of tanh
        assert got[off]["max_rel"] == pytest.approx(0.05, rel=1e-3)
        assert got[exact]["max_rel"] < 1e-6


def test_a_strict_failure_read_torch_off_implies_torch_suspect_with_both_sides_numbers():
    suspect = diagnose_config('apitester_diag.torch_off(Tensor([16],"float32"), )')
    assert suspect["diagnosed"] and suspect["verdict"]["strict_status"] == "accuracy_error"
    implied = suspect["implied_verdict"]
    assert implied["status"] == "torch_suspect" and implied["output"] == suspect["reading"]["output"]
    assert implied["torch"]["max_rel"] == pytest.approx(0.05, rel=1e-3) and implied["paddle"]["max_rel"] < 1e-6
    assert implied["torch"]["rmse"] > K * implied["paddle"]["rmse"]
    assert "Torch max_abs" in implied["evidence"] and "Paddle max_abs" in implied["evidence"], implied["evidence"]
    # Paddle the side off, or no oracle: the verdict stays what the strict layer says
    assert diagnose_config('apitester_diag.paddle_off(Tensor([16],"float32"), )')["implied_verdict"] is None
    assert diagnose_config('apitester_diag.int_off(Tensor([6],"int32"), )')["implied_verdict"] is None


def test_an_error_under_one_rounding_unit_at_the_outputs_scale_is_within_rounding():
    config = 'apitester_diag.within_rounding(Tensor([16],"float16"), )'
    found = probe(config, TYPICAL)
    assert found.verdict.status == "accuracy_error"  # the strict layer fails at 0.3: 0.5 vs 0.2998
    assert found.reading.reading == Reading.WITHIN_ROUNDING, found.reading
    assert found.reading.paddle.max_abs == pytest.approx(0.5 - float(np.float16(0.3)))
    assert found.reading.paddle.rmse < found.reading.noise_floor


def test_integer_outputs_have_no_oracle():
    got = reading('apitester_diag.int_off(Tensor([6],"int32"), )')
    assert (got["reading"], got["no_oracle"]) == (Reading.NO_ORACLE, NoOracle.EXACT_DTYPE)


def test_integer_inputs_cast_to_float16_are_read_against_the_reference():
    """Integer inputs used to end the oracle ("computed exactly, no rounding"); a float16 output of them rounds, and a
    spec's reference rounds correctly: 65519 and 65510 are 65504 in float16, Paddle's side gives inf there."""
    got = reading('apitester_diag.int_to_half(Tensor([6],"int64"), )')
    assert (got["reading"], got["oracle"]) == (Reading.PADDLE_OFF, "reference")
    assert got["nonfinite"]["paddle"] == "inf where the reference is finite (2 of 6 elements)"
    assert got["torch"]["max_abs"] == 0.0


def test_a_cast_over_the_references_size_reads_too_large_and_shrinks_to_a_reading(monkeypatch):
    """Paddle 3.0.0's cast(Tensor([20, 500, 4], "int32"), float16) read cannot_upcast for good: 40,000 elements are
    over the reference's bound, and "an argument fixes the output dtype" stopped shrinking from trying a smaller
    candidate. Over the bound it reads too_large, and the diagnosis reads a candidate the reference runs on."""
    from apitester.diagnosis import reference

    monkeypatch.setattr(reference, "REF_MAX_ELEMENTS", 4)
    got = reading('apitester_diag.int_to_half(Tensor([6],"int64"), )')
    assert (got["reading"], got["no_oracle"]) == (Reading.NO_ORACLE, NoOracle.TOO_LARGE)
    assert got["reason"].startswith("the upcast run gives float16 (paddle) / float16 (torch)")
    diagnosis = diagnose_config('apitester_diag.int_to_half(Tensor([6],"int64"), )')
    assert diagnosis["shrink"]["elements_after"] <= 4
    assert (diagnosis["reading"]["reading"], diagnosis["reading"]["oracle"]) == (Reading.PADDLE_OFF, "reference")


def test_float64_configs_have_no_oracle():
    got = reading('apitester_diag.paddle_off(Tensor([6],"float64"), )')
    # paddle_off is exact at float64: the strict layer passes and nothing is read
    assert got["reading"] == Reading.NO_ORACLE


def test_a_reference_wrong_at_every_precision_is_disputed_and_the_gradient_check_names_it():
    diagnosis = diagnose_config('apitester_test.tanh_wrong_grad(Tensor([3, 2],"float32"), )')
    assert diagnosis["failure"] == {"status": "accuracy_error", "direction": "backward", "output": "grad x",
                                    "reading": "no_oracle"}
    check = diagnosis["gradient_check"]
    assert check["ran"] and check["paddle"]["matches"] is True and check["torch"]["matches"] is False
    assert check["side_off"] == "torch" and check["side_off_by_output"] == {"grad x": "torch"}
    # the float64 oracle has none (disputed); the gradient check's side is the reading (issue 34, item 6)
    reading = diagnosis["reading"]
    assert (reading["reading"], reading["oracle"]) == (Reading.TORCH_OFF, "gradient_check"), reading
    assert reading["float64_oracle"]["no_oracle"] == NoOracle.DISPUTED
    # read on the reported [3, 2] config itself (issue 44), not on the [1, 1] repro it shrinks to
    assert reading["describes"] == "reported" and diagnosis["shrink"]["elements_after"] == 1
    assert "Torch's gradient misses" in reading["evidence"] and "Paddle's matches at 6 of 6" in reading["evidence"]
    implied = diagnosis["implied_verdict"]
    assert implied["status"] == "torch_suspect" and implied["source"] == "gradient_check"
    assert implied["evidence"] == reading["evidence"]


def test_the_reading_rule_k_and_floor():
    assert read_errors(K * 1.01, 1.0, 0.1) == Reading.PADDLE_OFF
    assert read_errors(K * 0.99, 1.0, 0.1) == Reading.BOTH_OFF
    assert read_errors(1.0, K * 1.01, 0.1) == Reading.TORCH_OFF
    assert read_errors(0.05, 0.0, 0.1) == Reading.WITHIN_ROUNDING  # 'infinitely' many times, under the floor
    assert read_errors(float("inf"), 0.0, 0.1) == Reading.PADDLE_OFF


def test_float16_mul_by_1e6_paddle_is_off_against_numpy_float64():
    import paddle
    import torch

    x = draw_arguments(MUL_FP16, "typical:0")["x"][0]
    exact = (x.astype(np.float64) * 1e6).astype(np.float16)  # numpy: the correctly rounded float16 product
    paddle_out = paddle.Tensor.__mul__(paddle.to_tensor(x), 1000000.0).numpy()
    torch_out = (torch.from_numpy(x) * 1000000.0).numpy()
    finite = np.isfinite(exact)
    assert finite.any() and (~finite).any()
    assert np.array_equal(torch_out, exact)                 # Torch: correctly rounded everywhere
    assert np.isinf(paddle_out[finite]).any()               # Paddle: inf where the product is finite
    got = diagnose_config(MUL_FP16)
    assert got["reading"]["reading"] == Reading.PADDLE_OFF
    assert got["reading"]["torch"]["rmse"] == 0.0 and got["reading"]["paddle"]["rmse"] == "inf"
