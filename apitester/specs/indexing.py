"""Indexing, gather & scatter APIs.

Writes through duplicate indices have no defined winner in Torch (and on Paddle's GPU
kernels): where a config allows it, the index domains draw distinct write positions so the
comparison is well defined; where the API documents a sequential order (paddle.scatter's
overwrite mode: the last update of a repeated index wins) the reference implements that
order explicitly instead of relying on Torch's unspecified one.
"""

from __future__ import annotations

import math
import zlib

import warnings

import numpy as np

from ..inputs import indices, precondition
from ..vocab import AdaptationKind
from .base import Adaptation, Spec, maps_arguments, register, torch_call
from ..references import as_array, reference as how


# ---------------------------------------------------------------- independent references (Spec.ref)
# NumPy / mpmath, never torch or paddle (apitester.references: the calling convention and the helpers)


@how("NumPy _ref_scatter (exact)")
def _ref_put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True, **_):
    """Paddle's _ref_put_along_axis: with broadcast, indices broadcast to arr's shape (the axis dim taken from
    indices) unless larger somewhere, values broadcast to indices; then for every index position p,
    out[p with p[axis] = indices[p]] receives values[p] -- assigned, or reduced (add, mul/multiply,
    mean, amin, amax; include_self keeps arr's own value in the reduction)."""
    arr = np.asarray(arr)
    out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
    idx = as_array(indices).astype(np.int64)
    vals = np.asarray(values, dtype=out.dtype)
    ax = int(axis) % arr.ndim if arr.ndim else 0
    if broadcast:
        if all(a >= i for a, i in zip(arr.shape, idx.shape)):
            shape = list(arr.shape)
            shape[ax] = idx.shape[ax]
            idx = np.broadcast_to(idx, shape)
        vals = np.broadcast_to(vals, idx.shape)
    elif vals.size == 1:
        vals = np.broadcast_to(vals.reshape([1] * idx.ndim), idx.shape)
    else:
        vals = vals[tuple(slice(0, s) for s in idx.shape)]
    idx = np.where(idx < 0, idx + arr.shape[ax], idx)
    grids = list(np.indices(idx.shape, sparse=False))
    grids[ax] = idx
    target = tuple(g.reshape(-1) for g in grids)
    flat_vals = np.asarray(vals).reshape(-1)
    if reduce == "assign":
        if len(set(zip(*[t.tolist() for t in target]))) != flat_vals.size:
            raise NotImplementedError("assign through repeated indices: no defined winner")
        out[target] = flat_vals
        return out
    ops = {"add": np.add, "mul": np.multiply, "multiply": np.multiply, "amin": np.minimum, "amax": np.maximum}
    if reduce == "mean":
        total = out.astype(np.float64) if include_self else np.zeros_like(out, dtype=np.float64)
        count = np.ones(out.shape) if include_self else np.zeros(out.shape)
        np.add.at(total, target, flat_vals)
        np.add.at(count, target, 1.0)
        touched = np.zeros(out.shape, dtype=bool)
        touched[target] = True
        mean = total / np.maximum(count, 1)
        if out.dtype.kind != "f":
            mean = np.floor(mean)  # integer mean rounds down (torch's scatter_reduce convention)
        return np.where(touched, mean, out).astype(out.dtype)
    if reduce not in ops:
        raise NotImplementedError(f"reduce {reduce!r}")
    if not include_self:
        touched = np.zeros(out.shape, dtype=bool)
        touched[target] = True
        identity = {"add": 0, "mul": 1, "multiply": 1, "amin": np.inf, "amax": -np.inf}[reduce]
        if out.dtype.kind != "f" and reduce in ("amin", "amax"):
            info = np.iinfo(out.dtype)
            identity = info.max if reduce == "amin" else info.min
        out = np.where(touched, np.asarray(identity).astype(out.dtype), out)
    ops[reduce].at(out, target, flat_vals)
    return out


