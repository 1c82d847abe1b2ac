"""Deterministic numpy inputs from a config's tensor specs and the API's input domains.

The same numpy arrays feed Paddle and Torch.  numpy has no bfloat16: bfloat16 inputs are
drawn as float32, rounded to values bfloat16 represents exactly (round to nearest even),
and converted on each side, so both frameworks see identical numbers.

A Domain is a callable ``domain(ctx) -> np.ndarray``; ``ctx`` carries ``shape``,
``dtype`` (a name such as "float32" or "bfloat16"), ``rng``, ``args`` (the bound parsed
arguments; tensors as TensorSpec) and ``arrays`` (already materialised params by name).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .config import Call, Constructor, Name, TensorSpec

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
COMPLEX_DTYPES = ("complex64", "complex128")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")

ITEMSIZE = {  # bytes per element of each config dtype name (the only item-size table)
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "float16": 2, "bfloat16": 2, "uint16": 2,
    "int32": 4, "float32": 4, "int64": 8, "float64": 8, "complex64": 8, "complex128": 16,
}


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype arrays of this dtype name are held in (bfloat16 -> float32)."""
    if name in ("bfloat16", "uint16"):
        return np.dtype(np.float32)
    return np.dtype(name)


def round_to_bfloat16(array: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), still as float32."""
    shape = np.shape(array)
    a = np.array(array, dtype=np.float32, order="C").reshape(-1)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    # keep NaN as NaN (the rounding above could carry a NaN payload into inf)
    return np.where(np.isnan(a), np.float32(np.nan), out).reshape(shape)


@dataclass
class InputTensor:
    """A materialised tensor input: the numpy values plus the declared dtype name."""

    array: np.ndarray
    dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)


@dataclass
class DomainContext:
    shape: tuple[int, ...]
    dtype: str
    rng: np.random.Generator
    args: Mapping[str, Any]
    arrays: Mapping[str, Any]
    name: str = ""
    index: int | None = None  # position inside a list/tuple argument


# ---------------------------------------------------------------- defaults


def _uniform(ctx: DomainContext, lo: float, hi: float) -> np.ndarray:
    dt = ctx.dtype
    if dt in COMPLEX_DTYPES:
        real = ctx.rng.uniform(lo, hi, ctx.shape)
        imag = ctx.rng.uniform(lo, hi, ctx.shape)
        return (real + 1j * imag).astype(dt)
    return ctx.rng.uniform(lo, hi, ctx.shape).astype(numpy_dtype(dt))


def default_values(ctx: DomainContext) -> np.ndarray:
    """floats/complex uniform in [-1, 1), ints in [-10, 10) (unsigned [0, 10)), bool random."""
    dt = ctx.dtype
    if dt == "bool":
        return ctx.rng.random(ctx.shape) < 0.5
    if dt in INT_DTYPES:
        lo = 0 if dt.startswith("u") else -10
        return ctx.rng.integers(lo, 10, ctx.shape).astype(dt)
    return _uniform(ctx, -1.0, 1.0)


# ---------------------------------------------------------------- domain helpers


def positive(lo: float = 0.1, hi: float = 2.0) -> Callable:
    """Strictly positive values in [lo, hi) (ints: [1, 10))."""

    def domain(ctx):
        if ctx.dtype in INT_DTYPES:
            return ctx.rng.integers(1, 10, ctx.shape).astype(ctx.dtype)
        return _uniform(ctx, lo, hi)

    return domain


def unit_open(margin: float = 0.01) -> Callable:
    """Values in the open interval (0, 1), kept ``margin`` away from both ends."""

    def domain(ctx):
        return _uniform(ctx, margin, 1.0 - margin)

    return domain


def range_(lo: float, hi: float) -> Callable:
    """Uniform in [lo, hi) for floats, integers in [lo, hi) for ints."""

    def domain(ctx):
        if ctx.dtype in INT_DTYPES:
            return ctx.rng.integers(math.ceil(lo), math.ceil(hi), ctx.shape).astype(ctx.dtype)
        return _uniform(ctx, lo, hi)

    return domain


def int_range(lo: int, hi: int) -> Callable:
    """Integer values in [lo, hi) in whatever dtype the tensor has."""

    def domain(ctx):
        values = ctx.rng.integers(lo, hi, ctx.shape)
        return values.astype(numpy_dtype(ctx.dtype))

    return domain


def nonzero(lo: float = 0.5, hi: float = 1.5) -> Callable:
    """Values with |v| in [lo, hi) and a random sign (ints: +-[1, 10))."""

    def domain(ctx):
        sign = np.where(ctx.rng.random(ctx.shape) < 0.5, -1, 1)
        if ctx.dtype in INT_DTYPES:
            mag = ctx.rng.integers(1, 10, ctx.shape)
            if ctx.dtype.startswith("u"):
                sign = 1
            return (sign * mag).astype(ctx.dtype)
        return (sign * ctx.rng.uniform(lo, hi, ctx.shape)).astype(numpy_dtype(ctx.dtype))

    return domain


def unique(lo: float = -1.0, hi: float = 1.0) -> Callable:
    """Pairwise distinct values (a shuffled even grid over [lo, hi); ints: a permutation)."""

    def domain(ctx):
        n = math.prod(ctx.shape)
        if ctx.dtype in INT_DTYPES or ctx.dtype == "bool":
            base = np.arange(n) - (0 if ctx.dtype.startswith("u") else n // 2)
            return ctx.rng.permutation(base).reshape(ctx.shape).astype(ctx.dtype)
        # distinct in the tensor's own precision: space the grid by at least 2 ulps-ish
        grid = np.linspace(lo, hi, n, endpoint=False) if n else np.zeros(0)
        if ctx.dtype in ("float16", "bfloat16") and n > 1:
            span = 2048 if ctx.dtype == "float16" else 256
            if n > span:  # not enough distinct low-precision values in [lo, hi): widen
                grid = np.arange(n) - n / 2
        return ctx.rng.permutation(grid).reshape(ctx.shape).astype(numpy_dtype(ctx.dtype))

    return domain


def spd(jitter: float | None = None) -> Callable:
    """Symmetric positive definite matrices over the last two dims: A·Aᵀ/n + I."""

    def domain(ctx):
        *batch, n, m = ctx.shape
        if n != m:
            raise ValueError(f"spd() needs square matrices, got shape {ctx.shape}")
        a = ctx.rng.uniform(-1, 1, (*batch, n, n))
        mat = a @ np.swapaxes(a, -1, -2) / max(n, 1) + np.eye(n) * (1.0 if jitter is None else jitter)
        if ctx.dtype in COMPLEX_DTYPES:
            return mat.astype(ctx.dtype)
        return mat.astype(numpy_dtype(ctx.dtype))

    return domain


def wide(min_exponent: float = -3.0) -> Callable:
    """Values spanning the dtype's whole finite range: random sign, log-uniform magnitude.

    For APIs whose reported failures involve range limits (e.g. a float64 clip that used
    float32's max as its default bound).  Ints: uniform over [-65535, 65535).
    """

    def domain(ctx):
        if ctx.dtype in INT_DTYPES or ctx.dtype == "bool":
            return default_values(ctx) if ctx.dtype == "bool" else \
                ctx.rng.integers(-65535, 65535, ctx.shape).astype(ctx.dtype)
        finfo = np.finfo(np.float32 if ctx.dtype in ("bfloat16", "complex64") else
                         np.float64 if ctx.dtype == "complex128" else numpy_dtype(ctx.dtype))
        top = math.log10(float(finfo.max)) - 0.5
        mag = 10.0 ** ctx.rng.uniform(min_exponent, top, ctx.shape)
        sign = np.where(ctx.rng.random(ctx.shape) < 0.5, -1.0, 1.0)
        return (sign * mag).astype(numpy_dtype(ctx.dtype))

    return domain


def ties_with(other: str = "x", fraction: float = 0.1) -> Callable:
    """Default values, but a ``fraction`` of elements equal to the broadcast partner
    element of argument ``other`` (exercises tie-breaking, e.g. maximum's gradient)."""

    def domain(ctx):
        values = default_values(ctx)
        partner = ctx.arrays.get(other)
        if not isinstance(partner, np.ndarray):
            return values
        try:
            full = np.broadcast_to(partner, np.broadcast_shapes(partner.shape, values.shape))
        except ValueError:
            return values
        # reduce the broadcast partner to this argument's shape
        lead = full.ndim - values.ndim
        index = (0,) * lead + tuple(slice(0, 1) if s == 1 else slice(None) for s in values.shape)
        aligned = full[index].reshape(values.shape)
        mask = ctx.rng.random(values.shape) < fraction
        return np.where(mask, aligned.astype(values.dtype), values)

    return domain


def _arg_value(ctx: DomainContext, key: Any) -> Any:
    if isinstance(key, str) and key in ctx.args:
        return ctx.args[key]
    return key


def _shape_of(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, TensorSpec):
        return value.shape
    if isinstance(value, InputTensor):
        return value.shape
    if isinstance(value, np.ndarray):
        return value.shape
    return None


def indices(of: str = "arr", axis: str | int | None = "axis", unique: bool = False) -> Callable:
    """Valid indices for another argument ``of`` along ``axis`` (an argument name or an int).

    ``axis`` resolving to None means the flattened size.  ``unique=True`` draws distinct
    indices along the last dim of the index tensor itself (no duplicate writes for
    scatter with "assign", where the winner of a duplicate is unspecified).
    """

    def domain(ctx):
        target = ctx.arrays.get(of, ctx.args.get(of))
        shape = _shape_of(target)
        if shape is None:
            raise ValueError(f"indices(of={of!r}): argument {of!r} is not a tensor")
        ax = _arg_value(ctx, axis)
        if isinstance(ax, TensorSpec):
            ax = None
        size = math.prod(shape) if ax is None else (shape[ax] if shape else 1)
        size = max(int(size), 1)
        if unique and ctx.shape:
            last = ctx.shape[-1]
            rows = math.prod(ctx.shape[:-1])
            if last <= size:
                out = np.stack([ctx.rng.permutation(size)[:last] for _ in range(rows)]) if rows else np.zeros((0, last))
                return out.reshape(ctx.shape).astype(numpy_dtype(ctx.dtype))
        return ctx.rng.integers(0, size, ctx.shape).astype(numpy_dtype(ctx.dtype))

    return domain


def axes(of: str = "x") -> Callable:
    """Valid axis values for argument ``of``: distinct dims in [-ndim, ndim), random sign.

    For axis parameters given as a Tensor (``axis=Tensor([1],"int64")``).
    """

    def domain(ctx):
        shape = _shape_of(ctx.arrays.get(of, ctx.args.get(of)))
        ndim = max(len(shape or ()), 1)
        count = math.prod(ctx.shape)
        if count > ndim:
            raise ValueError(f"axes(of={of!r}): {count} axes asked for a {ndim}-d tensor")
        dims = ctx.rng.permutation(ndim)[:count]
        signs = ctx.rng.random(count) < 0.5
        dims = np.where(signs, dims - ndim, dims)
        return dims.reshape(ctx.shape).astype(numpy_dtype(ctx.dtype))

    return domain


def probabilities(axis: int = -1) -> Callable:
    """Non-negative values summing to 1 along ``axis``."""

    def domain(ctx):
        values = ctx.rng.uniform(0.05, 1.0, ctx.shape)
        if values.ndim:
            values = values / values.sum(axis=axis, keepdims=True)
        else:
            values = np.ones(())
        return values.astype(numpy_dtype(ctx.dtype))

    return domain


def one_of(values) -> Callable:
    """Each element drawn from ``values``."""
    choices = np.asarray(list(values))

    def domain(ctx):
        return ctx.rng.choice(choices, ctx.shape).astype(numpy_dtype(ctx.dtype))

    return domain


# ---------------------------------------------------------------- materialisation


def _rng(seed: int, name: str, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode()), index])


