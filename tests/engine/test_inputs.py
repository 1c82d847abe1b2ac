"""inputs.py: deterministic arrays for every dtype, 0-d/0-size, domains, size estimate."""

import numpy as np
import pytest

from apitester import inputs as inp
from apitester.config import TensorSpec, parse_config

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_is_deterministic_and_in_default_range(dtype):
    bound = {"x": TensorSpec((4, 5), dtype)}
    a = inp.materialise(bound, seed=3)["x"]
    b = inp.materialise(bound, seed=3)["x"]
    c = inp.materialise(bound, seed=4)["x"]
    assert a.dtype == dtype and a.shape == (4, 5)
    np.testing.assert_array_equal(a.array, b.array)
    assert not np.array_equal(a.array, c.array) or dtype == "bool" and a.array.size < 2
    values = a.array
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        assert values.min() >= -1 and values.max() < 1
    elif dtype.startswith("complex"):
        assert np.abs(values.real).max() <= 1 and np.abs(values.imag).max() <= 1
    elif dtype == "uint8":
        assert values.min() >= 0 and values.max() < 10
    elif dtype != "bool":
        assert values.min() >= -10 and values.max() < 10


def test_bfloat16_values_are_exactly_representable():
    x = inp.materialise({"x": TensorSpec((1000,), "bfloat16")})["x"].array
    assert x.dtype == np.float32
    assert np.all((x.view(np.uint32) & 0xFFFF) == 0)  # low 16 bits zero: a bfloat16 value


def test_round_to_bfloat16_ties_to_even_and_keeps_nan():
    one_plus_half_ulp = np.array([1.0 + 2 ** -8], np.float32)  # halfway between 1 and 1+2^-7
    assert inp.round_to_bfloat16(one_plus_half_ulp)[0] == 1.0
    assert np.isnan(inp.round_to_bfloat16(np.array([np.nan], np.float32))[0])


def test_zero_dim_and_zero_size():
    out = inp.materialise({"a": TensorSpec((), "float32"), "b": TensorSpec((0, 3), "int64")})
    assert out["a"].array.shape == () and out["b"].array.shape == (0, 3)


def test_lists_of_tensors_keep_structure_and_differ():
    out = inp.materialise({"xs": [TensorSpec((3,), "float32"), TensorSpec((3,), "float32")]})
    assert isinstance(out["xs"], list) and len(out["xs"]) == 2
    assert not np.array_equal(out["xs"][0].array, out["xs"][1].array)


def ctx_for(shape, dtype="float64", args=None, arrays=None):
    return inp.DomainContext(tuple(shape), dtype, np.random.default_rng(0), args or {}, arrays or {})


def test_domain_helpers():
    assert inp.positive()(ctx_for((100,))).min() > 0
    u = inp.unit_open()(ctx_for((100,)))
    assert u.min() > 0 and u.max() < 1
    r = inp.range_(2, 3)(ctx_for((100,)))
    assert r.min() >= 2 and r.max() < 3
    assert np.abs(inp.nonzero()(ctx_for((100,)))).min() >= 0.5
    ints = inp.int_range(-5, 5)(ctx_for((100,), "int32"))
    assert ints.min() >= -5 and ints.max() < 5
    uniq = inp.unique()(ctx_for((10, 10)))
    assert len(np.unique(uniq)) == 100
    assert len(np.unique(inp.unique()(ctx_for((3000,), "float16")).astype(np.float16))) == 3000
    p = inp.probabilities()(ctx_for((4, 6)))
    assert np.allclose(p.sum(-1), 1) and p.min() >= 0
    assert set(np.unique(inp.one_of([2, 7])(ctx_for((50,), "int64")))) == {2, 7}


def test_spd_is_symmetric_positive_definite():
    m = inp.spd()(ctx_for((3, 5, 5)))
    assert np.allclose(m, np.swapaxes(m, -1, -2))
    assert np.linalg.eigvalsh(m).min() > 0


def test_indices_are_below_the_indexed_dim():
    args = {"arr": TensorSpec((3, 7), "float32"), "axis": 1}
    idx = inp.indices(of="arr", axis="axis")(ctx_for((3, 50), "int64", args))
    assert idx.min() >= 0 and idx.max() < 7 and idx.max() == 6
    uniq = inp.indices(of="arr", axis="axis", unique=True)(ctx_for((3, 7), "int64", args))
    assert all(len(set(row)) == 7 for row in uniq)


def test_wide_spans_the_dtype_range():
    w = inp.wide()(ctx_for((1000,), "float64"))
    assert np.abs(w).max() > np.finfo(np.float32).max  # beyond float32: range bugs show
    assert np.isfinite(w).all()
    w16 = inp.wide()(ctx_for((1000,), "float16"))
    assert np.isfinite(w16).all()