@how("NumPy flat positions (exact)")
def _ref_fill_diagonal_(x, value, offset=0, wrap=False, **_):
    """Paddle's Tensor.fill_diagonal_: the flat positions k * (sum of the strides) (numpy's
    fill_diagonal; ``wrap`` restarts after a gap on tall 2-D matrices), shifted ``offset`` columns and
    skipped where that leaves the row."""
    arr = np.asarray(x)
    out = arr.copy()
    if arr.ndim < 2 or arr.size == 0:
        return out
    last = arr.shape[-1]
    step = sum(math.prod(arr.shape[i + 1:]) for i in range(arr.ndim))
    limit = arr.size if (wrap and arr.ndim == 2) else min(arr.size, last ** 2 if arr.ndim == 2 else arr.size)
    positions = [i + int(offset) for i in range(0, limit, step) if 0 <= i % last + int(offset) < last]
    flat = out.reshape(-1)
    flat[positions] = value
    return flat.reshape(arr.shape)


@how("NumPy strided view (exact)")
def _ref_set_(x, source=None, shape=None, stride=None, offset=0, **_):
    """x becomes a view of source's storage with ``shape`` and ``stride`` (elements).  ``offset`` is in
    bytes of source's dtype, which the upcast arrays no longer carry: only offset 0 is covered."""
    if source is None:
        return np.empty(0, dtype=np.asarray(x).dtype)
    if offset:
        raise NotImplementedError("a byte offset needs the source's original element size")
    src = np.asarray(source).reshape(-1)
    shape = list(np.asarray(source).shape) if shape is None else [int(s) for s in shape]
    if stride is None:
        stride = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    stride = [int(s) for s in stride]
    grid = np.indices(shape)
    flat = sum(g * s for g, s in zip(grid, stride)) if shape else np.zeros((), dtype=np.int64)
    if np.size(flat) and int(np.max(flat)) >= src.size:
        raise NotImplementedError("the view reads past the end of the source")
    return src[flat]


@how("NumPy slicing (exact)")
def _ref_strided_slice(x, axes, starts, ends, strides, **_):
    """Python / numpy slicing per axis: start and end clamped to the axis, negative strides walk
    backwards (Paddle documents _ref_strided_slice as numpy's x[start:end:stride])."""
    arr = np.asarray(x)
    index = [slice(None)] * arr.ndim
    for axis, start, end, step in zip(axes, starts, ends, strides):
        index[int(axis) % arr.ndim] = slice(int(start), int(end), int(step))
    return arr[tuple(index)].copy()


@how("NumPy, Paddle's documented sequential loop (exact)")
def _ref_scatter(x, index, updates, overwrite=True, **_):
    """overwrite: out[index[i]] = updates[i] in order (the last update of a repeated row wins);
    otherwise the indexed rows are zeroed and every update added."""
    arr = np.asarray(x)
    out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
    idx = as_array(index).astype(np.int64).reshape(-1)
    upd = np.asarray(updates, dtype=out.dtype)
    if overwrite:
        for i, row in enumerate(idx):
            out[row] = upd[i]
        return out
    out[idx] = 0
    np.add.at(out, idx, upd)
    return out


@how("NumPy advanced indexing (exact)")
def _ref_index_put(x, indices, value, accumulate=False, **_):
    """out[indices] = value (accumulate: += value, every repeated position counted)."""
    arr = np.asarray(x)
    out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
    idx = tuple(np.asarray(i) if np.asarray(i).dtype == bool else np.asarray(i).astype(np.int64) for i in indices)
    val = np.asarray(value, dtype=out.dtype)
    if accumulate:
        np.add.at(out, idx, val)
    else:
        positions = np.broadcast_arrays(*[np.nonzero(i)[0] if i.dtype == bool else i for i in idx])
        if len(set(zip(*[p.reshape(-1).tolist() for p in positions]))) != positions[0].size:
            raise NotImplementedError("_ref_index_put through repeated positions: no defined winner")
        out[idx] = val
    return out


def _diagonal_scatter(x, y, offset, dim1, dim2):
    arr = np.asarray(x)
    out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
    a1, a2 = int(dim1) % arr.ndim, int(dim2) % arr.ndim
    view = np.moveaxis(out, (a1, a2), (-2, -1))
    rows, cols = view.shape[-2:]
    k = int(offset)
    count = max(0, min(rows, cols - k) if k >= 0 else min(rows + k, cols))
    i = np.arange(count)
    r, c = (i, i + k) if k >= 0 else (i - k, i)
    view[..., r, c] = np.asarray(y)
    return out


@how("NumPy (exact)")
def _ref_diagonal_scatter(x, y, offset=0, axis1=0, axis2=1, **_):
    """x with its diagonal (offset, axis1, axis2; numpy.diagonal's layout, diagonal last) replaced by y."""
    return _diagonal_scatter(x, y, offset, axis1, axis2)


