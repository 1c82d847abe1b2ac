"""Helpers for a spec's independent reference (``Spec.ref``): NumPy / SciPy / mpmath, never torch or paddle.

A ``ref`` computes the API's documented semantics on the config's inputs upcast to float64 /
complex128 (integer and bool arrays unchanged), at a precision above float64 where float64 is not
enough, and returns float64 / complex128 arrays (or the API's integer/bool result), one per
flattened output (``trial.flatten_outputs``).  It raises ``NotImplementedError`` for an argument
combination it does not cover: the oracle then simply does not use it.

The helpers here evaluate elementwise in mpmath (``mp_apply``), sum exactly (``fsum`` / ``exact_mean``),
reduce along an axis (``along_axis``) and do small matrix algebra in mpmath (``mp_matmul``,
``mp_matrix`` / ``from_mp``), each rounding to float64 once, at the end.  Django-free and torch-free.
"""
from __future__ import annotations

import contextlib
import math
from fractions import Fraction
from typing import Any, Callable, Sequence

import mpmath
import numpy as np

# The working precision of every mpmath evaluation (significant decimal digits): float64 carries ~16,
# so a result computed at 40 and rounded once is correctly rounded but for the rarest ties.  Refs read it
# when they run (``from ..references import DPS`` inside the ref, or a helper's default), never at import:
# ``precision`` changes it for every ref at once.
DPS = 40
REFERENCE_DPS = DPS  # the precision a reference value is computed at
# ... and the second precision it must agree with, element by element after rounding to float64, to count
# (``apitester.diagnosis.reference.Reference.certain``): a 40-digit SVD of an exactly singular matrix gives a
# smallest singular value of 2e-41 (cond 3.4e41), at 80 digits 1e-81 -- the two disagree, the value is not settled.
CHECK_DPS = 2 * DPS


@contextlib.contextmanager
def precision(dps: int):
    """Every reference evaluates at ``dps`` digits inside (``DPS`` and ``MP_DIGITS`` set; restored after).

    Module state, as mpmath's own working precision is: one reference runs at a time in a process."""
    global DPS, MP_DIGITS
    saved = DPS, MP_DIGITS
    DPS = MP_DIGITS = int(dps)
    try:
        yield
    finally:
        DPS, MP_DIGITS = saved


def working_dps(dps: int | None = None) -> int:
    """``dps`` when given, else the precision references run at now (``DPS``, changed by ``precision``)."""
    return DPS if dps is None else int(dps)


def covered(condition: bool, what: str = "") -> None:
    """Raise NotImplementedError (the oracle skips the reference) unless ``condition`` holds."""
    if not condition:
        raise NotImplementedError(what or "argument combination not covered by the reference")


def is_complex(array: Any) -> bool:
    return isinstance(array, np.ndarray) and array.dtype.kind == "c"


def to_mp(value: Any):
    """A python / numpy scalar as an exact mpmath number (a float64 converts exactly)."""
    if isinstance(value, (complex, np.complexfloating)):
        return mpmath.mpc(float(value.real), float(value.imag))
    if isinstance(value, (bool, np.bool_)):
        return mpmath.mpf(int(value))
    if isinstance(value, (int, np.integer)):
        return mpmath.mpf(int(value))
    return mpmath.mpf(float(value))


def to_f64(value: Any) -> float | complex:
    """An mpmath number rounded once to float64 (complex128 when it has an imaginary part)."""
    if isinstance(value, mpmath.mpc):
        return complex(float(value.real), float(value.imag))
    return float(value)


