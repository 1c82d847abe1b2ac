"""The 2026 exact rule (#35 item 1): whether the two sides are exactly equal and how many ULPs apart, on constructed
cases of known answer, and --bitwise_alignment / --random_seed through the real CLI (real paddle and torch)."""
import json

import numpy as np
import pytest

from apitester.engine.compare import Out, Rule, Verdict, compare_outputs, exactness, merge_exactness, ulp_distance
from apitester.engine.execute import run_config
from tests.engine_helpers.cli import run


def one_ulp_up(value, dtype):
    return np.nextafter(np.array(value, dtype=dtype), np.array(np.inf, dtype=dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_neighbouring_floats_are_one_ulp_apart(dtype):
    x = np.array([1.0, -3.5, 1e-3], dtype=dtype)
    y = x.copy()
    y[1] = one_ulp_up(x[1], dtype)
    name = np.dtype(dtype).name
    assert exactness(Out(x, name), Out(y, name)) == (False, 1)
    y[2] = np.nextafter(np.nextafter(x[2], dtype(1)), dtype(1))  # two steps up
    assert exactness(Out(x, name), Out(y, name)) == (False, 2)


def test_negative_zero_equals_zero_and_ulps_cross_zero():
    zero, neg = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    assert exactness(Out(zero, "float32"), Out(neg, "float32")) == (True, 0)
    tiny = np.array([np.float32(1.4e-45)], np.float32)  # the smallest subnormal: one step above 0
    assert exactness(Out(tiny, "float32"), Out(neg, "float32")) == (False, 1)
    assert exactness(Out(tiny, "float32"), Out(-tiny, "float32")) == (False, 2)


def test_subnormals_count_one_step_each():
    a = np.array([np.finfo(np.float16).smallest_subnormal * 3], np.float16)
    b = np.array([np.finfo(np.float16).smallest_subnormal * 7], np.float16)
    assert exactness(Out(a, "float16"), Out(b, "float16")) == (False, 4)


def test_nan_matches_nan_and_a_nan_against_a_number_is_farther_than_any_two_numbers():
    nan = np.array([np.nan, 1.0], np.float32)
    other_payload = np.array([np.float32("nan"), 1.0], np.float32)
    other_payload.view(np.uint32)[0] |= 1  # a different NaN payload is still NaN
    assert exactness(Out(nan, "float32"), Out(other_payload, "float32")) == (True, 0)
    number = np.array([0.0, 1.0], np.float32)
    exact, ulp = exactness(Out(nan, "float32"), Out(number, "float32"))
    widest = ulp_distance(np.array([-np.inf], np.float32), np.array([np.inf], np.float32), "float32")
    assert exact is False and ulp == widest + 1
    inf = np.array([np.inf], np.float32)
    assert exactness(Out(inf, "float32"), Out(inf.copy(), "float32")) == (True, 0)


def test_bfloat16_counts_in_its_own_ulps():
    # bfloat16 values are held as float32; one bfloat16 step above 1.0 is 2**-7
    a = np.array([1.0], np.float32)
    b = np.array([1.0 + 2.0 ** -7], np.float32)
    assert exactness(Out(a, "bfloat16"), Out(b, "bfloat16")) == (False, 1)
    assert exactness(Out(a, "float32"), Out(b, "float32")) == (False, 2 ** 16)


def test_complex_parts_count_separately():
    a = np.array([1 + 1j], np.complex64)
    b = np.array([1 + complex(0, float(one_ulp_up(1.0, np.float32)))], np.complex64)
    assert exactness(Out(a, "complex64"), Out(b, "complex64")) == (False, 1)
    assert exactness(Out(a, "complex64"), Out(a.copy(), "complex64")) == (True, 0)


def test_integers_and_bools_are_exact_or_off_by_their_difference():
    a = np.array([1, 2, 3], np.int64)
    assert exactness(Out(a, "int64"), Out(a.copy(), "int64")) == (True, 0)
    assert exactness(Out(a, "int64"), Out(np.array([1, 2, 7]), "int64")) == (False, 4)
    t, f = np.array([True]), np.array([False])
    assert exactness(Out(t, "bool"), Out(f, "bool")) == (False, 1)


def test_different_dtypes_are_not_exact_and_have_no_ulp():
    a = np.array([1.0], np.float32)
    assert exactness(Out(a, "float32"), Out(a.astype(np.float64), "float64")) == (False, None)


def test_a_python_scalar_is_judged_by_value_not_rounded_to_the_tensor_dtype():
    tensor = Out(np.array(1.0, np.float16), "float16")
    scalar = Out(np.asarray(1.0001), None, False)  # rounds to 1.0 in float16, but it is not 1.0
    assert exactness(tensor, scalar) == (False, 1)


def test_compare_outputs_records_the_worst_pair_and_merging_keeps_the_worst():
    x = np.array([1.0, 2.0], np.float32)
    y = x.copy(); y[0] = one_ulp_up(1.0, np.float32)
    verdict = compare_outputs([Out(x, "float32"), Out(x, "float32")], [Out(x.copy(), "float32"), Out(y, "float32")],
                              1e-2, 1e-2)
    assert verdict.status == "pass" and (verdict.exact, verdict.max_ulp) == (False, 1)
    assert verdict.rule == Rule.WITHIN_TOLERANCE
    exact = compare_outputs([Out(x, "float32")], [Out(x.copy(), "float32")], 1e-2, 1e-2)
    assert (exact.exact, exact.max_ulp, exact.rule) == (True, 0, Rule.EXACT)
    bad = compare_outputs([Out(x, "float32")], [Out(x * 2, "float32")], 1e-2, 1e-2)
    assert bad.status == "accuracy_error" and bad.exact is False and bad.rule == Rule.FAILS
    assert merge_exactness((True, 0), (False, 7)) == (False, 7)
    assert merge_exactness((None, None), (True, 0)) == (True, 0)
    assert merge_exactness((False, None), (False, 3)) == (False, None)


def test_verdict_json_carries_exact_max_ulp_and_rule_of_the_strict_layer():
    adapted = Verdict("documented_difference", exact=False, max_ulp=12,
                      strict={"status": "accuracy_error", "exact": False, "max_ulp": 12})
    data = adapted.to_dict()
    assert (data["exact"], data["max_ulp"], data["rule"]) == (False, 12, "fails")
    error = Verdict("unsupported").to_dict()
    assert (error["exact"], error["max_ulp"], error["rule"]) == (None, None, None)
    assert Verdict.from_dict(json.loads(json.dumps(data))).rule == Rule.FAILS


# An output that passes 1e-2 without being exact on Paddle 3.3.1: float16 bilinear interpolate (#35).
INTERP_F16 = 'paddle.nn.functional.interpolate(x=Tensor([2, 3, 16, 16],"float16"), size=[31, 29], mode="bilinear", )'
ADD_F32 = 'paddle.add(Tensor([3, 4],"float32"), Tensor([3, 4],"float32"), )'


def test_bitwise_judges_with_zero_tolerance_whatever_the_spec():
    loose = run_config(INTERP_F16)
    assert loose.status == "pass" and loose.rule == Rule.WITHIN_TOLERANCE and loose.max_ulp > 0
    exact = run_config(INTERP_F16, bitwise=True)
    assert exact.status == "accuracy_error" and (exact.atol, exact.rtol) == (0.0, 0.0)
    assert exact.rule == Rule.FAILS and exact.max_ulp > 0


def test_engine_py_flags_bitwise_alignment_and_random_seed_are_applied(tmp_path):
    configs = tmp_path / "configs.txt"
    configs.write_text(f"{INTERP_F16}\n{ADD_F32}\n")
    proc = run(f"--api_config_file={configs}", "--json", "--bitwise_alignment=True", "--random_seed=5")
    assert proc.returncode == 1 and "ignoring" not in proc.stderr, proc.stderr
    interp, add = (json.loads(line) for line in proc.stdout.splitlines())
    assert interp["status"] == "accuracy_error" and (interp["atol"], interp["rtol"]) == (0, 0)
    assert add["status"] == "pass" and add["rule"] == "exact" and add["draws"][0] == "typical:5@2"
