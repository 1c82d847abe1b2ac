"""Reductions, scans, sort, search, statistics."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..inputs import axes, int_range, numpy_dtype, round_to_bfloat16, unique
from ..vocab import AdaptationKind
from .base import Adaptation, Spec, maps_arguments, register, torch_dtype

# ---------------------------------------------------------------- sum / cumsum (core)


def _dims(axis):
    import torch

    if isinstance(axis, torch.Tensor):  # a Tensor axis: its values are the dims
        axis = axis.tolist()
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return tuple(axis)
    return axis


def _sum(x, axis=None, dtype=None, keepdim=False, **_):
    import torch

    dims = _dims(axis)
    if dims is None or dims == ():
        # Paddle: axis None or [] reduces every dim
        dims = tuple(range(x.ndim))
    return torch.sum(x, dim=dims, keepdim=keepdim, dtype=torch_dtype(dtype))


def _cumsum(x, axis=None, dtype=None, **_):
    import torch

    if axis is None:  # Paddle flattens first
        x = x.reshape(-1)
        axis = 0
    return torch.cumsum(x, dim=axis, dtype=torch_dtype(dtype))


# ---------------------------------------------------------------- independent references (Spec.ref)
# NumPy on the upcast inputs; sums, means, products and deviations exact (rational) and rounded once
# (apitester.references), square roots in mpmath at 40 digits.


def _ref_axes(x, axis) -> tuple[int, ...]:
    """Paddle's reduction axes (None or [] -> every dim; a Tensor axis's values) as sorted dims."""
    if isinstance(axis, np.ndarray):
        axis = axis.reshape(-1).tolist()
    if axis is None or (isinstance(axis, (list, tuple)) and len(axis) == 0):
        return tuple(range(x.ndim))
    if x.ndim == 0:
        return ()
    axes_ = axis if isinstance(axis, (list, tuple)) else (axis,)
    return tuple(sorted({int(a) % x.ndim for a in axes_}))


def _reduce(x, axis, keepdim, lane):
    """``lane`` (1-D array -> scalar) over Paddle's axes."""
    from ..references import along_axis

    dims = _ref_axes(x, axis)
    if not dims:
        return np.asarray(lane(x.reshape(1)))
    return along_axis(lane, x, dims, keepdims=keepdim)


def _exact_sum(lane):
    from ..references import fsum

    return fsum(lane) if lane.dtype.kind in "fc" else int(sum(int(v) for v in lane.tolist()))


def _ref_sum(x, axis=None, dtype=None, keepdim=False, **_):
    if dtype is not None or x.dtype.kind not in "fc":
        raise NotImplementedError("integer sums and dtype=: compared exactly, no reference needed")
    return _reduce(x, axis, keepdim, _exact_sum)


def _ref_cumsum(x, axis=None, dtype=None, **_):
    from ..references import along_axis_1d, covered, exact_cumulative

    covered(x.dtype.kind in "fc" and dtype is None, "integer / dtype= cumsum")
    if axis is None:
        x, axis = x.reshape(-1), 0
    return along_axis_1d(exact_cumulative, x, int(axis)) if x.ndim else x.copy()


def _ref_all(x, axis=None, keepdim=False, **_):
    return _reduce(x.astype(bool), axis, keepdim, lambda lane: bool(lane.all())).astype(bool)


def _ref_any(x, axis=None, keepdim=False, **_):
    return _reduce(x.astype(bool), axis, keepdim, lambda lane: bool(lane.any())).astype(bool)


def _ref_count_nonzero(x, axis=None, keepdim=False, **_):
    return _reduce(x, axis, keepdim, lambda lane: int(np.count_nonzero(lane))).astype(np.int64)


def _ref_max(x, axis=None, keepdim=False, **_):
    return _reduce(x, axis, keepdim, lambda lane: lane.max())


def _exact_prod(lane):
    from ..references import exact_apply

    if lane.dtype.kind in "fc":
        return exact_apply(lambda v: np.prod(v) if v.size else 1.0, lane)
    return np.prod(lane)


def _ref_prod(x, axis=None, keepdim=False, dtype=None, **_):
    from ..references import covered

    covered(x.dtype.kind in "fc" and dtype is None, "integer / dtype= prod")
    return _reduce(x, axis, keepdim, _exact_prod)


def _ref_cumprod(x, dim=None, dtype=None, **_):
    from ..references import along_axis_1d, covered, exact_cumulative

    covered(x.dtype.kind in "fc" and dtype is None, "integer / dtype= cumprod")
    if dim is None:
        x, dim = x.reshape(-1), 0
    return along_axis_1d(lambda lane: exact_cumulative(lane, "prod"), x, int(dim)) if x.ndim else x.copy()