def mp_apply(fn: Callable, *arrays: Any, dps: int | None = None, complex_out: bool | None = None,
             nan_on_error: bool = True) -> np.ndarray:
    """``fn`` evaluated elementwise in mpmath at ``dps`` digits on broadcast inputs, rounded to float64.

    ``fn`` receives mpmath numbers (NaN and inf arrive as mpmath's nan / inf) and returns one.  A
    ValueError / ZeroDivisionError inside ``fn`` gives NaN when ``nan_on_error`` (the function is
    undefined there).  The result is complex128 when any input is complex or ``complex_out`` says so."""
    arrays = [np.asarray(a) for a in arrays]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    wide = [np.broadcast_to(a, shape).reshape(-1) for a in arrays]
    want_complex = complex_out if complex_out is not None else any(a.dtype.kind == "c" for a in arrays)
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=np.complex128 if want_complex else np.float64)
    with mpmath.workdps(working_dps(dps)):
        for i in range(out.size):
            try:
                value = fn(*(to_mp(a[i]) for a in wide))
            except (ValueError, ZeroDivisionError):
                if not nan_on_error:
                    raise
                out[i] = np.nan
                continue
            if not want_complex and isinstance(value, mpmath.mpc):
                out[i] = float(value.real) if value.imag == 0 else np.nan
            else:
                out[i] = to_f64(value)
    return out.reshape(shape)


def fsum(values: Sequence[float]) -> float:
    """The correctly rounded sum of float64 values (math.fsum; complex parts summed separately)."""
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind == "c":
        return complex(math.fsum(values.real.tolist()), math.fsum(values.imag.tolist()))
    return math.fsum(values.astype(np.float64).tolist())


def exact_mean(values: Sequence[float]) -> float:
    """The correctly rounded mean (exact rational sum over n, rounded once); NaN for no values."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size == 0:
        return math.nan
    if not np.isfinite(values).all():
        return float(np.sum(values))  # nan / inf propagate as IEEE says
    return float(sum(Fraction(v) for v in values.tolist()) / values.size)


def normalise_axis(axis: Any, ndim: int) -> tuple[int, ...]:
    """A Paddle axis argument (None, int, list/tuple, a 0-d / 1-d integer array) as sorted non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, np.ndarray):
        axis = axis.reshape(-1).tolist()
    if isinstance(axis, (int, np.integer)):
        axis = [int(axis)]
    axes = sorted({int(a) % ndim if ndim else 0 for a in axis})
    return tuple(axes) if axes else tuple(range(ndim))


def along_axis(fn: Callable[[np.ndarray], Any], array: np.ndarray, axis: Any = None, keepdims: bool = False,
               dtype=None) -> np.ndarray:
    """``fn`` applied to every lane of ``array`` over ``axis`` (None / int / several axes), giving a scalar each.

    The reduced axes are moved last and flattened, so ``fn`` sees a 1-D array per output element."""
    array = np.asarray(array)
    if array.ndim == 0:
        result = np.asarray(fn(array.reshape(1)), dtype=dtype)
        return result
    axes = normalise_axis(axis, array.ndim)
    keep = [d for d in range(array.ndim) if d not in axes]
    keep_shape = tuple(array.shape[d] for d in keep)
    width = int(np.prod([array.shape[d] for d in axes], dtype=np.int64))
    flat = np.transpose(array, keep + list(axes)).reshape(int(np.prod(keep_shape, dtype=np.int64)), width)
    values = [fn(lane) for lane in flat]
    out = np.asarray(values, dtype=dtype if values else (dtype or np.float64)).reshape(keep_shape)
    if keepdims:
        out = out.reshape(tuple(1 if d in axes else array.shape[d] for d in range(array.ndim)))
    return out


def mp_matrix(array: np.ndarray) -> "mpmath.matrix":
    """A 2-D float64 / complex128 array as an exact mpmath matrix."""
    array = np.asarray(array)
    return mpmath.matrix([[to_mp(v) for v in row] for row in array.tolist()])


def from_mp(matrix, complex_out: bool = False) -> np.ndarray:
    """An mpmath matrix rounded once to a float64 (complex128) array."""
    rows = [[to_f64(matrix[i, j]) for j in range(matrix.cols)] for i in range(matrix.rows)]
    return np.asarray(rows, dtype=np.complex128 if complex_out else np.float64)


def mp_dot(a: Sequence, b: Sequence, dps: int | None = None):
    """sum a_i * b_i in mpmath (exact products, one rounding at ``dps``), as an mpmath number."""
    with mpmath.workdps(working_dps(dps)):
        return mpmath.fdot([to_mp(x) for x in np.asarray(a).reshape(-1).tolist()],
                           [to_mp(y) for y in np.asarray(b).reshape(-1).tolist()])


