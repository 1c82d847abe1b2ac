"""An audit of the engine's "who is off" readings against a truth computed outside the engine (issue 44).

    .venv/bin/python benchmarks/readings_audit.py --release 3.3.1 --sample 200 [--seed 0] [--json]
    .venv/bin/python benchmarks/readings_audit.py --release 3.0.0 --sample 200   # re-runs itself in that env

**The sample.** The configs of ``reports/ci_ce_cpu/error_config.txt`` (read at run time under
``apitester.reports.reports_dir()``) of the APIs this audit has an independent truth for (``TRUTHS``), of at most
``--max-elements`` input elements, stratified by API: the APIs in a seeded random order, each one's configs shuffled
with the same seed, taken round-robin. Each config's verdict is run with the readings (``run_with_readings``): an
inexact config gives its ``closer`` reading (on ``closer_draw``, the worst inexact draw read, else
``inexact_draw``; of ``closer_output``); a strict value failure
(``accuracy_error``) also gives its diagnosis reading (``diagnose_config``'s ``reading``, on the verdict's draw,
shrink budget ``--diagnose-seconds``). Configs are taken until ``--sample`` readings are collected. The configs of
APIs without an independent path are counted as not audited, never as agreement.

**The truth**, on the reported config and draw (never a shrunk repro): the inputs are materialised from the draw
the reading names; the truth of the output it names is computed by a path that does not use the engine's oracle:
exact rationals (``fractions.Fraction``) for what is linear or polynomial in its inputs (sum, add_n, kron, vander,
products by a scalar, minimum/maximum, hardsigmoid with its slope as the decimal the config writes, matmul, cumsum),
mpmath at 50 and 100 digits for elementwise transcendental functions (exp, logit), the two precisions required to
round to the same value of the dtype (else the reading is "not audited: precisions disagree"). The truth is rounded
exactly to the output's dtype (nearest, ties to even, from the exact value: no double rounding). Gradients
(``GRAD_TRUTHS``: logit, kron, minimum/maximum, vander, hardsigmoid) are the exact derivative of ``<output 0, g>`` with the engine's own
output gradient g (``Trial.output_gradient``); elements where no derivative exists (logit outside (0, 1), a tie or a
NaN of minimum/maximum, hardsigmoid's two kinks) are left out and counted in the reading's ``reason``: a convention question, never a side's
error. ``--reaudit RUN.json`` audits a saved run's engine readings again (on the release it was run on).

**The decision**, computed here from the documented rule (docs/diagnosis.md: ``floor = eps(dtype) * RMS(truth)``,
``K = 3``): each side's RMSE against the rounded truth (a NaN/inf where the truth has another value: infinite);
``paddle_off`` when Paddle's is over the floor and over K x Torch's, ``torch_off`` likewise, ``both_off`` when both
are over the floor and neither K x the other, else ``within_rounding``. A reading agrees when the engine's equals
it; a **wrong side** is an engine reading that names a side off which the audit finds within the floor or K.

Each side's outputs are the engine's own on that draw (``trial.judge`` with the trial's capture): what the verdict
compared. The audit checks the reading, not the run.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

K = 3.0
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}
PRECISIONS = (50, 100)  # mpmath digits: the truth counts where both round to the same value of the dtype
REPORT = "reports/ci_ce_cpu/error_config.txt"
SIDES = {"paddle_off": {"paddle"}, "torch_off": {"torch"}, "both_off": {"paddle", "torch"}, "within_rounding": set()}


class NotAudited(Exception):
    """No independent truth for this reading (the reason is the message)."""


# ---------------------------------------------------------------- exact values and rounding


def exact(array: np.ndarray) -> np.ndarray:
    """The inputs as an object array of Fractions (every finite float is a rational)."""
    values = np.asarray(array, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise NotAudited("non-finite input: no rational truth")
    return np.array([Fraction(v) for v in values.ravel().tolist()] or [], dtype=object).reshape(values.shape)


def decimal(value) -> Fraction:
    """A scalar argument as the decimal the config writes (0.2 is 1/5, not float(0.2))."""
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


_BITS = {"float16": (np.float16, np.uint16, 1), "float32": (np.float32, np.uint32, 1),
         "float64": (np.float64, np.uint64, 1), "bfloat16": (np.float32, np.uint32, 1 << 16)}


def round_exact(value: Fraction, dtype: str) -> float:
    """``value`` rounded to the nearest ``dtype`` value, ties to the even significand (overflow: inf)."""
    ftype, itype, step = _BITS[dtype]
    with np.errstate(over="ignore"):
        guess = np.asarray(float(value), np.float64).astype(ftype) if dtype != "bfloat16" else _bf16(float(value))
    if not np.isfinite(guess):
        return float(guess)
    bits = int(np.asarray(guess, dtype=ftype).view(itype))
    candidates = []
    for delta in (-step, 0, step):
        pattern = bits + delta if float(guess) >= 0 else bits - delta
        if 0 <= pattern < (1 << (8 * np.dtype(itype).itemsize)):
            cand = float(np.asarray(pattern, dtype=itype).view(ftype))
            if np.isfinite(cand):
                candidates.append((abs(Fraction(cand) - value), (pattern // step) % 2, cand))
    return min(candidates)[2]


def _bf16(x: float) -> np.float32:
    from apitester.inputs import round_to_bfloat16

    return round_to_bfloat16(np.asarray([x], dtype=np.float32))[0]


def rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    """An object array of exact values (Fraction) or mpf pairs rounded to the dtype, as float64."""
    return np.array([round_exact(v, dtype) for v in values.ravel().tolist()], dtype=np.float64).reshape(values.shape)


def mp_truth(fn, x: np.ndarray, dtype: str) -> np.ndarray:
    """An elementwise function by mpmath at both PRECISIONS, rounded to the dtype; NotAudited where they differ."""
    results = []
    for digits in PRECISIONS:
        with mpmath.workdps(digits):
            values = [_mp_exact(fn(mpmath.mpf(float(v)))) for v in np.asarray(x, np.float64).ravel().tolist()]
        results.append(np.array([round_exact(v, dtype) if isinstance(v, Fraction) else v for v in values]))
    if not np.array_equal(results[0], results[1], equal_nan=True):
        raise NotAudited(f"mpmath at {PRECISIONS[0]} and {PRECISIONS[1]} digits round to different {dtype} values")
    return results[0].astype(np.float64).reshape(np.shape(x))


def _mp_exact(value):
    """An mpf as its exact Fraction (a binary float), a non-finite one as that float."""
    if not mpmath.isfinite(value) or (isinstance(value, mpmath.mpc)):
        return float(value) if not isinstance(value, mpmath.mpc) else float("nan")
    sign, man, exp, _ = value._mpf_  # man_exp drops the sign: (sign, mantissa, exponent, bits)
    return (-1 if sign else 1) * Fraction(int(man)) * (Fraction(2) ** int(exp))


# ---------------------------------------------------------------- truths by API (output 0), from the documented math


def _axes(axis, ndim: int):
    if axis is None or (isinstance(axis, (list, tuple)) and len(axis) == 0):
        return tuple(range(ndim))
    items = axis if isinstance(axis, (list, tuple)) else [axis]
    return tuple(sorted(int(a) % ndim for a in items)) if ndim else ()


def truth_sum(a: dict, dtype: str) -> np.ndarray:
    x = exact(a["x"])
    if x.ndim == 0:
        return rounded(x, dtype)
    total = np.sum(x, axis=_axes(a.get("axis"), x.ndim), keepdims=bool(a.get("keepdim")))
    return rounded(np.asarray(total, dtype=object), dtype)


def truth_add_n(a: dict, dtype: str) -> np.ndarray:
    items = a["inputs"] if isinstance(a["inputs"], list) else [a["inputs"]]
    return rounded(np.asarray(sum(exact(t) for t in items), dtype=object), dtype)


def truth_mean(a: dict, dtype: str) -> np.ndarray:
    x = exact(a["x"])
    axes = _axes(a.get("axis"), x.ndim)
    count = int(np.prod([x.shape[i] for i in axes])) if x.ndim else 1
    total = np.sum(x, axis=axes, keepdims=bool(a.get("keepdim"))) if x.ndim else x
    return rounded(np.asarray(total, dtype=object) / count, dtype)


def truth_cumsum(a: dict, dtype: str) -> np.ndarray:
    x = exact(a["x"])
    axis = a.get("axis")
    return rounded(np.cumsum(x.ravel() if axis is None else x, axis=0 if axis is None else int(axis)), dtype)


def truth_matmul(a: dict, dtype: str) -> np.ndarray:
    x, y = exact(a["x"]), exact(a["y"])
    if a.get("transpose_x"):
        x = np.swapaxes(x, -1, -2)
    if a.get("transpose_y"):
        y = np.swapaxes(y, -1, -2)
    if x.ndim < 2 or y.ndim < 2 or x.shape[-1] * x.shape[-2] * y.shape[-1] > 1 << 18:
        raise NotAudited("matmul: only matrices of at most 2^18 multiply-adds")
    return rounded(np.asarray(np.matmul(x, y), dtype=object), dtype)


def truth_multiply(a: dict, dtype: str) -> np.ndarray:
    x = exact(a["x"])
    y = a["y"]
    factor = exact(y) if isinstance(y, np.ndarray) else decimal(y)  # the documented product: the scalar as written
    return rounded(np.asarray(x * factor, dtype=object), dtype)


def truth_add(a: dict, dtype: str) -> np.ndarray:
    y = a["y"]
    return rounded(np.asarray(exact(a["x"]) + (exact(y) if isinstance(y, np.ndarray) else decimal(y)), dtype=object),
                   dtype)


def truth_minimum(a: dict, dtype: str, pick=np.minimum) -> np.ndarray:
    x, y = (np.asarray(a[k], np.float64) for k in ("x", "y"))
    out = pick(x, y)  # a selection: exact in any precision; NaN propagates in both APIs' documentation
    return out.astype(np.float64)


def truth_kron(a: dict, dtype: str) -> np.ndarray:
    x, y = exact(a["x"]), exact(a["y"])
    if x.size * y.size > 1 << 20:
        raise NotAudited("kron: over 2^20 output elements")
    return rounded(np.asarray(np.kron(x, y), dtype=object), dtype)


def truth_vander(a: dict, dtype: str) -> np.ndarray:
    x = exact(a["x"])
    n = a.get("n")
    n = len(x) if n is None else int(n)
    powers = [[v ** k for k in range(n)] for v in x.tolist()]
    table = np.array(powers, dtype=object).reshape(len(x), n)
    return rounded(table if a.get("increasing") else table[:, ::-1], dtype)


def truth_hardsigmoid(a: dict, dtype: str) -> np.ndarray:
    x = exact(a["x"])
    slope, offset = decimal(a.get("slope", 0.1666667)), decimal(a.get("offset", 0.5))
    line = np.vectorize(lambda v: min(Fraction(1), max(Fraction(0), slope * v + offset)), otypes=[object])
    return rounded(line(x) if x.size else x, dtype)


def truth_exp(a: dict, dtype: str) -> np.ndarray:
    return mp_truth(mpmath.exp, a["x"], dtype)


def truth_logit(a: dict, dtype: str) -> np.ndarray:
    eps = a.get("eps")
    if eps:
        raise NotAudited("logit with eps: the clamp is not audited")

    def logit(v):
        return mpmath.log(v / (1 - v)) if 0 < v < 1 else (mpmath.mpf("-inf") if v == 0 else
                                                            mpmath.mpf("inf") if v == 1 else mpmath.nan)
    return mp_truth(logit, a["x"], dtype)


def truth_maximum(a: dict, dtype: str) -> np.ndarray:
    return truth_minimum(a, dtype, np.maximum)


# ---------------------------------------------------------------- gradient truths: d<output 0, g>/d(input), exact
# Each returns (truth rounded to the dtype, defined): ``defined`` False where no derivative exists (outside the
# domain, a tie of minimum/maximum): a convention question the audit leaves out, never a side's error.


def grad_logit(a: dict, g: np.ndarray, name: str, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a["x"], np.float64)
    if a.get("eps"):
        raise NotAudited("logit with eps: the clamp is not audited")
    defined = (x > 0) & (x < 1) & np.isfinite(g)
    xe, ge = exact(np.where(defined, x, 0.5)), exact(np.where(defined, g, 0.0))
    truth = np.vectorize(lambda v, w: w / (v * (1 - v)), otypes=[object])(xe, ge)  # d/dx log(x/(1-x)) = 1/(x(1-x))
    return rounded(truth, dtype), defined


def grad_kron(a: dict, g: np.ndarray, name: str, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = exact(a["x"]), exact(a["y"])
    if x.ndim != 2 or y.ndim != 2:
        raise NotAudited("kron gradient: only of two matrices")
    (m, n), (p, q) = x.shape, y.shape
    blocks = exact(g).reshape(m, p, n, q)  # g[i*p + k, j*q + l] = blocks[i, k, j, l]
    if name == "x":  # sum over k, l of g * y[k, l]
        truth = np.tensordot(blocks.transpose(0, 2, 1, 3), y, axes=([2, 3], [0, 1]))
    else:  # sum over i, j of g * x[i, j]
        truth = np.tensordot(blocks.transpose(1, 3, 0, 2), x, axes=([2, 3], [0, 1]))
    truth = np.asarray(truth, dtype=object)
    return rounded(truth, dtype), np.ones(truth.shape, bool)


def grad_minimum(a: dict, g: np.ndarray, name: str, dtype: str, maximum: bool = False):
    """g where this input is the one picked (no tie), summed over the dims it was broadcast along."""
    x, y = np.asarray(a["x"], np.float64), np.asarray(a["y"], np.float64)
    xb, yb = np.broadcast_arrays(x, y)
    mine, other = (xb, yb) if name == "x" else (yb, xb)
    picked = mine > other if maximum else mine < other
    tie = (xb == yb) | np.isnan(xb) | np.isnan(yb) | ~np.isfinite(g)
    target = x if name == "x" else y
    full = np.where(picked & ~tie, np.where(np.isfinite(g), g, 0.0), 0.0)
    if not exact_in_float64(full):
        raise NotAudited("the output gradient's sums are not exact in float64 (and too many for rationals)")
    reduced, ties = _reduce_to(full, target.shape), _reduce_to(tie.astype(np.int64), target.shape)
    return rounded(exact(reduced), dtype), np.asarray(ties) == 0


def exact_in_float64(values: np.ndarray) -> bool:
    """Whether any sum of these values is exact in float64: all multiples of 2^-22 of magnitude at most 1 and fewer
    than 2^30 of them (every partial sum then has at most 52 significant bits). Checked, not assumed."""
    scaled = np.ldexp(values, 22)
    return values.size < (1 << 30) and bool(np.all(np.abs(values) <= 1)) and bool(np.all(scaled == np.round(scaled)))


def _reduce_to(full: np.ndarray, shape: tuple) -> np.ndarray:
    """A broadcast array summed back to the input's shape (what a gradient of a broadcast input is)."""
    lead = full.ndim - len(shape)
    out = full.sum(axis=tuple(range(lead))) if lead else full
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and out.shape[i] != 1)
    return out.sum(axis=axes, keepdims=True) if axes else out