def _ref_cum_extreme(larger: bool):
    def ref(x, axis=None, dtype="int64", **_):
        from ..references import along_axis_1d

        if axis is None:
            x, axis = x.reshape(-1), 0

        def lane_of(lane, want):
            best, where = None, 0
            values, indices = np.empty(lane.size, lane.dtype), np.empty(lane.size, np.int64)
            for i, v in enumerate(lane.tolist()):
                if best is None or (isinstance(best, float) and math.isnan(best)) is False and (
                        (isinstance(v, float) and math.isnan(v)) or (v >= best if larger else v <= best)):
                    best, where = v, i
                values[i], indices[i] = best, where
            return values if want == "values" else indices

        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        return (along_axis_1d(lambda lane: lane_of(lane, "values"), x, int(axis)),
                along_axis_1d(lambda lane: lane_of(lane, "indices"), x, int(axis)))

    return ref


def _ref_trapezoid(cumulative: bool):
    def ref(y, x=None, dx=None, axis=-1, **_):
        from ..references import exact_apply

        axis = int(axis)

        def compute(yy, xx):
            ya = np.moveaxis(yy, axis, -1)
            pairs = (ya[..., 1:] + ya[..., :-1])
            if xx is None:
                steps = Fraction(float(1.0 if dx is None else dx)) if np.isfinite(1.0 if dx is None else dx) else dx
                terms = pairs * steps / 2
            else:
                xa = np.moveaxis(xx, axis if xx.ndim == yy.ndim else -1, -1)
                terms = pairs * (xa[..., 1:] - xa[..., :-1]) / 2
            if cumulative:
                out = np.cumsum(terms, axis=-1) if terms.shape[-1] else terms
                return np.moveaxis(out, -1, axis)
            return terms.sum(axis=-1) if terms.shape[-1] else np.zeros(terms.shape[:-1], dtype=object) + 0

        return exact_apply(compute, y, x)

    return ref


def _ref_sort(x, axis=-1, descending=False, stable=False, **_):
    out = np.sort(x, axis=int(axis))
    return np.flip(out, axis=int(axis)) if descending else out


def _ref_argsort(x, axis=-1, descending=False, stable=False, **_):
    keys = -x if descending and x.dtype.kind in "fi" else x
    order = np.argsort(keys, axis=int(axis), kind="stable")
    return order.astype(np.int64)


def _ref_topk(x, k, axis=None, largest=True, sorted=True, **_):
    k = int(np.asarray(k).reshape(-1)[0]) if isinstance(k, np.ndarray) else int(k)
    axis = -1 if axis is None else int(axis)
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    index = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, index, axis=axis), index.astype(np.int64)