@how("NumPy (exact)")
def _ref_fill_diagonal_tensor(x, y, offset=0, dim1=0, dim2=1, **_):
    """x with its diagonal (offset, dim1, dim2) replaced by y (the diagonal as the last dimension of y)."""
    return _diagonal_scatter(x, y, offset, dim1, dim2)


def _numpy_index(item):
    """Paddle's index rules in NumPy terms: a list is ONE advanced index (Paddle calls paddle.to_tensor on
    it; numpy >= 1.23 reads it the same way), a list holding arrays is their stack; tuples index axis by
    axis; integer arrays of any width index, bool arrays mask; ints, slices, None and Ellipsis as Python's."""
    if isinstance(item, list):
        if any(isinstance(v, np.ndarray) for v in item):
            return np.stack([np.asarray(v).astype(np.int64) for v in item])
        return np.asarray(item)
    if isinstance(item, tuple):
        return tuple(_numpy_index(v) for v in item)
    if isinstance(item, np.ndarray) and item.dtype.kind in "iu":
        return item.astype(np.int64)
    return item


@how("NumPy indexing (exact)")
def _ref_getitem(x, item, **_):
    """x[item] under Paddle's documented (numpy-like) indexing, a list read as one advanced index."""
    return np.asarray(x)[_numpy_index(item)].copy()


_SCATTER_REDUCE = {"add": "sum", "mul": "prod", "multiply": "prod", "mean": "mean", "amin": "amin", "amax": "amax"}


def _put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True, **_):
    import torch

    axis = axis % arr.ndim if arr.ndim else 0
    if not isinstance(values, torch.Tensor):
        values = torch.tensor(values, dtype=arr.dtype)
    if broadcast:
        # Paddle: broadcast indices to arr's shape with the axis dim taken from indices,
        # unless indices is larger than arr somewhere; values follow indices.
        if all(a >= i for a, i in zip(arr.shape, indices.shape)):
            shape = list(arr.shape)
            shape[axis] = indices.shape[axis]
            indices = indices.expand(shape)
        values = values.expand(indices.shape)
    elif values.numel() == 1:
        values = values.reshape([1] * indices.ndim).expand(indices.shape)
    values = values.to(arr.dtype)
    indices = indices.long()
    # scatter reads only the leading index-shaped block of values; slicing it makes
    # autograd give the rest a zero gradient (torch rejects a smaller index otherwise)
    if tuple(values.shape) != tuple(indices.shape):
        values = values[tuple(slice(0, s) for s in indices.shape)]
    if reduce == "assign":
        return torch.scatter(arr, axis, indices, values)
    return torch.scatter_reduce(arr, axis, indices, values, reduce=_SCATTER_REDUCE[reduce],
                                include_self=include_self)


register(
    Spec(
        api="paddle.put_along_axis",
        aliases=("paddle.Tensor.put_along_axis",),
        torch=_put_along_axis,
        ref=_ref_put_along_axis,
        # Distinct indices along each row: with "assign" the winner of a duplicate index is
        # unspecified in both frameworks.
        domains={"indices": indices(of="arr", axis="axis", unique=True)},
        note="torch.scatter / scatter_reduce after Paddle's broadcast rules", adaptations=maps_arguments("arr, indices, values, axis, reduce, include_self, broadcast -> torch.scatter / scatter_reduce(input, dim, index, src, reduce, include_self) after Paddle's broadcast rules"),
    ),
)


# ---------------------------------------------------------------- input domains


def _shape(value):
    return tuple(getattr(value, "shape", ()) or ())


@precondition("valid indices for __getitem__")
def getitem_index(ctx):
    """Valid integer indices for paddle.Tensor.__getitem__.

    A list index is one advanced index over axis 0 (Paddle stacks it, as numpy does); in a
    tuple index the k-th element indexes axis k.
    """
    x_shape = _shape(ctx.args["x"])
    item = ctx.args.get("item")
    axis = (ctx.index or 0) if isinstance(item, tuple) else 0
    if ctx.dtype == "bool":
        return ctx.rng.random(ctx.shape) < 0.5
    size = x_shape[axis] if axis < len(x_shape) else 1
    return ctx.rng.integers(0, max(size, 1), ctx.shape).astype(ctx.dtype)