def _finish(array: np.ndarray, spec: TensorSpec) -> InputTensor:
    target = numpy_dtype(spec.dtype)
    array = np.asarray(array)
    if array.shape != spec.shape:
        array = np.broadcast_to(array, spec.shape)
    # np.array, not ascontiguousarray: the latter turns 0-d into shape (1,)
    array = np.array(array, dtype=target, order="C")
    if spec.dtype in ("bfloat16", "uint16"):
        array = round_to_bfloat16(array)
    return InputTensor(array, "bfloat16" if spec.dtype == "uint16" else spec.dtype)


def _make(spec: TensorSpec, name: str, index: int, seed: int, domain, args, arrays) -> InputTensor:
    ctx = DomainContext(spec.shape, "bfloat16" if spec.dtype == "uint16" else spec.dtype,
                        _rng(seed, name, index), args, arrays, name, index if index else None)
    values = (domain or default_values)(ctx)
    return _finish(values, spec)


def _materialise_value(value, name, seed, domain, args, arrays, counter):
    if isinstance(value, TensorSpec):
        counter[0] += 1
        return _make(value, name, counter[0] - 1, seed, domain, args, arrays)
    if isinstance(value, list):
        return [_materialise_value(v, name, seed, domain, args, arrays, counter) for v in value]
    if isinstance(value, tuple):
        return tuple(_materialise_value(v, name, seed, domain, args, arrays, counter) for v in value)
    if isinstance(value, slice):
        return slice(*(_materialise_value(v, name, seed, domain, args, arrays, counter)
                       for v in (value.start, value.stop, value.step)))
    if isinstance(value, dict):  # a **kwargs parameter
        return {k: _materialise_value(v, f"{name}.{k}", seed, domain, args, arrays, [0]) for k, v in value.items()}
    return value