def mp_matmul(a: np.ndarray, b: np.ndarray, dps: int | None = None) -> np.ndarray:
    """A batched matrix product (numpy matmul's broadcasting, 1-D promotion) computed exactly per element.

    Each element is one ``mpmath.fdot`` at ``dps`` digits rounded once to float64."""
    a, b = np.asarray(a), np.asarray(b)
    squeeze_first = a.ndim == 1
    squeeze_last = b.ndim == 1
    if squeeze_first:
        a = a[None, :]
    if squeeze_last:
        b = b[:, None]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    want_complex = is_complex(a) or is_complex(b)
    out = np.empty(batch + (a.shape[-2], b.shape[-1]), dtype=np.complex128 if want_complex else np.float64)
    dps = working_dps(dps)
    with mpmath.workdps(dps):
        for index in np.ndindex(*batch, a.shape[-2], b.shape[-1]):
            *lead, i, j = index
            row = a[tuple(lead) + (i, slice(None))]
            col = b[tuple(lead) + (slice(None), j)]
            out[index] = to_f64(mp_dot(row, col, dps))
    if squeeze_last:
        out = out[..., 0]
    if squeeze_first:
        out = out[..., 0, :] if not squeeze_last else out[..., 0]
    return out


def describe(spec_api: str, dps: int | None = None) -> str:
    """How the oracle names a spec's reference as evidence."""
    return f"independent reference (NumPy / mpmath at {working_dps(dps)} digits) of {spec_api}"


# ---------------------------------------------------------------- exact rational arithmetic


