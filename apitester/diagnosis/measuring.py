"""Measuring one output against an oracle: each side's error (max abs, max rel, RMSE), the noise floor, and who is
closer (``read_errors``: a side is off when its RMSE is over the floor and over K times the other's).

The rule and its constants are documented here and in docs/diagnosis.md; ``apitester.diagnosis.oracle`` reads
each output with them, ``reference`` measures against the spec's reference by the same rule.
"""
from __future__ import annotations

import math

import numpy as np

from .. import inputs as inp
from ..engine.compare import Out
from ..vocab import Reading
from .records import Errors, OutputReading


# ---------------------------------------------------------------- the rules and their constants

# Two float64 results agree when |paddle64 - torch64| <= AGREE_RTOL * (|torch64| + max|torch64|).
# 1e-9 is ~60x below float32's half-ulp (6e-8) and ~5e5x below float16's, so an agreed oracle is
# exact as far as any config dtype below float64 can tell; it is ~4.5e6 float64 ulps, room for two
# libraries summing in a different order over millions of elements (recursive summation's bound is
# n*eps relative to the sum of magnitudes: 1e7 * 2.2e-16 = 2.2e-9 at worst, pairwise far less).
# The absolute part is scaled by the output's largest magnitude: a cancellation near zero (a sum of
# +-1 values) has float64 rounding relative to its terms, not to its tiny result.
AGREE_RTOL = 1e-9
# A side is "off" when its RMSE to the oracle is over K times the other side's.  Dynamo's accuracy
# check (torch._dynamo.utils.same) passes a result whose RMSE to fp64 is within 2x the eager
# reference's, and uses 3x for float16/bfloat16 and for tensors under 1,000 elements, "in the presence
# of noise" -- shrunk configs are small and the board's failures mostly float16/bfloat16, so 3.
K = 3.0
# ... and over the noise floor: one unit of the output dtype's rounding at the oracle's scale,
# NOISE_ULPS * eps(dtype) * RMS(oracle).  A correctly rounded result has RMSE ~0.29 eps * RMS (half an
# ulp, uniformly distributed), so a side under the floor is within rounding however many times the
# other side's error it is (an exact Torch result, 0 error, makes any Paddle rounding "K times").
NOISE_ULPS = 1.0
# Machine epsilon of each config dtype's significand (bfloat16: 8 bits, float16: 11, float32: 24).
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "complex64": 2.0 ** -23}
UPCAST = {"float16": "float64", "bfloat16": "float64", "float32": "float64", "complex64": "complex128"}
HIGH = ("float64", "complex128")


def as_float(array: np.ndarray) -> np.ndarray:
    return array.astype(np.complex128 if array.dtype.kind == "c" else np.float64)


def rms(values: np.ndarray) -> float:
    """sqrt(mean(values^2)) without overflow: scaled by the largest magnitude (1e246 squared is inf)."""
    values = np.abs(np.asarray(values, dtype=np.float64))
    if values.size == 0:
        return 0.0
    top = float(values.max())
    if top == 0.0 or not math.isfinite(top):
        return top
    return top * float(np.sqrt(np.mean(np.square(values / top))))