def materialise(bound: Mapping[str, Any], domains: Mapping[str, Any] | None = None, seed: int = 0) -> dict[str, Any]:
    """Replace every TensorSpec in the bound arguments by an InputTensor.

    Params without a domain are drawn first, then params with a domain in signature
    order, so a domain (e.g. ``indices(of="arr")``) can look at other params' arrays.
    Each tensor's generator is seeded from (seed, param name, position), so values do not
    depend on evaluation order.
    """
    domains = domains or {}
    out: dict[str, Any] = {}
    arrays: dict[str, Any] = {}
    ordered = [k for k in bound if k not in domains] + [k for k in bound if k in domains]
    for key in ordered:
        value = bound[key]
        mat = _materialise_value(value, key, seed, domains.get(key), bound, arrays, [0])
        out[key] = mat
        arrays[key] = _strip(mat)
    return {k: out[k] for k in bound}


def _strip(value):
    if isinstance(value, InputTensor):
        return value.array
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_strip(v) for v in value)
    return value


def estimate_bytes(call: Call) -> int:
    """Bytes of all input tensors of a call, as declared (float32 for bfloat16 generation)."""
    total = 0
    for spec in call.tensors():
        size = ITEMSIZE.get(spec.dtype, 8)
        if spec.dtype in ("bfloat16", "uint16"):
            size = 4
        total += spec.numel * size
    return total


def plain_value(value: Any) -> Any:
    """Non-tensor parsed values as plain Python: dtype constructors become their name."""
    if isinstance(value, Constructor):
        name = value.dtype_name
        return name if name is not None else value
    if isinstance(value, Name):
        return value.name
    if isinstance(value, list):
        return [plain_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain_value(v) for v in value)
    return value