def _ref_median(x, axis=None, keepdim=False, mode="avg", **_):
    from ..references import covered

    source = x.reshape(-1) if axis is None else x
    dim = 0 if axis is None else int(axis) % max(x.ndim, 1)
    n = source.shape[dim]
    covered(n > 0, "an empty axis")
    ordered = np.sort(source, axis=dim)
    low = np.take(ordered, [(n - 1) // 2], axis=dim)

    def shaped(value):
        if axis is None:
            return value.reshape([1] * x.ndim) if keepdim else value.reshape(())
        return value if keepdim else np.squeeze(value, dim)

    if mode == "avg":
        high = np.take(ordered, [n // 2], axis=dim)
        return shaped(low / 2 + high / 2 if np.isfinite(low).all() and np.isfinite(high).all() else (low + high) / 2)
    if axis is None:
        return shaped(low)
    covered(len(np.unique(source)) == source.size, "ties: the index of the lower median is not unique")
    order = np.argsort(source, axis=dim, kind="stable")
    index = np.take(order, [(n - 1) // 2], axis=dim)
    return shaped(low), shaped(index).astype(np.int64)


def _ref_unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None, dtype="int64", **_):
    from ..references import covered

    covered(axis is None, "unique along an axis")
    out, index, inverse, counts = np.unique(x.reshape(-1), return_index=True, return_inverse=True, return_counts=True)
    results = [out] + [a.astype(np.int64) for a, want in ((index, return_index), (inverse.reshape(-1), return_inverse),
                                                           (counts, return_counts)) if want]
    return results[0] if len(results) == 1 else tuple(results)


def _ref_unique_consecutive(x, return_inverse=False, return_counts=False, axis=None, dtype="int64", **_):
    from ..references import covered

    covered(axis is None, "unique_consecutive along an axis")
    flat = x.reshape(-1)
    if flat.size == 0:
        starts = np.zeros(0, np.int64)
    else:
        starts = np.concatenate([[0], np.nonzero(flat[1:] != flat[:-1])[0] + 1])
    out = flat[starts]
    inverse = np.cumsum(np.isin(np.arange(flat.size), starts)) - 1
    counts = np.diff(np.concatenate([starts, [flat.size]]))
    results = [out] + [a.astype(np.int64) for a, want in ((inverse, return_inverse), (counts, return_counts)) if want]
    return results[0] if len(results) == 1 else tuple(results)


def _ref_histogram(input, bins=100, min=0.0, max=0.0, weight=None, density=False, **_):
    data = input.astype(np.float64).reshape(-1)
    lo, hi = float(min), float(max)
    if lo == 0.0 and hi == 0.0 and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    hist, _ = np.histogram(data, bins=int(bins), range=(lo, hi),
                           weights=None if weight is None else weight.reshape(-1), density=density)
    return hist.astype(np.int64) if weight is None and not density else hist.astype(np.float64)


def _exact_var(lane, correction):
    """Sum of squared deviations from the exact mean over max(0, n - correction) (Torch's documented divisor),
    as a Fraction; None where it is not finite (a NaN/inf input, or a division by 0: the caller says which)."""
    values = lane.tolist()
    if not values or not all(math.isfinite(v) for v in values):
        return None
    exact = [Fraction(v) for v in values]
    mean = sum(exact, Fraction(0)) / len(exact)
    squares = sum(((v - mean) ** 2 for v in exact), Fraction(0))
    if len(exact) - correction <= 0:
        return None
    return squares / (len(exact) - correction)


def _var_not_finite(values, correction) -> float:
    """The variance where it has no rational value: NaN for a NaN/inf input or 0/0, inf for x/0 (x > 0)."""
    with np.errstate(all="ignore"):
        if values.size == 0 or not np.isfinite(values).all():  # inf - mean(inf) is NaN
            return math.nan
        return math.nan if np.all(values == values[0]) else math.inf


def _ref_deviation(root: bool):
    def ref(x, axis=None, unbiased=None, keepdim=False, correction=1, **_):
        import mpmath

        from ..references import DPS, covered

        covered(x.dtype.kind == "f", "complex or integer deviation")
        if unbiased is not None:
            correction = 1 if unbiased else 0

        def lane(values):
            var = _exact_var(values, correction)
            if var is None:
                return _var_not_finite(values, correction)
            if not root:
                return float(var)
            with mpmath.workdps(DPS):
                return float(mpmath.sqrt(mpmath.mpf(var.numerator) / var.denominator))

        return _reduce(x, axis, keepdim, lane)

    return ref


def _ref_mean(x, axis=None, keepdim=False, dtype=None, **_):
    from ..references import covered, exact_mean

    covered(x.dtype.kind == "f" and dtype is None, "integer / complex / dtype= mean")
    return _reduce(x, axis, keepdim, exact_mean)


def _ref_trace(x, offset=0, axis1=0, axis2=1, **_):
    from ..references import covered, fsum

    covered(x.dtype.kind in "fc", "integer trace")
    diagonal = np.diagonal(x, offset=int(offset), axis1=int(axis1), axis2=int(axis2))
    flat = diagonal.reshape(-1, diagonal.shape[-1])
    return np.asarray([fsum(lane) if lane.size else 0.0 for lane in flat]).reshape(diagonal.shape[:-1])


register(
    Spec(
        api="paddle.sum", ref=_ref_sum,
        overflow=True,  # integer sums: the edge draw has the dtype's extremes
        aliases=("paddle.Tensor.sum",),
        torch=_sum,
        domains={"axis": axes(of="x")},
        note="torch.sum; Paddle's axis=None or [] reduces all dims", adaptations=maps_arguments("axis -> dim (None or [] -> every dim), dtype -> dtype, keepdim -> keepdim"),
    ),
    Spec(
        api="paddle.cumsum", ref=_ref_cumsum,
        overflow=True,  # integer sums: the edge draw has the dtype's extremes
        aliases=("paddle.Tensor.cumsum",),
        torch=_cumsum,
        note="torch.cumsum; axis=None flattens first as Paddle does", adaptations=maps_arguments("axis -> dim (None -> flattened, dim 0), dtype -> dtype"),
    ),
)

# ---------------------------------------------------------------- shared helpers


def _axes(x, axis) -> tuple[int, ...]:
    """Paddle's reduction axes as sorted non-negative dims.

    Paddle reduces every dim for ``axis=None`` and for an empty list/tuple (Torch's
    ``all``/``any`` treat ``dim=()`` as "reduce nothing", so the empty case must be
    spelled out).  A 0-d tensor has nothing to reduce over.
    """
    if hasattr(axis, "tolist"):  # a Tensor axis: its values are the dims
        axis = axis.tolist()
    nd = x.dim()
    if axis is None or (isinstance(axis, (list, tuple)) and len(axis) == 0):
        return tuple(range(nd))
    if nd == 0:
        return ()
    axes = axis if isinstance(axis, (list, tuple)) else (axis,)
    return tuple(sorted({int(a) + nd if int(a) < 0 else int(a) for a in axes}))


def _keep(out, dims: tuple[int, ...], keepdim: bool):
    """Re-insert the reduced dims as size 1 when ``keepdim`` (for ops without keepdim)."""
    if keepdim:
        for d in dims:
            out = out.unsqueeze(d)
    return out


# ---------------------------------------------------------------- logical / counting reductions


def _all(x, axis=None, keepdim=False, **_):
    import torch

    dims = _axes(x, axis)
    if not dims:
        return torch.all(x).to(torch.bool)
    return torch.all(x, dim=dims, keepdim=keepdim).to(torch.bool)


def _any(x, axis=None, keepdim=False, **_):
    import torch

    dims = _axes(x, axis)
    if not dims:
        return torch.any(x).to(torch.bool)
    return torch.any(x, dim=dims, keepdim=keepdim).to(torch.bool)


def _count_nonzero(x, axis=None, keepdim=False, **_):
    import torch

    dims = _axes(x, axis)
    if not dims:
        return torch.count_nonzero(x)
    return _keep(torch.count_nonzero(x, dim=dims), dims, keepdim)


def _max(x, axis=None, keepdim=False, **_):
    import torch

    dims = _axes(x, axis)
    if not dims:
        return torch.amax(x)
    return torch.amax(x, dim=dims, keepdim=keepdim)


def _prod(x, axis=None, keepdim=False, dtype=None, *, keep_dtype=True, **_):
    """torch.prod over Paddle's axes; ``keep_dtype`` casts the result back to x's dtype (or
    ``dtype``) as Paddle documents, where the plain torch.prod promotes integers to int64."""
    import torch

    out_dtype = torch_dtype(dtype) if dtype is not None else x.dtype
    y = x.to(out_dtype) if dtype is not None else x
    dims = _axes(x, axis)
    for d in reversed(dims):  # torch.prod takes one dim at a time
        y = torch.prod(y, dim=d, keepdim=True)
    if not keepdim and dims:
        y = y.reshape([s for i, s in enumerate(y.shape) if i not in dims])
    return y.to(out_dtype) if keep_dtype else y


def _keeps_input_dtype(api: str, torch_name: str) -> Adaptation:
    """Paddle's documented result dtype of an integer product (no promotion)."""
    return Adaptation(
        AdaptationKind.DOCUMENTED_SEMANTICS,
        f"Paddle documents {api}'s result in x's dtype when dtype is None (an int32 product wraps at "
        f"int32's range; dtype= avoids the overflow); {torch_name} promotes integers to int64: the adapted "
        "layer casts Torch's result back to x's dtype",
        link=f"https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/{api.rsplit('.', 1)[-1]}_en.html")


# ---------------------------------------------------------------- scans


def _cumprod(x, dim=None, dtype=None, *, keep_dtype=True, **_):
    """torch.cumprod (dim=None flattens, as Paddle does); ``keep_dtype`` casts the result back
    to x's dtype as Paddle documents, where the plain torch.cumprod promotes integers to int64."""
    import torch

    y = x.reshape(-1) if dim is None else x
    out = torch.cumprod(y, dim=0 if dim is None else dim, dtype=torch_dtype(dtype))
    return out.to(torch_dtype(dtype) if dtype is not None else x.dtype) if keep_dtype else out


def _cum_extreme(name):
    def reference(x, axis=None, dtype="int64", **_):
        import torch

        if axis is None:  # Paddle flattens first
            x, axis = x.reshape(-1), 0
        values, indices = getattr(torch, name)(x, dim=axis)
        return values, indices.to(torch_dtype(dtype))

    reference.__name__ = f"_{name}"
    return reference


def _trapezoid_with(name):
    def reference(y, x=None, dx=None, axis=-1, **_):
        import torch

        fn = getattr(torch, name)
        if x is not None:
            return fn(y, x, dim=axis)
        return fn(y, dx=1.0 if dx is None else dx, dim=axis)

    reference.__name__ = f"_{name}"
    return reference


# ---------------------------------------------------------------- sort / search


def _sort(x, axis=-1, descending=False, stable=False, **_):
    import torch

    return torch.sort(x, dim=axis, descending=descending, stable=stable).values


def _argsort(x, axis=-1, descending=False, stable=False, **_):
    import torch

    return torch.argsort(x, dim=axis, descending=descending, stable=stable)


def _k(k) -> int:
    return int(k.item()) if hasattr(k, "item") else int(k)


def _topk(x, k, axis=None, largest=True, sorted=True, **_):
    import torch

    # Torch always sorted: Paddle's sorted=False order is put into sorted order (paddle= below).
    return tuple(torch.topk(x, _k(k), dim=-1 if axis is None else axis, largest=largest, sorted=True))


def _paddle_topk(x, k, axis=None, largest=True, sorted=True, **_):
    import paddle

    values, indices = paddle.topk(x, k, axis=axis, largest=largest, sorted=sorted)
    if not sorted:
        # Paddle documents no order for sorted=False; compare the same set in sorted order.
        dim = -1 if axis is None else axis
        order = paddle.argsort(values, axis=dim, descending=largest)
        values = paddle.take_along_axis(values, order, dim)
        indices = paddle.take_along_axis(indices, order, dim)
    return values, indices


def _unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None,
            dtype="int64", sorted=True, flat_inverse=True, **_):
    import torch

    index_dtype = torch_dtype(dtype)
    source = x.reshape(-1) if axis is None else x  # Paddle flattens when axis is None
    dim = 0 if axis is None else (axis + x.dim() if axis < 0 else axis)
    out, inverse, counts = torch.unique(source, sorted=True, return_inverse=True, return_counts=True,
                                        dim=None if axis is None else dim)
    results = [out]
    if return_index:
        # Torch has no return_index: the first occurrence of each unique element
        # (Paddle's documented example returns the first occurrence).
        n = source.shape[dim]
        first = torch.full((out.shape[dim],), n, dtype=torch.int64)
        first = first.scatter_reduce(0, inverse.reshape(-1), torch.arange(n), "amin")
        results.append(first.to(index_dtype))
    if return_inverse:
        if axis is None and not flat_inverse:  # Torch's own inverse keeps x's shape
            inverse = inverse.reshape(x.shape)
        results.append(inverse.to(index_dtype))
    if return_counts:
        results.append(counts.to(index_dtype))
    return results[0] if len(results) == 1 else tuple(results)


def _unique_consecutive(x, return_inverse=False, return_counts=False, axis=None, dtype="int64",
                        flat_inverse=True, **_):
    import torch

    index_dtype = torch_dtype(dtype)
    source = x.reshape(-1) if axis is None else x  # Paddle flattens when axis is None
    out, inverse, counts = torch.unique_consecutive(source, return_inverse=True, return_counts=True, dim=axis)
    results = [out]
    if return_inverse:
        if axis is None and not flat_inverse:  # Torch's own inverse keeps x's shape
            inverse = inverse.reshape(x.shape)
        results.append(inverse.to(index_dtype))
    if return_counts:
        results.append(counts.to(index_dtype))
    return results[0] if len(results) == 1 else tuple(results)


def _torch_inverse_shape(reference):
    """The plain Torch call: with axis None the inverse keeps x's shape."""
    return lambda **kwargs: reference(**kwargs, flat_inverse=False)


def _flat_inverse(api: str) -> tuple[Adaptation, ...]:
    return (Adaptation(AdaptationKind.DOCUMENTED_SEMANTICS,
                       f"with axis=None {api} flattens x and documents a 1-D inverse; Torch's inverse keeps "
                       "x's shape (a known API difference, Paddle issue #72822)",
                       "https://github.com/PaddlePaddle/Paddle/issues/72822"),)


def _histogram(input, bins=100, min=0.0, max=0.0, weight=None, density=False, *, int64_counts=True, **_):
    """``int64_counts=False`` is the strict layer: torch.histc's counts in the data's floating dtype."""
    import torch

    data = input if input.is_floating_point() else input.to(torch.float64)
    lo, hi = float(min), float(max)
    if weight is None and not density:
        # histc has Paddle's rules (min == max == 0 -> the data's range)
        counts = torch.histc(data, bins=bins, min=lo, max=hi)
        return counts.to(torch.int64) if int64_counts else counts
    if lo == 0.0 and hi == 0.0:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    out_dtype = weight.dtype if weight is not None else (data.dtype if input.is_floating_point() else torch.float32)
    hist = torch.histogram(data.to(torch.float64).reshape(-1), bins=bins, range=(lo, hi),
                           weight=None if weight is None else weight.to(torch.float64).reshape(-1),
                           density=density).hist
    return hist.to(out_dtype)


def _median(x, axis=None, keepdim=False, mode="avg", **_):
    import torch

    source = x.reshape(-1) if axis is None else x
    dim = 0 if axis is None else (axis + x.dim() if axis < 0 else axis)
    n = source.shape[dim]

    def shaped(value):  # value keeps `dim` with size 1
        if axis is None:
            return value.reshape([1] * x.dim()) if keepdim else value.reshape([])
        return value if keepdim else value.squeeze(dim)

    if mode == "avg":
        # Paddle: float64 stays float64, every other dtype gives float32 (documented).
        out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        ordered = torch.sort(source.to(out_dtype), dim=dim).values
        low = ordered.narrow(dim, (n - 1) // 2, 1)
        high = ordered.narrow(dim, n // 2, 1)
        return shaped((low + high) / 2)
    if axis is None:  # mode="min": the lower median, values only
        return shaped(torch.sort(source, dim=0).values.narrow(0, (n - 1) // 2, 1))
    values, indices = torch.median(x, dim=dim, keepdim=keepdim)  # Torch's median is the lower one
    return values, indices


# ---------------------------------------------------------------- statistics


def _deviation(name):
    def reference(x, axis=None, unbiased=None, keepdim=False, correction=1, **_):
        import torch

        if unbiased is not None:  # paddle.std has only `unbiased` (default True)
            correction = 1 if unbiased else 0
        dims = _axes(x, axis)
        fn = getattr(torch, name)
        if not dims:
            return fn(x, correction=correction)
        return fn(x, dim=dims, correction=correction, keepdim=keepdim)

    reference.__name__ = f"_{name}"
    return reference


def _torch_mean_as_float(x, axis=None, keepdim=False, dtype=None, **_):
    """The strict layer of an integer mean: torch.mean refuses integers, so x as float64 (exact)."""
    import torch

    x = x.to(torch_dtype(dtype)) if dtype is not None else x
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(torch.float64)
    dims = _axes(x, axis)
    return torch.mean(x, dim=dims, keepdim=keepdim) if dims else x.clone()


def _mean(x, axis=None, keepdim=False, dtype=None, **_):
    import torch

    if dtype is not None:
        x = x.to(torch_dtype(dtype))
    dims = _axes(x, axis)
    if x.is_floating_point() or x.is_complex():
        return torch.mean(x, dim=dims, keepdim=keepdim) if dims else x.clone()
    # Integers: Paddle keeps the integer dtype (documented "same data type as x"); on this
    # build that is the exact sum divided by the count, truncated toward zero.
    count = int(np.prod([x.shape[d] for d in dims])) if dims else 1
    total = torch.sum(x, dim=dims, keepdim=keepdim, dtype=torch.int64) if dims else x.to(torch.int64)
    return torch.div(total, count, rounding_mode="trunc").to(x.dtype)


def _trace(x, offset=0, axis1=0, axis2=1, **_):
    import torch

    # Paddle's trace takes any two axes; Torch's only 2-D: sum the diagonal instead.
    return torch.diagonal(x, offset=offset, dim1=axis1, dim2=axis2).sum(-1).to(x.dtype)


# axis given as a Tensor (axis=Tensor([1],"int64")) holds valid dims of x
AXIS_TENSOR = {"axis": axes(of="x")}

TIES_NOTE = ("inputs pairwise distinct (unique() domain), so indices are well defined and compared "
             "exactly, and the gradient goes to one element per output; tie order is not exercised")

register(
    Spec(api="paddle.all", ref=_ref_all, aliases=("paddle.Tensor.all",), torch=_all, domains=AXIS_TENSOR, backward=False,
         note="torch.all; Paddle's axis=None or [] reduces every dim (Torch's dim=() reduces none)", adaptations=maps_arguments("axis -> dim (None or [] -> every dim, tuple for a list), keepdim -> keepdim")),
    Spec(api="paddle.any", ref=_ref_any, aliases=("paddle.Tensor.any",), torch=_any, domains=AXIS_TENSOR, backward=False,
         note="torch.any; Paddle's axis=None or [] reduces every dim (Torch's dim=() reduces none)", adaptations=maps_arguments("axis -> dim (None or [] -> every dim, tuple for a list), keepdim -> keepdim")),
    Spec(api="paddle.count_nonzero", ref=_ref_count_nonzero, aliases=("paddle.Tensor.count_nonzero",), torch=_count_nonzero, domains=AXIS_TENSOR,
         backward=False, note="torch.count_nonzero, with keepdim re-inserting the reduced dims", adaptations=maps_arguments("axis -> dim; keepdim=True -> the reduced dims re-inserted (torch.count_nonzero has no keepdim)")),
    Spec(api="paddle.max", ref=_ref_max, aliases=("paddle.Tensor.max",), torch=_max, domains=AXIS_TENSOR,
         note="torch.amax (gradient split evenly between ties, as Paddle does)", adaptations=maps_arguments("axis -> dim (None or [] -> every dim), keepdim -> keepdim: torch.amax")),
    Spec(api="paddle.prod", ref=_ref_prod, aliases=("paddle.Tensor.prod",), torch=_prod, domains=AXIS_TENSOR, overflow=True,
         note="torch.prod one axis at a time; the result keeps x's dtype (or `dtype`) as Paddle documents",
         strict_torch=lambda **kw: _prod(**kw, keep_dtype=False),
         adaptations=(_keeps_input_dtype("paddle.prod", "torch.prod"),) + maps_arguments(
             "axis -> dim (one axis at a time; None -> every dim), keepdim -> keepdim, dtype -> dtype")),
    Spec(api="paddle.cumprod", ref=_ref_cumprod, aliases=("paddle.Tensor.cumprod",), torch=_cumprod,
         overflow=True,  # the task's bug is int32 overflow: the edge draw has the dtype's extremes
         note="torch.cumprod; dim=None flattens; the result keeps x's dtype (Torch promotes ints to int64)",
         strict_torch=lambda **kw: _cumprod(**kw, keep_dtype=False),
         adaptations=(_keeps_input_dtype("paddle.cumprod", "torch.cumprod"),) + maps_arguments(
             "dim -> dim (None -> flattened, dim 0), dtype -> dtype")),
    Spec(api="paddle.cummax", ref=_ref_cum_extreme(True), aliases=("paddle.Tensor.cummax",), torch=_cum_extreme("cummax"),
         note="torch.cummax, indices cast to `dtype`; axis=None flattens", adaptations=maps_arguments("axis -> dim (None -> flattened, dim 0); dtype -> the indices cast to it")),
    Spec(api="paddle.cummin", ref=_ref_cum_extreme(False), aliases=("paddle.Tensor.cummin",), torch=_cum_extreme("cummin"),
         note="torch.cummin, indices cast to `dtype`; axis=None flattens", adaptations=maps_arguments("axis -> dim (None -> flattened, dim 0); dtype -> the indices cast to it")),
    Spec(api="paddle.trapezoid", ref=_ref_trapezoid(False), aliases=("paddle.Tensor.trapezoid",), torch=_trapezoid_with("trapezoid"),
         note="torch.trapezoid with x, else dx (default 1)", adaptations=maps_arguments("y, x, else dx (default 1), axis -> torch.trapezoid(y, x | dx, dim)")),
    Spec(api="paddle.cumulative_trapezoid", ref=_ref_trapezoid(True), aliases=("paddle.Tensor.cumulative_trapezoid",),
         torch=_trapezoid_with("cumulative_trapezoid"),
         note="torch.cumulative_trapezoid with x, else dx (default 1)", adaptations=maps_arguments("y -> y, x -> x, else dx (default 1) -> dx, axis -> dim")),
    Spec(api="paddle.sort", ref=_ref_sort, aliases=("paddle.Tensor.sort",), torch=_sort, domains={"x": unique()},
         note="torch.sort(...).values; " + TIES_NOTE, adaptations=maps_arguments("axis -> dim, descending -> descending, stable -> stable: torch.sort(...).values")),
    Spec(api="paddle.argsort", ref=_ref_argsort, aliases=("paddle.Tensor.argsort",), torch=_argsort, domains={"x": unique()},
         backward=False, note="torch.argsort; " + TIES_NOTE, adaptations=maps_arguments("axis -> dim, descending -> descending, stable -> stable")),
    Spec(api="paddle.topk", ref=_ref_topk, aliases=("paddle.Tensor.topk",), torch=_topk, paddle=_paddle_topk,
         domains={"x": unique()},
         note="torch.topk (axis=None is the last dim); sorted=False results are compared in sorted order; "
              + TIES_NOTE, adaptations=maps_arguments("k, axis (None -> last dim), largest, sorted -> torch.topk(k, dim, largest, sorted); sorted=False results compared in sorted order")),
    Spec(api="paddle.Tensor.median", ref=_ref_median, aliases=("paddle.median",), torch=_median, domains={"x": unique()},
         note="mode='avg': mean of the two middle sorted values, float32 unless x is float64 (Paddle's "
              "documented dtypes); mode='min': the lower median (torch.median with an axis); " + TIES_NOTE, adaptations=maps_arguments("axis -> dim, keepdim -> keepdim; mode='min' -> torch.median(dim), mode='avg' -> the mean of the two middle sorted values")),
    Spec(api="paddle.unique", ref=_ref_unique, aliases=("paddle.Tensor.unique",), torch=_unique, backward=False,
         domains={"x": int_range(-4, 4)},
         note="torch.unique on the flattened x (axis=None, as Paddle documents: its inverse is 1-D where "
              "Torch's keeps x's shape, a known API difference, Paddle issue #72822); return_index is "
              "composed as the first occurrence (scatter_reduce amin over the inverse), as in Paddle's "
              "documented example; small integer values so duplicates occur",
         strict_torch=_torch_inverse_shape(_unique),
         adaptations=_flat_inverse("paddle.unique") + maps_arguments(
             "return_index composed as the first occurrence (Torch has no return_index)")),
    Spec(api="paddle.unique_consecutive", ref=_ref_unique_consecutive, aliases=("paddle.Tensor.unique_consecutive",),
         torch=_unique_consecutive, backward=False, domains={"x": int_range(0, 3)},
         note="torch.unique_consecutive on the flattened x (axis=None, as Paddle documents: its inverse "
              "is 1-D where Torch's keeps x's shape, the shape difference PaddleAPITest reported); "
              "values in {0, 1, 2} so consecutive repeats occur",
         strict_torch=_torch_inverse_shape(_unique_consecutive),
         adaptations=_flat_inverse("paddle.unique_consecutive")),
    Spec(api="paddle.histogram", ref=_ref_histogram, aliases=("paddle.Tensor.histogram",), torch=_histogram, backward=False,
         note="torch.histc (int64 counts, as Paddle returns; ints binned as float64); with weight or "
              "density torch.histogram over [min, max]",
         strict_torch=lambda **kw: _histogram(**kw, int64_counts=False),
         adaptations=(Adaptation(
             AdaptationKind.DOCUMENTED_SEMANTICS,
             "Paddle documents int64 counts (and bins integer input); torch.histc returns the counts in the "
             "input's floating dtype and refuses integers: the strict layer is torch.histc (integers as float64), "
             "the adapted layer casts its counts to int64",
             link="https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/histogram_en.html"),)
         + maps_arguments("input, bins, min, max -> torch.histc(input, bins, min, max); weight/density -> "
                          "torch.histogram(weight, density) over [min, max]")),
    Spec(api="paddle.std", ref=_ref_deviation(True), aliases=("paddle.Tensor.std",), torch=_deviation("std"), domains=AXIS_TENSOR,
         note="torch.std with correction = 1 if unbiased else 0; axis=None or [] reduces every dim", adaptations=maps_arguments("axis -> dim (None or [] -> every dim), unbiased -> correction (1 or 0), keepdim -> keepdim")),
    Spec(api="paddle.var", ref=_ref_deviation(False), aliases=("paddle.Tensor.var",), torch=_deviation("var"), domains=AXIS_TENSOR,
         note="torch.var; `unbiased` (when given) overrides `correction`; axis=None or [] reduces every dim", adaptations=maps_arguments("axis -> dim (None or [] -> every dim), unbiased (when given) or correction -> correction, keepdim -> keepdim")),
    Spec(api="paddle.Tensor.mean", ref=_ref_mean, aliases=("paddle.mean",), torch=_mean, domains=AXIS_TENSOR,
         note="torch.mean for floats; integer x keeps its dtype: int64 sum // count truncated toward zero",
         strict_torch=_torch_mean_as_float,
         adaptations=(Adaptation(
             AdaptationKind.DOCUMENTED_SEMANTICS,
             "integer x: Paddle documents the mean in x's dtype (on this build the exact sum divided by the count, "
             "truncated toward zero); torch.mean refuses integers: the strict layer is torch.mean of x as float64, "
             "the adapted layer the truncated integer mean (float x: both are torch.mean)",
             link="https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/mean_en.html"),)
         + maps_arguments("axis -> dim (None or [] -> every dim), keepdim -> keepdim")),
    Spec(api="paddle.trace", ref=_ref_trace, aliases=("paddle.Tensor.trace",), torch=_trace,
         note="torch.diagonal(x, offset, axis1, axis2).sum(-1), kept in x's dtype", adaptations=maps_arguments("offset, axis1, axis2 -> torch.diagonal(offset, dim1, dim2).sum(-1)")),
)