def _exact_leaf(value: Any):
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return np.vectorize(Fraction, otypes=[object])(value) if value.size else value.astype(object)
        if value.dtype.kind == "c":
            with mpmath.workdps(DPS * 3):
                return np.vectorize(lambda v: mpmath.mpc(v.real, v.imag), otypes=[object])(value) \
                    if value.size else value.astype(object)
        if value.dtype.kind in "iub":
            return value.astype(object)
        return value
    if isinstance(value, (float, np.floating)):
        return Fraction(float(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_exact_leaf(v) for v in value)
    return value


def _finite(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())
    if isinstance(value, (float, np.floating, complex)):
        return math.isfinite(abs(value))
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    return True


def _round_exact(result: Any, complex_out: bool):
    if isinstance(result, (list, tuple)):
        return type(result)(_round_exact(r, complex_out) for r in result)
    array = np.asarray(result, dtype=object)

    def one(v):
        if isinstance(v, Fraction):
            return float(v)  # Fraction -> float is correctly rounded
        if isinstance(v, (mpmath.mpf, mpmath.mpc)):
            return to_f64(v)
        return v

    out = np.vectorize(one, otypes=[np.complex128 if complex_out else object])(array) if array.size else array
    if complex_out:
        return out.astype(np.complex128)
    try:
        return out.astype(np.float64)
    except (TypeError, ValueError):
        return out


def exact_apply(fn: Callable, *args: Any) -> Any:
    """``fn`` (numpy operations only: +, -, *, /, matmul, einsum, sum, ...) on exact values, rounded once.

    Float arrays and scalars become ``Fraction`` object arrays (complex ones mpmath numbers at 120
    digits), integer arrays python ints; ``fn``'s result (an array or a tuple of them) is rounded to
    float64 / complex128.  Where an input is NaN or inf (no rational value), ``fn`` runs on the
    float64 inputs as given: IEEE arithmetic then says where NaN and inf go."""
    complex_out = any(is_complex(a) for a in args if isinstance(a, np.ndarray)) or \
        any(isinstance(a, (list, tuple)) and any(is_complex(v) for v in a) for a in args)
    if not all(_finite(a) for a in args):
        with np.errstate(all="ignore"):
            return fn(*args)
    with mpmath.workdps(DPS * 3):
        result = fn(*(_exact_leaf(a) for a in args))
    return _round_exact(result, complex_out)


def exact_rank(matrix: np.ndarray) -> int | None:
    """The rank of a real float64 matrix decided exactly (its entries are exact rationals), or None for a
    complex or non-finite one.

    A rank is a yes/no question no finite precision settles: a 40-digit SVD of an exactly singular matrix
    gives a smallest singular value of 2e-41, not 0.  The entries scaled by one power of two are integers;
    fraction-free (Bareiss) elimination keeps every intermediate an integer minor, so no rounding happens."""
    a = np.asarray(matrix)
    if a.ndim != 2 or a.dtype.kind not in "fiub" or (a.dtype.kind == "f" and not np.isfinite(a).all()):
        return None
    rows = [[Fraction(float(v)) for v in row] for row in a.astype(np.float64).tolist()]
    scale = math.lcm(1, *(v.denominator for row in rows for v in row))
    m = [[int(v * scale) for v in row] for row in rows]
    rank, previous = 0, 1
    for col in range(a.shape[1]):
        pivot = next((r for r in range(rank, len(m)) if m[r][col] != 0), None)
        if pivot is None:
            continue
        m[rank], m[pivot] = m[pivot], m[rank]
        top = m[rank]
        for r in range(rank + 1, len(m)):
            row, lead = m[r], m[r][col]
            m[r] = [0 if c <= col else (row[c] * top[col] - lead * top[c]) // previous for c in range(len(row))]
        previous, rank = top[col], rank + 1
    return rank


def surely_full_rank(matrix: np.ndarray) -> bool:
    """Whether float64's own SVD already proves full rank: its smallest singular value is over 1e-8 of the
    largest, a billion times LAPACK's error bound (~n eps of the largest) -- the exact rank is then skipped."""
    a = np.asarray(matrix)
    if a.size == 0 or not np.isfinite(a).all():
        return False
    s = np.linalg.svd(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), compute_uv=False)
    return bool(s.size and s[-1] > 1e-8 * s[0])


def exact_cumulative(values: np.ndarray, op: str = "sum") -> np.ndarray:
    """The running sum or product of a 1-D float64 array, each prefix exact and rounded once."""
    values = np.asarray(values)
    if values.dtype.kind == "c" or not np.isfinite(values).all():
        with np.errstate(all="ignore"):
            return np.cumsum(values) if op == "sum" else np.cumprod(values)
    out, acc = np.empty(values.size), Fraction(0 if op == "sum" else 1)
    for i, v in enumerate(values.tolist()):
        acc = acc + Fraction(v) if op == "sum" else acc * Fraction(v)
        try:
            out[i] = float(acc)
        except OverflowError:
            out[i] = math.copysign(math.inf, acc)
    return out


def along_axis_1d(fn: Callable[[np.ndarray], np.ndarray], array: np.ndarray, axis: int) -> np.ndarray:
    """``fn`` (1-D in, 1-D out of the same length) applied to every lane of ``array`` along ``axis``."""
    array = np.asarray(array)
    moved = np.moveaxis(array, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    results = [np.asarray(fn(lane)) for lane in flat]
    width = results[0].shape[-1] if results else moved.shape[-1]
    out = np.asarray(results).reshape(moved.shape[:-1] + (width,)) if results else np.zeros(moved.shape)
    return np.moveaxis(out, -1, axis)


def reference(how: str) -> Callable[[Callable], Callable]:
    """Decorate a ref with how it computes (shown as the reading's evidence): ``@reference("mpmath, 40 digits")``."""
    def mark(fn: Callable) -> Callable:
        fn.how = how
        return fn
    return mark


# ---------------------------------------------------------------- helpers of the nn, vision, indexing, fused and
# geometric families' references (beside their specs, in apitester/specs/<family>.py)

MP_DIGITS = DPS  # digits of the mpmath sums and square roots those references take
EXACT_LIMIT = 200_000  # terms summed exactly (fsum / mpmath) before falling back to float64 NumPy
RATIONAL_LIMIT = 20_000  # terms computed as exact rationals (fractions.Fraction), rounded once


def as_array(value: Any) -> np.ndarray:
    return np.asarray(value)


def as_float64(value: Any) -> np.ndarray:
    array = np.asarray(value)
    return array if array.dtype.kind in "fc" and array.dtype.itemsize >= 8 else array.astype(np.float64)


def channel_last(data_format: Any) -> bool:
    return isinstance(data_format, str) and data_format.upper() in ("NLC", "NWC", "NHWC", "NDHWC")


def mp_module():
    return mpmath


def stable_log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """log_softmax in float64, max-shifted (a row of -inf keeps its shift at 0)."""
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return x - top - np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True))
