"""compare.py: tolerance rule, NaN/inf rules, exact ints, dtype/shape mismatch, diff map."""

import json
import math

import numpy as np
import pytest

from apitester.engine.compare import AGREE_CHUNK, Out, Verdict, compare_arrays, compare_outputs, max_pool


def f32(*values):
    return Out(np.array(values, dtype=np.float32), "float32")


def test_within_tolerance_passes_and_reports_max_diff():
    v = compare_outputs([f32(1.0, 2.0)], [f32(1.005, 2.0)], atol=1e-2, rtol=1e-2)
    assert v.status == "pass"
    assert v.max_abs == pytest.approx(0.005, rel=1e-3)


def test_allclose_rule_uses_desired_for_relative_part():
    # bound = atol + rtol*|desired|: 1.01 for desired=100, 0.02 for desired=1
    assert compare_arrays(np.array([100.5]), np.array([100.0]), 1e-2, 1e-2).ok
    assert not compare_arrays(np.array([1.5]), np.array([1.0]), 1e-2, 1e-2).ok


def test_mismatch_counts_worst_index_and_direction():
    a = np.zeros((3, 4)); b = np.zeros((3, 4)); a[2, 1] = 0.5; a[0, 0] = 0.1
    v = compare_outputs([Out(a, "float64")], [Out(b, "float64")], 1e-2, 1e-2, "backward", labels=["grad x"])
    assert v.status == "accuracy_error" and v.direction == "backward"
    assert (v.mismatched, v.total) == (2, 12)
    assert v.worst_index == (2, 1)
    assert v.max_abs == pytest.approx(0.5)
    assert "Mismatched elements: 2 / 12" in v.message
    assert "Greatest absolute difference: 0.5 at index (2, 1)" in v.message
    assert v.output == "grad x"


def test_nan_positions_must_match():
    assert compare_arrays(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), 1e-2, 1e-2).ok
    d = compare_arrays(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), 1e-2, 1e-2)
    assert not d.ok and d.mismatched == 1 and d.nonfinite_mismatched == 1
    assert d.max_abs == math.inf and d.worst_index == (0,)


def test_inf_positions_and_signs_must_match():
    assert compare_arrays(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]), 1e-2, 1e-2).ok
    sign = compare_arrays(np.array([np.inf]), np.array([-np.inf]), 1e-2, 1e-2)
    assert not sign.ok and sign.nonfinite_mismatched == 1
    finite = compare_arrays(np.array([np.inf, 2.0]), np.array([65504.0, 2.0]), 1e-2, 1e-2)
    assert not finite.ok and finite.mismatched == 1 and finite.worst_index == (0,)


def test_integers_and_bools_must_match_exactly():
    assert not compare_arrays(np.array([1000000, 5]), np.array([1000001, 5]), 1e-2, 1e-2).ok
    assert compare_arrays(np.array([1000000, 5]), np.array([1000000, 5]), 1e-2, 1e-2).ok
    d = compare_arrays(np.array([True, False]), np.array([True, True]), 1e-2, 1e-2)
    assert not d.ok and d.mismatched == 1


def test_complex_compared_on_both_parts():
    a = np.array([1 + 1j, 2 + 0j], dtype=np.complex64)
    assert compare_arrays(a, a.copy(), 1e-2, 1e-2).ok
    assert not compare_arrays(a, np.array([1 + 1.5j, 2 + 0j]), 1e-2, 1e-2).ok
    assert not compare_arrays(np.array([complex(np.nan, 0)]), np.array([0j]), 1e-2, 1e-2).ok


def test_dtype_mismatch_is_its_own_status():
    v = compare_outputs([Out(np.array([1.0], np.float32), "float32")],
                        [Out(np.array([1.0], np.float64), "float64")], 1e-2, 1e-2)
    assert v.status == "dtype_mismatch"
    assert "float32 (paddle) vs float64 (torch)" in v.message and "values agree" in v.message