def _shared_rng(ctx, salt: str) -> np.random.Generator:
    """One generator for all elements of a list argument (elements must agree jointly)."""
    key = f"{salt}|{sorted((k, repr(v)) for k, v in ctx.args.items())}"
    return np.random.default_rng(zlib.crc32(key.encode()))


@precondition("valid indices addressing distinct positions (accumulate=False has no defined winner otherwise)")
def index_put_indices(ctx):
    """Indices for paddle.index_put: integer index tensors jointly address DISTINCT
    positions (accumulate=False has no defined winner for a repeated position), and a
    bool index selects exactly as many elements as the integer indices broadcast to along
    their last dim, so the indexed shape matches `value`."""
    x_shape = _shape(ctx.args["x"])
    specs = list(ctx.args["indices"])
    pos = ctx.index or 0
    # the x dim each element starts at (a bool mask of rank d consumes d dims)
    starts, dim = [], 0
    for spec in specs:
        starts.append(dim)
        dim += len(_shape(spec)) if spec.dtype == "bool" else 1
    ints = [i for i, s in enumerate(specs) if s.dtype != "bool"]
    bshape = np.broadcast_shapes(*(_shape(specs[i]) for i in ints)) if ints else ()
    if ctx.dtype == "bool":
        n = math.prod(ctx.shape)
        k = bshape[-1] if bshape else int(ctx.rng.integers(1, max(n, 1) + 1))
        k = min(k, n)
        mask = np.zeros(n, dtype=bool)
        mask[ctx.rng.permutation(n)[:k]] = True
        return mask.reshape(ctx.shape)
    sizes = [x_shape[starts[i]] if starts[i] < len(x_shape) else 1 for i in ints]
    count, combos = math.prod(bshape), math.prod(sizes)
    if tuple(ctx.shape) != tuple(bshape) or count > combos:
        return ctx.rng.integers(0, max(sizes[ints.index(pos)], 1), ctx.shape).astype(ctx.dtype)
    rng = _shared_rng(ctx, "index_put")
    if combos <= 10_000_000:
        flat = rng.choice(combos, count, replace=False)
    else:
        flat = np.unique(rng.integers(0, combos, 2 * count))[:count]
        rng.shuffle(flat)
    coords = np.unravel_index(flat, sizes)
    return coords[ints.index(pos)].reshape(ctx.shape).astype(ctx.dtype)


@precondition("valid row indices, distinct where overwrite has no defined winner")
def scatter_index(ctx):
    """Row indices for paddle.scatter: distinct when there are no more updates than rows
    (overwrite mode has no defined winner on GPU), otherwise any valid row."""
    rows = _shape(ctx.args["x"])[0] if _shape(ctx.args["x"]) else 1
    n = math.prod(ctx.shape)
    if n <= rows:
        return ctx.rng.permutation(rows)[:n].reshape(ctx.shape).astype(ctx.dtype)
    return ctx.rng.integers(0, rows, ctx.shape).astype(ctx.dtype)


# ---------------------------------------------------------------- references


def _torch_index(item):
    """Paddle's index rules in Torch terms: a Python list is ONE advanced index (Paddle calls
    paddle.to_tensor on it, like numpy >= 1.23), where Torch would read a list of
    sequences as a tuple of indices."""
    import torch

    if isinstance(item, list):
        if any(isinstance(v, torch.Tensor) for v in item):
            return torch.stack([torch.as_tensor(v).long() for v in item])
        return torch.as_tensor(item)
    if isinstance(item, tuple):
        return tuple(_torch_index(v) for v in item)
    if isinstance(item, torch.Tensor) and item.dtype in (torch.int32, torch.int16, torch.int8, torch.uint8):
        return item.long()
    return item


def _getitem(x, item, **_):
    return x[_torch_index(item)]


def _torch_index_plain(item):
    """The index as the plain Torch call reads it: integer tensors as int64 (a pure mapping),
    a list left a list (Torch reads a list holding sequences as a tuple of indices)."""
    import torch

    if isinstance(item, list):
        return [_torch_index_plain(v) for v in item]
    if isinstance(item, tuple):
        return tuple(_torch_index_plain(v) for v in item)
    if isinstance(item, torch.Tensor) and item.dtype in (torch.int32, torch.int16, torch.int8, torch.uint8):
        return item.long()
    return item


def _getitem_plain(x, item, **_):
    with warnings.catch_warnings():  # Torch's deprecation note on a list read as a tuple: that reading is the point
        warnings.simplefilter("ignore", UserWarning)
        return x[_torch_index_plain(item)]