def error_to_oracle(values: np.ndarray, oracle: np.ndarray) -> Errors:
    """Max abs, max rel and RMSE of ``values`` to ``oracle`` (a NaN or inf where the oracle has a
    different value counts as an infinite error; equal NaN/inf positions count as 0)."""
    a, b = as_float(values), as_float(oracle)
    same_nonfinite = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
    diff = np.where(same_nonfinite, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    if diff.size == 0:
        return Errors(0.0, 0.0, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(b))
        rmse = rms(diff)
    return Errors(float(diff.max()), float(np.nan_to_num(rel, nan=np.inf, posinf=np.inf).max()), rmse)


def rounded_to(oracle: np.ndarray, dtype: str) -> np.ndarray:
    """The float64 oracle rounded to a config dtype (round to nearest even; bfloat16 via float32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "bfloat16":
            return inp.round_to_bfloat16(oracle.astype(np.float32))
        return oracle.astype(inp.numpy_dtype(dtype))


def oracles_agree(paddle64: np.ndarray, torch64: np.ndarray) -> tuple[bool, float]:
    """(agree, max |paddle64 - torch64| / scale) under AGREE_RTOL (NaN/inf positions must match)."""
    a, b = as_float(paddle64), as_float(torch64)
    if a.shape != b.shape:
        return False, math.inf
    finite = np.isfinite(a) & np.isfinite(b)
    same_nonfinite = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    if not (finite | same_nonfinite).all():
        return False, math.inf
    if not finite.any():
        return True, 0.0
    scale = float(np.abs(b[finite]).max()) or 1.0
    gap = np.abs(a[finite] - b[finite])
    agree = bool((gap <= AGREE_RTOL * (np.abs(b[finite]) + scale)).all())
    return agree, float(gap.max() / scale)


def noise_floor(oracle: np.ndarray, dtype: str) -> float:
    """NOISE_ULPS * eps(dtype) * RMS of the oracle's finite values (the smallest normal if all are 0)."""
    b = np.abs(as_float(oracle))
    scale = rms(b[np.isfinite(b)])
    return NOISE_ULPS * EPS[dtype] * max(scale, float(np.finfo(np.float64).tiny))


def read_errors(paddle_rmse: float, torch_rmse: float, floor: float) -> str:
    """The reading: a side is off when its RMSE is over the floor and over K x the other side's;
    both are off when both are over the floor and neither is K x the other; else within rounding."""
    paddle_over, torch_over = paddle_rmse > floor, torch_rmse > floor
    if paddle_over and paddle_rmse > K * torch_rmse:
        return Reading.PADDLE_OFF
    if torch_over and torch_rmse > K * paddle_rmse:
        return Reading.TORCH_OFF
    if paddle_over and torch_over:
        return Reading.BOTH_OFF
    return Reading.WITHIN_ROUNDING


def no_oracle(label: str, code: str, reason: str) -> OutputReading:
    return OutputReading.none(label, code, reason)


def same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: equal float64 (complex128) values, NaN matching NaN; exact equality for other dtypes."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        return np.asarray(a == b, dtype=bool).reshape(a.shape)
    x, y = as_float(a), as_float(b)
    return (x == y) | (np.isnan(x) & np.isnan(y))


def nonfinite_note(low_p: np.ndarray, low_t: np.ndarray, oracle: np.ndarray, against: str) -> dict:
    """Per side, the NaN / inf it gives where the oracle is finite, or the finite values where it is not."""
    notes = {}
    o = as_float(oracle)
    for name, values in (("paddle", low_p), ("torch", low_t)):
        a = as_float(values)
        if a.shape != o.shape:
            continue
        parts = []
        for what, mask in (("NaN", np.isnan(a) & np.isfinite(o)), ("inf", np.isinf(a) & np.isfinite(o)),
                           ("finite", np.isfinite(a) & ~np.isfinite(o))):
            count = int(mask.sum())
            if count:
                where = f"where {against} is {'NaN/inf' if what == 'finite' else 'finite'}"
                parts.append(f"{what} {where} ({count} of {a.size} elements)")
        if parts:
            notes[name] = "; ".join(parts)
    return notes


def has_nonfinite(*arrays: np.ndarray) -> bool:
    return any(not np.isfinite(as_float(a)).all() for a in arrays)


def measure(label: str, low_p: Out, low_t: Out, oracle: np.ndarray, dtype: str, eps: float,
            against: str) -> OutputReading:
    """Each side's config-dtype result against ``oracle`` rounded to the output's dtype, read by K and the floor."""
    rounded = oracle if dtype in HIGH else rounded_to(oracle, dtype)
    paddle_err, torch_err = error_to_oracle(low_p.array, rounded), error_to_oracle(low_t.array, rounded)
    b = np.abs(as_float(oracle))
    floor = NOISE_ULPS * eps * max(rms(b[np.isfinite(b)]), float(np.finfo(np.float64).tiny))
    return OutputReading(label, read_errors(paddle_err.rmse, torch_err.rmse, floor), dtype=dtype, noise_floor=floor,
                         k=K, paddle=paddle_err, torch=torch_err,
                         nonfinite=nonfinite_note(low_p.array, low_t.array, oracle, against) or None)


def agreeing_mask(paddle64: np.ndarray, torch64: np.ndarray) -> np.ndarray:
    """Elementwise ``oracles_agree``: where the two float64 results agree (within AGREE_RTOL of the output's
    scale, or the same NaN/inf)."""
    a, b = as_float(paddle64), as_float(torch64)
    finite = np.isfinite(a) & np.isfinite(b)
    same_nonfinite = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    scale = float(np.abs(b[finite]).max()) if finite.any() else 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        close = finite & (np.abs(a - b) <= AGREE_RTOL * (np.abs(b) + (scale or 1.0)))
    return close | same_nonfinite