def test_python_scalars_are_not_dtype_checked():
    v = compare_outputs([Out(np.asarray(3), None, False)], [Out(np.asarray(3.0), None, False)], 1e-2, 1e-2)
    assert v.status == "pass"


def test_shape_mismatch_and_output_count():
    v = compare_outputs([f32(1.0, 2.0)], [f32(1.0)], 1e-2, 1e-2)
    assert v.status == "shape_mismatch" and "[2] (paddle) vs [1] (torch)" in v.message
    v = compare_outputs([f32(1.0), f32(2.0)], [f32(1.0)], 1e-2, 1e-2)
    assert v.status == "shape_mismatch" and "2 outputs" in v.message
    v = compare_outputs([Out(None)], [f32(1.0)], 1e-2, 1e-2)
    assert v.status == "shape_mismatch"


def test_first_failing_output_decides():
    v = compare_outputs([f32(1.0), f32(5.0)], [f32(1.0), f32(1.0)], 1e-2, 1e-2)
    assert v.status == "accuracy_error" and v.output == "output 1"


def test_diff_map_is_max_pooled_to_128_cells_and_marks_nonfinite():
    a = np.zeros((300, 1000), np.float32); b = np.zeros_like(a)
    a[299, 999] = 7.0
    a[0, 0] = np.nan
    v = compare_outputs([Out(a, "float32")], [Out(b, "float32")], 1e-2, 1e-2)
    grid = np.array(v.diff_map); mask = np.array(v.diff_map_nonfinite)
    assert grid.shape[0] <= 128 and grid.shape[1] <= 128 and grid.shape == mask.shape
    assert grid[-1, -1] == 7.0 and grid.max() == 7.0
    assert mask[0, 0] == 1 and mask.sum() == 1
    assert v.diff_shape == (300, 1000)


def test_max_pool_shapes():
    assert max_pool(np.arange(5.0)).shape == (1, 5)
    assert max_pool(np.array(3.0)).tolist() == [[3.0]]
    assert max_pool(np.ones((2, 3, 4))).shape == (6, 4)
    pooled = max_pool(np.arange(256.0 * 256).reshape(256, 256))
    assert pooled.shape == (128, 128) and pooled[0, 0] == 257.0


@pytest.mark.parametrize("shape", [(300, 1000), (1, 70000), (70000, 1), (129, 257), (3, 5, 999), (128, 128)])
def test_max_pool_is_the_max_of_each_block(shape):
    """Every cell is the max (NaN if any) of its block of the 2-D view, blocks of ceil(n / 128) with a shorter last
    one, checked against a plain loop over the blocks."""
    rng = np.random.default_rng(7)
    values = np.abs(rng.standard_normal(shape)).astype(np.float32)
    values.reshape(-1)[rng.integers(0, values.size, 3)] = np.nan
    grid = values.reshape(-1, shape[-1])
    rows, cols = grid.shape
    br, bc = math.ceil(rows / 128), math.ceil(cols / 128)
    want = np.array([[np.max(grid[r:r + br, c:c + bc]) for c in range(0, cols, bc)] for r in range(0, rows, br)])
    got = max_pool(values)
    assert got.shape == want.shape and got.dtype == values.dtype
    assert np.array_equal(got, want, equal_nan=True)


def test_verdict_dict_round_trip_encodes_nonfinite():
    a = np.array([np.inf, 1.0], np.float32)
    v = compare_outputs([Out(a, "float32")], [f32(1.0, 1.0)], 1e-2, 1e-2)
    data = v.to_dict()
    text = json.dumps(data, allow_nan=False)  # strict JSON: no bare NaN/Infinity
    back = Verdict.from_dict(json.loads(text))
    assert back.max_abs == math.inf and back.status == "accuracy_error"
    assert back.worst_index == (0,) and back.diff_map == v.diff_map


# ---- the chunked pass for agreeing arrays gives the full comparison's figures, element for element