def grad_vander(a: dict, g: np.ndarray, name: str, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """d/dx_i of sum_j g[i, j] * x_i^(power of column j) = sum_j g[i, j] * power_j * x_i^(power_j - 1)."""
    x, ge = exact(a["x"]), exact(g)
    n = a.get("n")
    n = len(x) if n is None else int(n)
    powers = list(range(n)) if a.get("increasing") else list(range(n - 1, -1, -1))
    truth = [sum((ge[i, j] * k * v ** (k - 1) for j, k in enumerate(powers) if k), Fraction(0))
             for i, v in enumerate(x.tolist())]
    return rounded(np.array(truth, dtype=object), dtype), np.ones(len(truth), bool)


def grad_hardsigmoid(a: dict, g: np.ndarray, name: str, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """slope * g inside the ramp, 0 outside; at the ramp's two ends (a kink) no derivative: left out."""
    x, ge = exact(a["x"]), exact(np.where(np.isfinite(g), g, 0.0))
    slope, offset = decimal(a.get("slope", 0.1666667)), decimal(a.get("offset", 0.5))
    ramp = np.vectorize(lambda v: slope * v + offset, otypes=[object])(x) if x.size else x
    inside = np.vectorize(lambda r: 0 < r < 1, otypes=[bool])(ramp) if x.size else np.zeros(x.shape, bool)
    kink = np.vectorize(lambda r: r in (0, 1), otypes=[bool])(ramp) if x.size else np.zeros(x.shape, bool)
    truth = np.where(inside, ge * slope, Fraction(0))
    return rounded(np.asarray(truth, dtype=object), dtype), ~kink & np.isfinite(g)


GRAD_TRUTHS = {
    "paddle.vander": grad_vander, "paddle.nn.functional.hardsigmoid": grad_hardsigmoid,
    "paddle.logit": grad_logit, "paddle.Tensor.logit": grad_logit, "paddle.kron": grad_kron,
    "paddle.minimum": grad_minimum, "paddle.maximum": lambda *args: grad_minimum(*args, maximum=True),
}


TRUTHS = {
    "paddle.sum": truth_sum, "paddle.Tensor.sum": truth_sum, "paddle.add_n": truth_add_n,
    "paddle.mean": truth_mean, "paddle.Tensor.mean": truth_mean,
    "paddle.cumsum": truth_cumsum, "paddle.Tensor.cumsum": truth_cumsum,
    "paddle.matmul": truth_matmul, "paddle.Tensor.matmul": truth_matmul,
    "paddle.multiply": truth_multiply, "paddle.Tensor.__mul__": truth_multiply,
    "paddle.add": truth_add, "paddle.Tensor.__add__": truth_add,
    "paddle.minimum": truth_minimum, "paddle.maximum": truth_maximum,
    "paddle.kron": truth_kron, "paddle.vander": truth_vander,
    "paddle.nn.functional.hardsigmoid": truth_hardsigmoid,
    "paddle.exp": truth_exp, "paddle.Tensor.exp": truth_exp,
    "paddle.logit": truth_logit, "paddle.Tensor.logit": truth_logit,
}


# ---------------------------------------------------------------- the decision (docs/diagnosis.md, computed here)


def side_error(side: np.ndarray, truth: np.ndarray) -> float:
    """RMSE of a side against the rounded truth; a NaN/inf where the truth has another value is infinite."""
    side, truth = np.asarray(side, np.float64), np.asarray(truth, np.float64)
    if side.shape != truth.shape:
        raise NotAudited(f"output shape {side.shape} is not the truth's {truth.shape}")
    if side.size == 0:
        return 0.0
    same = (side == truth) | (np.isnan(side) & np.isnan(truth))
    finite = np.isfinite(side) & np.isfinite(truth)
    if np.any(~same & ~finite):
        return float("inf")
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, side - truth)
    return float(np.sqrt(np.mean(diff * diff)))


def decide(p_err: float, t_err: float, truth: np.ndarray, dtype: str) -> tuple[str, float]:
    """(reading, floor): the documented rule, floor = eps(dtype) * RMS(truth), K = 3."""
    finite = np.asarray(truth, np.float64)[np.isfinite(truth)]
    floor = EPS[dtype] * (float(np.sqrt(np.mean(finite * finite))) if finite.size else 0.0)
    p_over, t_over = p_err > floor, t_err > floor
    if p_over and p_err > K * t_err:
        return "paddle_off", floor
    if t_over and t_err > K * p_err:
        return "torch_off", floor
    if p_over and t_over:
        return "both_off", floor
    return "within_rounding", floor


# ---------------------------------------------------------------- one reading audited


@dataclass
class Audit:
    config: str
    api: str
    source: str  # "closer" or "diagnosis"
    draw: str
    output: str
    engine: str
    audited: str = ""  # the audit's reading, "" when not audited
    verdict: str = ""  # agree / disagree / wrong_side / not_audited
    reason: str = ""
    dtype: str = ""
    paddle_error: float | None = None
    torch_error: float | None = None
    floor: float | None = None
    numbers: dict = field(default_factory=dict)


def side_outputs(config: str, draw) -> tuple:
    """Paddle's and Torch's forward outputs on the draw, as the engine's strict layer compared them, the inputs
    (arrays by parameter name), the backward's (Paddle grads, Torch grads) or None, and output 0's gradient."""
    from apitester.engine import trial as tr
    from apitester.inputs import Draw

    draw = Draw.parse(draw)
    strict = tr.prepare(config).strict_layer()
    materialised = strict.inputs_of(draw)
    args = {k: tr.map_tensors(v, lambda t: t.array.copy()) for k, v in materialised.items()}
    judged = strict.on(materialised, draw)
    judged.state.start_capture(True)
    tr.judge(judged, 1e-2, 1e-2, draw.seed)
    captured = judged.state.stop_capture()
    if not captured:
        raise NotAudited("no forward outputs captured (a side raised)")
    outs_p, outs_t = captured[0]
    backward = captured[1] if len(captured) > 1 else None
    return outs_p, outs_t, args, backward, strict.output_gradient(outs_t[0].array.shape, outs_t[0].dtype, draw.seed,
                                                                   0, draw.format) if outs_t else None


def audit_reading(item: Audit) -> Audit:
    """The truth of the reading's output on its draw, each side's error to it, and the documented decision."""
    try:
        is_grad = item.output.startswith("grad ")
        fn = (GRAD_TRUTHS if is_grad else TRUTHS).get(item.api)
        if fn is None:
            raise NotAudited(f"no independent path for this API{' (gradient)' if is_grad else ''}")
        if not is_grad and item.output != "output 0":
            raise NotAudited(f"{item.output}: only output 0 has a truth here")
        outs_p, outs_t, args, backward, g = side_outputs(item.config, item.draw)
        p, t, truth, defined = _sides_and_truth(item, fn, outs_p, outs_t, args, backward, g)
        left_out = int(np.size(defined) - np.count_nonzero(defined))
        if left_out:
            item.reason = f"{left_out} elements without a derivative left out (a convention question)"
            p, t, truth = (np.asarray(v, np.float64)[defined] for v in (p.array, t.array, truth))
        else:
            p, t = p.array, t.array
        item.paddle_error, item.torch_error = side_error(p, truth), side_error(t, truth)
        item.audited, item.floor = decide(item.paddle_error, item.torch_error, truth, item.dtype)
        item.numbers = _worst_element(p, t, truth)
    except NotAudited as exc:
        item.verdict, item.reason = "not_audited", str(exc)
        return item
    item.verdict = classify(item.engine, item.audited, left_out=bool(item.reason))
    return item


def _sides_and_truth(item: Audit, fn, outs_p, outs_t, args, backward, g) -> tuple:
    """(Paddle's Out, Torch's Out, the rounded truth, where it is defined) of the output or gradient read."""
    if not item.output.startswith("grad "):
        p, t = outs_p[0], outs_t[0]
        item.dtype = str(p.dtype)
        if item.dtype not in EPS:
            raise NotAudited(f"output dtype {item.dtype}: no floating reading")
        truth = fn(args, item.dtype)
        return p, t, truth, np.ones(np.shape(truth), bool)
    name = item.output.split()[1]
    if g is not None and item.api not in ("paddle.minimum", "paddle.maximum") and np.size(g) > 1 << 18:
        raise NotAudited("gradient: an output of over 2^18 elements is beyond the rational budget")
    if backward is None or g is None or len(outs_p) != 1:
        raise NotAudited("the backward did not run on this draw (or more than one output)")
    labels = [k for k, v in args.items() if isinstance(v, np.ndarray) and v.dtype.kind == "f"]
    if name not in labels:
        raise NotAudited(f"{item.output}: not a top-level floating tensor")
    p, t = backward[0][labels.index(name)], backward[1][labels.index(name)]
    item.dtype = str(p.dtype)
    if item.dtype not in EPS:
        raise NotAudited(f"gradient dtype {item.dtype}: no floating reading")
    truth, defined = fn(args, np.asarray(g, np.float64), name, item.dtype)
    return p, t, truth, defined


def classify(engine: str, audited: str, left_out: bool = False) -> str:
    """agree; wrong_side (the engine names a side off that the audit finds right); no_side (the engine names no
    side -- no_oracle, convention, reference_uncertain -- where the audit computed one: not agreement either);
    disagree (any other difference).

    A ``convention`` where the audit left elements without a derivative out (``left_out``: ties, kinks, a domain's
    outside) and finds both sides within rounding on the rest agrees: the engine says the only difference is how the
    two define the derivative where none exists, and the audit, on every element where one exists, finds no side
    off. A convention where the audit finds a side off on those elements stays ``no_side`` (a hidden side)."""
    if engine == audited or (engine == "convention" and audited == "within_rounding" and left_out):
        return "agree"
    if engine not in SIDES:
        return "no_side"
    if SIDES[engine] - SIDES[audited]:
        return "wrong_side"
    return "disagree"


def _worst_element(p: np.ndarray, t: np.ndarray, truth: np.ndarray) -> dict:
    """Where the two sides differ most from the truth: the numbers a disagreement is read by."""
    p, t, truth = (np.asarray(v, np.float64).ravel() for v in (p, t, truth))
    if truth.size == 0:
        return {}
    with np.errstate(invalid="ignore"):
        gap = np.nan_to_num(np.abs(p - truth) + np.abs(t - truth), nan=np.inf)
    i = int(np.argmax(gap))
    return {"index": i, "truth": float(truth[i]), "paddle": float(p[i]), "torch": float(t[i])}


# ---------------------------------------------------------------- the sample and the engine's readings


def report_configs(max_elements: int, outside: Counter | None = None) -> dict[str, list[str]]:
    """The report's configs by API, of the APIs with a truth and at most ``max_elements`` input elements
    (``outside`` counts the other APIs' configs: not audited)."""
    from apitester.config import parse_config
    from apitester.reports import discover_report_files, iter_file_configs, reports_dir

    by_api: dict[str, list[str]] = defaultdict(list)
    for report in discover_report_files(reports_dir()):
        if report.rel != REPORT:
            continue
        for line in iter_file_configs(report):
            if line.api not in TRUTHS and outside is not None:
                outside[line.api] += 1
            if line.api in TRUTHS and line.config not in by_api[line.api]:
                if sum(t.numel for t in parse_config(line.config).tensors()) <= max_elements:
                    by_api[line.api].append(line.config)
    return dict(by_api)


def stratified(by_api: dict[str, list[str]], seed: int):
    """The configs round-robin over the APIs (a seeded order; each API's configs seeded-shuffled)."""
    rng = random.Random(seed)
    apis = sorted(by_api)
    rng.shuffle(apis)
    queues = {api: rng.sample(by_api[api], len(by_api[api])) for api in apis}
    while any(queues.values()):
        for api in apis:
            if queues[api]:
                yield api, queues[api].pop()


def engine_readings(config: str, api: str, diagnose_seconds: float) -> list[Audit]:
    """The readings the engine gives this config: ``closer`` when it is inexact, the diagnosis' reading when it
    fails strictly on values."""
    from apitester.readings import run_with_readings

    verdict = run_with_readings(config, readings=True)
    found = []
    # the closer reading names its draw (``closer_draw``: the worst inexact draw read) where the engine records it
    draw = getattr(verdict, "closer_draw", None) or verdict.inexact_draw
    if verdict.strict_exact is False and verdict.closer and draw:
        found.append(Audit(config, api, "closer", _draw_text(draw), verdict.closer_output or "", str(verdict.closer)))
    if verdict.strict_status == "accuracy_error":
        from apitester.diagnosis.diagnose import diagnose_config

        diagnosis = diagnose_config(config, max_trials=40, max_seconds=diagnose_seconds)
        reading = diagnosis.get("reading") or {}
        if diagnosis.get("diagnosed") and reading.get("reading"):
            found.append(Audit(config, api, "diagnosis", _draw_text(diagnosis["verdict"]["draw"]),
                               reading.get("output", ""), str(reading["reading"])))
    return found


def _draw_text(draw) -> str:
    from apitester.inputs import Draw

    return str(Draw.parse(draw))


def run_audit(sample: int, seed: int, max_elements: int, diagnose_seconds: float, max_minutes: float) -> dict:
    outside: Counter = Counter()
    by_api = report_configs(max_elements, outside)
    audits: list[Audit] = []
    configs_run, start = 0, time.perf_counter()
    for api, config in stratified(by_api, seed):
        if len(audits) >= sample or time.perf_counter() - start > max_minutes * 60:
            break
        configs_run += 1
        try:
            found = engine_readings(config, api, diagnose_seconds)
        except Exception as exc:  # an engine gap: said, not counted as a reading
            print(f"engine error on {config[:120]}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        audits += [audit_reading(item) for item in found]
        print(f"[{len(audits)}/{sample}] {config[:100]}", file=sys.stderr, flush=True)
    return {"audits": audits, "configs_run": configs_run, "seconds": round(time.perf_counter() - start, 1),
            "apis": sorted(by_api), "configs_available": sum(map(len, by_api.values())),
            "apis_without_truth": len(outside), "configs_without_truth": sum(outside.values())}


def reaudit(path: str) -> dict:
    """A saved run's engine readings (config, draw, output, reading) audited again on this Paddle."""
    with open(path, encoding="utf-8") as fh:
        saved = json.load(fh)
    start = time.perf_counter()
    audits = [audit_reading(Audit(a["config"], a["api"], a["source"], a["draw"], a["output"], a["engine"]))
              for a in saved["audits"]]
    return {**{k: v for k, v in saved.items() if k not in ("audits", "summary", "paddle")}, "audits": audits,
            "reaudit_seconds": round(time.perf_counter() - start, 1)}


# ---------------------------------------------------------------- output


def tally(audits: list[Audit], key) -> dict[str, Counter]:
    table: dict[str, Counter] = defaultdict(Counter)
    for item in audits:
        table[key(item)][item.verdict] += 1
    return dict(sorted(table.items()))


def summary_line(audits: list[Audit]) -> str:
    counts = Counter(item.verdict for item in audits)
    audited = sum(counts[k] for k in ("agree", "disagree", "wrong_side", "no_side"))
    share = f"{100 * counts['agree'] / audited:.1f} %" if audited else "n/a"
    return (f"{len(audits)} readings: {audited} audited, {counts['agree']} agree ({share}), "
            f"{counts['disagree']} disagree, {counts['wrong_side']} wrong side, {counts['no_side']} no side named, "
            f"{counts['not_audited']} not audited")


def _table(title: str, table: dict[str, Counter]) -> list[str]:
    cols = ("agree", "disagree", "wrong_side", "no_side", "not_audited")
    lines = [f"{title:<44} " + " ".join(f"{c:>11}" for c in cols)]
    lines += [f"{name:<44} " + " ".join(f"{row[c]:>11}" for c in cols) for name, row in table.items()]
    return lines


def render(result: dict) -> str:
    audits = result["audits"]
    lines = _table("API", tally(audits, lambda a: a.api)) + [""]
    lines += _table("engine reading (source)", tally(audits, lambda a: f"{a.engine} ({a.source})")) + [""]
    for item in audits:
        if item.verdict in ("disagree", "wrong_side", "no_side"):
            lines.append(f"{item.verdict.upper()}: {item.config} draw {item.draw} {item.output} [{item.source}]: "
                         f"engine {item.engine}, audit {item.audited} ({item.dtype}: Paddle RMSE "
                         f"{item.paddle_error:.4g}, Torch {item.torch_error:.4g}, floor {item.floor:.4g}; "
                         f"worst {json.dumps(item.numbers)})")
    reasons = Counter(item.reason for item in audits if item.verdict == "not_audited")
    lines += [f"not audited ({n}): {reason}" for reason, n in reasons.most_common()]
    lines.append(f"configs run {result['configs_run']} of {result['configs_available']} with a truth "
                 f"({len(result['apis'])} APIs); report APIs without an independent path: "
                 f"{result['apis_without_truth']} ({result['configs_without_truth']} configs, not audited); "
                 f"{result['seconds']} s")
    lines.append(summary_line(audits))
    return "\n".join(lines)


def reexec_in_release(release: str, argv: list[str]) -> int | None:
    """Run this script in var/paddle-envs/RELEASE when the current Paddle is another release (None: run here)."""
    import paddle

    if paddle.__version__ == release:
        return None
    python = REPO / "var" / "paddle-envs" / release / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"no env for Paddle {release} at {python} (this Python has Paddle {paddle.__version__})")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.call([str(python), __file__, *argv], env=env)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--release", default=None, help="the Paddle release to audit (default: this Python's)")
    p.add_argument("--sample", type=int, default=200, help="readings to collect (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-elements", type=int, default=200_000, help="configs of at most this many input elements")
    p.add_argument("--diagnose-seconds", type=float, default=15.0, help="the shrink budget of a diagnosis")
    p.add_argument("--max-minutes", type=float, default=60.0, help="stop taking configs after this long")
    p.add_argument("--json", action="store_true", help="one JSON object: every reading audited and the summary")
    p.add_argument("--reaudit", default=None, metavar="RUN.json",
                   help="audit again the engine readings a --json run saved (same release), without running the "
                        "engine's readings again (the truths changed, not the readings)")
    args = p.parse_args(argv)
    if args.reaudit and not args.release:  # the readings are of one release: audit them on it
        with open(args.reaudit, encoding="utf-8") as fh:
            args.release = json.load(fh).get("paddle")
    if args.release:
        code = reexec_in_release(args.release, argv)
        if code is not None:
            return code
    import paddle

    if args.reaudit:
        result = reaudit(args.reaudit)
    else:
        result = run_audit(args.sample, args.seed, args.max_elements, args.diagnose_seconds, args.max_minutes)
    if args.json:
        print(json.dumps({**result, "audits": [asdict(a) for a in result["audits"]], "paddle": paddle.__version__,
                          "summary": summary_line(result["audits"])}))
    else:
        print(f"Paddle {paddle.__version__}")
        print(render(result))
    counts = Counter(a.verdict for a in result["audits"])
    return 1 if counts["wrong_side"] or counts["disagree"] or counts["no_side"] else 0


if __name__ == "__main__":
    sys.exit(main())