def _set_(x, source=None, shape=None, stride=None, offset=0, **_):
    """x becomes a view of source's storage: as_strided with Paddle's offset, which is in
    BYTES (Torch's storage_offset counts elements)."""
    import torch

    if source is None:
        return torch.empty(0, dtype=x.dtype)
    shape = list(source.shape) if shape is None else list(shape)
    if stride is None:
        stride = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    itemsize = source.element_size()
    if offset % itemsize:
        raise ValueError(f"offset {offset} is not a multiple of the element size {itemsize}")
    start = offset // itemsize
    last = start + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else start - 1
    if last >= source.numel():
        raise ValueError(
            f"the view (shape {shape}, stride {stride}, offset {offset} bytes) reads element "
            f"{last} of a source with {source.numel()} elements: out of bounds"
        )
    return torch.as_strided(source.detach().contiguous().reshape(-1), shape, stride, start)


def _fill_diagonal_(x, value, offset=0, wrap=False, **_):
    """torch's fill_diagonal_ (numpy's rule: flat positions k*(sum of strides); `wrap`
    restarts after a gap on tall matrices) extended with Paddle's `offset`: each position
    is shifted `offset` columns and skipped when that leaves its row."""
    import torch

    out = x.clone()
    if x.ndim < 2 or x.numel() == 0:
        return out
    last = x.shape[-1]
    step = sum(math.prod(x.shape[i + 1:]) for i in range(x.ndim))
    limit = x.numel() if (wrap and x.ndim == 2) else min(x.numel(), last ** 2 if x.ndim == 2 else x.numel())
    positions = [
        i + offset for i in range(0, limit, step) if 0 <= i % last + offset < last
    ]
    if not positions:
        return out
    flat = out.reshape(-1)
    index = torch.tensor(positions, dtype=torch.long)
    filled = flat.index_fill(0, index, value)
    return filled.reshape(x.shape)


def _fill_diagonal_paddle(x, value, offset=0, wrap=False, **_):
    """The in-place method on a copy: Paddle refuses in-place writes to a leaf that
    requires grad, and the gradient then flows through the copy to x."""
    return x.clone().fill_diagonal_(value, offset=offset, wrap=wrap)


def _index_put(x, indices, value, accumulate=False, **_):
    import torch

    idx = tuple(i if i.dtype == torch.bool else i.long() for i in indices)
    return torch.index_put(x, idx, value, accumulate=accumulate)


def _scatter(x, index, updates, overwrite=True, **_):
    """Paddle's documented loop: overwrite -> x[index[i]] = updates[i] in order (the last
    update of a repeated row wins); accumulate -> the indexed rows are zeroed, then every
    update is added."""
    import torch

    index = index.reshape(-1).long()
    if overwrite:
        n = index.shape[0]
        order = torch.arange(n)
        last = torch.full((x.shape[0],), -1, dtype=torch.long).scatter_reduce(
            0, index, order, reduce="amax", include_self=True
        )
        keep = last[index] == order
        return x.index_copy(0, index[keep], updates[keep])
    zeroed = x.index_fill(0, index, 0)
    return zeroed.index_add(0, index, updates)


def _scatter_plain(x, index, updates, overwrite=True, **_):
    """The plain Torch calls: index_copy (overwrite; the order of repeated rows is Torch's) and
    index_add onto x (accumulate; Torch keeps x's rows, Paddle zeroes them first)."""
    index = index.reshape(-1).long()
    return x.index_copy(0, index, updates) if overwrite else x.index_add(0, index, updates)


def _strided_slice(x, axes, starts, ends, strides, **_):
    """Python slicing per axis (start/end clamped, negative strides walk backwards); Torch
    has no negative-step slices, so the kept positions are gathered with index_select."""
    import torch

    out = x
    for axis, start, end, step in zip(axes, starts, ends, strides):
        axis = int(axis) % x.ndim
        positions = range(*slice(int(start), int(end), int(step)).indices(x.shape[axis]))
        out = out.index_select(axis, torch.tensor(list(positions), dtype=torch.long))
    return out


# ---------------------------------------------------------------- entries