def _figures(diff):
    return (diff.ok, diff.mismatched, diff.total, diff.max_abs, diff.max_rel, diff.worst_index, diff.rel_index,
            diff.nonfinite_mismatched)


def _agreeing_pairs():
    """Pairs within atol=rtol=1e-2 that exercise the figures: several chunks, ties of the greatest difference
    in different chunks, zeros on both sides (0/0), a zero desired with a nonzero difference (x/0 = inf),
    the tolerance's edge, non-contiguous views, float16/32/64, mixed float dtypes, 0-d."""
    rng = np.random.default_rng(7)
    n = AGREE_CHUNK * 3 + 123
    base = rng.uniform(-1, 1, n)
    noisy = base + rng.uniform(-1e-4, 1e-4, n)
    ties = base.copy()
    ties_b = base.copy()
    for i in (5, AGREE_CHUNK + 9, 2 * AGREE_CHUNK + 1):  # the same greatest difference three times
        ties_b[i] = ties[i] + 0.005
    zeros = np.zeros(n)
    x_over_zero = np.zeros(n)
    x_over_zero[AGREE_CHUNK + 3] = 0.004  # |b| = 0: relative difference inf, still within atol
    edge_b = rng.uniform(-1, 1, 1000)
    edge_a = edge_b + (1e-2 + 1e-2 * np.abs(edge_b)) * 0.999999  # just inside the limit
    cube = rng.uniform(-1, 1, (40, 50, 60))
    yield "float64 noisy", noisy, base
    yield "ties across chunks", ties, ties_b
    yield "both zero", zeros, zeros.copy()
    yield "x over zero", x_over_zero, zeros
    yield "tolerance edge", edge_a, edge_b
    for dtype in (np.float16, np.float32):
        yield f"{np.dtype(dtype).name}", noisy.astype(dtype), base.astype(dtype)
    yield "float32 vs float64", noisy.astype(np.float32), base
    yield "transposed views", cube.transpose(2, 0, 1), (cube + 1e-5).transpose(2, 0, 1)
    yield "strided", noisy[::3], base[::3]
    yield "0-d", np.float32(0.5), np.float32(0.501)
    yield "one element", np.array([3.0]), np.array([3.0])


@pytest.mark.parametrize("case", list(_agreeing_pairs()), ids=lambda case: case[0])
def test_chunked_pass_of_agreeing_floats_matches_the_full_comparison(case):
    _name, actual, desired = case
    chunked = compare_arrays(actual, desired, 1e-2, 1e-2)
    full = compare_arrays(actual, desired, 1e-2, 1e-2, diff_map=True)
    assert chunked.ok and full.ok
    assert chunked.diff is None and full.diff is not None
    assert _figures(chunked) == _figures(full)


def test_one_pair_out_of_tolerance_or_nonfinite_in_a_late_chunk_is_reported_in_full():
    rng = np.random.default_rng(3)
    desired = rng.uniform(-1, 1, AGREE_CHUNK * 2 + 10)
    for bad_value, nonfinite in ((desired[-4] + 0.5, 0), (np.nan, 1), (np.inf, 1)):
        actual = desired.copy()
        actual[-4] = bad_value
        diff = compare_arrays(actual, desired, 1e-2, 1e-2)
        assert not diff.ok and diff.mismatched == 1 and diff.nonfinite_mismatched == nonfinite
        assert diff.worst_index == (desired.size - 4,)
        assert diff.diff is not None and diff.diff.shape == desired.shape  # the diff map's source


def test_equal_integers_take_the_short_path_with_the_full_figures():
    a = np.arange(-50, 70, dtype=np.int64).reshape(8, 15)
    for desired in (a.copy(), a.astype(np.int32)):
        short = compare_arrays(a, desired, 0, 0)
        full = compare_arrays(a, desired, 0, 0, diff_map=True)
        assert short.diff is None and _figures(short) == _figures(full)
    flags = np.array([True, False, True])
    assert _figures(compare_arrays(flags, flags.copy(), 0, 0)) == _figures(
        compare_arrays(flags, flags.copy(), 0, 0, diff_map=True))


