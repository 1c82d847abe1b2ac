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