register(
    Spec(
        api="paddle.Tensor.__getitem__",
        torch=_getitem,
        ref=_ref_getitem,
        domains={"item": getitem_index},
        note="Tensor indexing with Paddle's rule that a list index is a single advanced "
        "index (stacked, as in numpy >= 1.23); Torch reads a list of sequences as a tuple, "
        "so the reference stacks it first.",
        strict_torch=_getitem_plain,
        adaptations=(Adaptation(
            AdaptationKind.DOCUMENTED_SEMANTICS,
            "Paddle reads a list index as ONE advanced index (paddle.to_tensor of the list, numpy >= 1.23's "
            "rule), Torch reads a list holding tensors as a tuple of indices: the adapted layer stacks the "
            "list before Torch indexes, the strict layer is the plain x[item]",
            link="https://www.paddlepaddle.org.cn/documentation/docs/en/guides/advanced/tensor_index_en.html"),
        ) + maps_arguments("item -> Tensor.__getitem__'s index (Tensor indices as int64, slices and None as given)"),
    ),
    Spec(
        api="paddle.Tensor.set_",
        torch=_set_,
        ref=_ref_set_,
        backward=False,
        note="torch.as_strided(source, shape, stride, offset // itemsize): Paddle's offset "
        "is in bytes. A view reaching past the source's elements is refused (torch_error) "
        "rather than compared on out-of-bounds memory.", adaptations=maps_arguments("source, shape, stride -> torch.as_strided(size, stride); offset in bytes -> storage_offset = offset // itemsize"),
    ),
    Spec(
        api="paddle.Tensor.fill_diagonal_",
        torch=_fill_diagonal_,
        ref=_ref_fill_diagonal_,
        paddle=_fill_diagonal_paddle,
        note="torch.Tensor.fill_diagonal_ semantics (incl. wrap) plus Paddle's offset "
        "(diagonal shifted by offset columns, positions leaving their row skipped), "
        "on a clone.", adaptations=maps_arguments("value, wrap -> Tensor.fill_diagonal_(fill_value, wrap) on a clone; Paddle's offset -> the diagonal positions shifted by offset columns"),
    ),
    Spec(
        api="paddle.Tensor.fill_diagonal_tensor",
        torch=torch_call("torch.diagonal_scatter", x="input", y="src"),
        ref=_ref_fill_diagonal_tensor,
        note="torch.diagonal_scatter(x, y, offset, dim1, dim2).",
    ),
    Spec(
        api="paddle.index_put",
        torch=_index_put,
        ref=_ref_index_put,
        domains={"indices": index_put_indices},
        note="torch.index_put (int indices as int64). Integer indices are drawn to address "
        "distinct positions so accumulate=False is well defined; a bool index selects as "
        "many elements as the integer indices' last dim.", adaptations=maps_arguments("x, indices, value, accumulate -> torch.index_put(input, indices (int as int64), values, accumulate)"),
    ),
    Spec(
        api="paddle.diagonal_scatter",
        torch=torch_call("torch.diagonal_scatter", x="input", y="src", axis1="dim1", axis2="dim2"),
        ref=_ref_diagonal_scatter,
        note="torch.diagonal_scatter(x, y, offset, dim1=axis1, dim2=axis2).",
    ),
    Spec(
        api="paddle.scatter",
        torch=_scatter,
        ref=_ref_scatter,
        domains={"index": scatter_index},
        note="Paddle's documented loop in Torch ops: overwrite -> index_copy keeping the LAST "
        "update of each repeated row (scatter_reduce amax over positions); accumulate -> "
        "index_fill 0 then index_add. Indices drawn distinct when there are no more "
        "updates than rows.",
        strict_torch=_scatter_plain,
        adaptations=(Adaptation(
            AdaptationKind.DOCUMENTED_SEMANTICS,
            "Paddle documents scatter as a sequential loop: overwrite=True keeps the LAST update of a repeated "
            "row, overwrite=False zeroes the indexed rows and then adds every update; the plain "
            "x.index_copy / x.index_add leave repeated rows' order to Torch and add onto x's rows",
            link="https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/scatter_en.html"),
        ) + maps_arguments("x, index, updates, overwrite -> index_copy (overwrite) / index_fill 0 then index_add (accumulate)"),
    ),
    Spec(
        api="paddle.strided_slice",
        torch=_strided_slice,
        ref=_ref_strided_slice,
        note="Python slice semantics per axis via index_select (Torch has no negative steps).", adaptations=maps_arguments("axes, starts, ends, strides -> Python slices per axis, taken with index_select (Torch has no negative steps)"),
    ),
)