def test_a_dtype_mismatch_with_agreeing_values_still_carries_its_diff_map():
    a = np.linspace(0, 1, 300, dtype=np.float32).reshape(3, 100)
    verdict = compare_outputs([Out(a, "float32")], [Out(a.astype(np.float64), "float64")], 1e-2, 1e-2)
    assert verdict.status == "dtype_mismatch" and "values agree" in verdict.message
    assert verdict.diff_shape == (3, 100) and verdict.diff_map


def _identical_pairs():
    """Bitwise-identical float arrays (the bit-compare short path): several chunks, NaN and ±inf on both sides
    (which the chunked float pass hands to the full comparison), float16/32/64, views, 0-d."""
    rng = np.random.default_rng(11)
    n = AGREE_CHUNK * 2 + 77
    for dtype in (np.float16, np.float32, np.float64):
        values = rng.uniform(-3, 3, n).astype(dtype)
        values[[3, AGREE_CHUNK + 1, n - 1]] = [np.nan, np.inf, -np.inf]
        yield f"{np.dtype(dtype).name} with nan/inf", values, values.copy()
    cube = rng.uniform(-1, 1, (30, 40, 50)).astype(np.float32)
    yield "transposed views", cube.transpose(2, 0, 1), cube.copy().transpose(2, 0, 1)
    yield "0-d", np.float32(-2.5), np.float32(-2.5)


@pytest.mark.parametrize("case", list(_identical_pairs()), ids=lambda case: case[0])
def test_identical_floats_take_the_bit_compare_path_with_the_full_figures(case):
    _name, actual, desired = case
    short = compare_arrays(actual, desired, 1e-2, 1e-2)
    full = compare_arrays(actual, desired, 1e-2, 1e-2, diff_map=True)
    assert short.ok and full.ok and short.diff is None
    assert _figures(short) == _figures(full)
    assert short.max_abs == 0.0 and short.max_rel == 0.0


def test_bits_that_differ_late_signed_zero_or_nan_payload_leave_the_float_comparison_to_decide():
    rng = np.random.default_rng(5)
    desired = rng.uniform(-1, 1, AGREE_CHUNK * 3).astype(np.float32)
    late = desired.copy()
    late[-2] = np.nextafter(late[-2], np.float32(2))  # one ulp, in the last chunk: within tolerance
    diff = compare_arrays(late, desired, 1e-2, 1e-2)
    assert diff.ok and diff.max_abs > 0 and diff.worst_index == (desired.size - 2,)
    outside = desired.copy()
    outside[-1] += 0.5  # out of tolerance in the last chunk: reported in full
    diff = compare_arrays(outside, desired, 1e-2, 1e-2)
    assert not diff.ok and diff.mismatched == 1 and diff.diff is not None
    zeros = np.zeros(10, np.float32)
    assert _figures(compare_arrays(-zeros, zeros, 0, 0)) == _figures(compare_arrays(-zeros, zeros, 0, 0, diff_map=True))
    quiet = np.full(4, np.nan, np.float32)
    other = quiet.view(np.uint32).copy()
    other |= 1  # another NaN payload: still NaN against NaN, not a difference
    diff = compare_arrays(quiet, other.view(np.float32), 0, 0)
    assert diff.ok and diff.nonfinite_mismatched == 0


def test_equal_bits_of_different_float_dtypes_are_not_taken_for_equal_values():
    a = np.array([1.0, 2.0], np.float32)
    b = a.astype(np.float64)
    assert _figures(compare_arrays(a, b, 0, 0)) == _figures(compare_arrays(a, b, 0, 0, diff_map=True))
    assert not compare_arrays(np.array([1.0], np.float32), np.array([1.5], np.float64), 0, 0).ok