def test_ties_with_copies_broadcast_partner():
    x = np.array([[0.25, -0.5]])
    y = inp.ties_with("x", fraction=0.5)(ctx_for((100, 2), arrays={"x": x}))
    ties = (y == x)
    assert 20 < ties.sum() < 180


def test_estimate_bytes():
    call = parse_config('paddle.add(Tensor([1024, 1024],"float32"), Tensor([10],"bfloat16"), '
                        'list[Tensor([2],"float64"),], )')
    assert inp.estimate_bytes(call) == 1024 * 1024 * 4 + 10 * 4 + 16


def test_one_walker_rebuilds_the_containers_it_is_told_to_and_reports_paths():
    from apitester.config import Constructor, walk

    seen = []
    value = [1, (2, slice(3, None, None)), {"k": [4]}, Constructor("Dtype", (5,))]
    out = walk(value, lambda item, path: seen.append((item, path)) or (item * 10 if isinstance(item, int) else item),
               into=(list, tuple, slice, dict, Constructor))
    assert out == [10, (20, slice(30, None, None)), {"k": [40]}, Constructor("Dtype", (50,))]
    assert seen[:3] == [(1, (0,)), (2, (1, 0)), (3, (1, 1, 0))] and (4, (2, "k", 0)) in seen
    # containers not named in ``into`` are leaves, passed whole
    assert walk(value, lambda item, path: type(item).__name__) == ["int", ("int", "slice"), "dict", "Constructor"]


# ---- the cheaper draws give the same values as the plain numpy expressions they replace

def _bfloat16_by_uint64(array):
    """The rounding as first written (in uint64, no wrap-around anywhere): the reference for the uint32 one."""
    a = np.array(array, dtype=np.float32, order="C").reshape(-1)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), np.float32(np.nan), rounded).reshape(np.shape(array))


def test_bfloat16_rounding_in_uint32_equals_the_uint64_reference_on_every_kind_of_bit_pattern():
    rng = np.random.default_rng(11)
    patterns = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.4028235e38, -3.4028235e38, 1e-45,
                        -1e-45, 1.0 + 2**-8, 1.0 + 3 * 2**-8], np.float32)
    top = np.array([0xFF7FFFFF, 0x7F7FFFFF, 0xFFFFFFFF, 0x7F807FFF, 0x3F808000, 0x3F818000],
                   np.uint32).view(np.float32)  # the largest finite, NaN payloads, exact ties
    for array in (patterns, special, top, patterns[:120].reshape(4, 5, 6), np.float32(2.5)):
        got, want = inp.round_to_bfloat16(array), _bfloat16_by_uint64(array)
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.array_equal(np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32))


@pytest.mark.parametrize("shape,dtype", [((5,), "float32"), ((), "float32"), ((300, 500), "float32"),
                                         ((inp.DRAW_CHUNK * 3 + 7,), "float16"), ((1024, 1024, 2), "float32"),
                                         ((inp.DRAW_CHUNK + 1,), "float64")])
def test_uniform_array_of_format_1_draws_the_values_of_numpy_uniform(shape, dtype):
    for lo, hi in ((-1.0, 1.0), (0.1, 2.0), (-65504.0, 65504.0)):
        want = np.random.default_rng([4, 2]).uniform(lo, hi, shape).astype(dtype)
        got = inp.uniform_array(np.random.default_rng([4, 2]), lo, hi, shape, np.dtype(dtype), fmt=1)
        assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)


def test_edge_positions_of_small_tensors_are_the_permutation_ones_and_big_tensors_get_distinct_positions():
    edges = [np.inf, -np.inf, np.nan, 0.0]
    small = np.ones(inp.EDGE_PERMUTATION_ELEMENTS, np.float32)
    placed, count = inp.place_edges(small, edges, np.random.default_rng(1))
    expected = np.random.default_rng(1).permutation(small.size)[:4]  # where stored draws put them
    assert count == 4 and np.array_equal(placed[expected[:2]], [np.inf, -np.inf]) and np.isnan(placed[expected[2]])
    big = np.ones((inp.EDGE_PERMUTATION_ELEMENTS + 1,), np.float32)
    first, count = inp.place_edges(big, edges, np.random.default_rng(2))
    again, _ = inp.place_edges(big, edges, np.random.default_rng(2))
    assert count == 4 and np.array_equal(first, again, equal_nan=True)  # deterministic
    assert np.count_nonzero(first != 1.0) == 4  # four distinct positions (NaN != 1 too)
    assert np.array_equal(big, np.ones_like(big))  # the typical values are not touched
