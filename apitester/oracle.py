"""A float64 oracle for one config: which side is off the exact value, and by how much.

The draw that failed (``Verdict.draw``: kind + seed, ``apitester.inputs``) is materialised at the
config's dtypes, then the same numbers are upcast to float64 (complex64 -> complex128; integer and
bool inputs are left as they are) and run through the strict Paddle call *and* the strict Torch call
(the layer "fix verified" reads).  Where the two float64 results agree (``AGREE_RTOL``) Torch's
float64 result is the oracle; where they do not, there is none (``disputed``).  Each side's result at
the config's dtype is then measured against it (max abs, max rel, RMSE) and read with
``apitester.vocab.Reading`` (``read_errors``; the rule and its constants are documented there and in
docs/diagnosis.md).

For a backward failure a float64 gradient check (``gradient_check``: one-sided differences at a step scaled
to each element, refined where the step straddles a clamp, Richardson-extrapolated, kinks read as
subgradients) says whether each side's analytic float64 gradient matches the numeric derivative of its own
float64 forward, and which side misses it; it runs on small inputs only (``GRADCHECK_MAX_ELEMENTS``), i.e.
after shrinking.

Everything returned is plain JSON values (floats through ``compare.encode_float``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import execute as ex
from . import inputs as inp
from .compare import Out, encode_float
from .specs.base import dtype_name
from .vocab import AdaptationKind, NoOracle, Reading

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

# The gradient check: torch.autograd.gradcheck's defaults (eps=1e-6, atol=1e-5, rtol=1e-3), on at
# most GRADCHECK_MAX_ELEMENTS floating input elements (two float64 forwards per element and side).
GRAD_STEP = 1e-6
GRAD_ATOL = 1e-5
GRAD_RTOL = 1e-3
GRADCHECK_MAX_ELEMENTS = 512


# ---------------------------------------------------------------- running one side


@dataclass
class SideRun:
    """One side's forward outputs (and, when asked, input gradients) on one set of inputs."""

    outputs: list[Out] = field(default_factory=list)
    grads: list[Out] = field(default_factory=list)
    grad_labels: list[str] = field(default_factory=list)
    error: str = ""  # the side raised: its one-line message


def _side_parts(name: str, prepared):
    if name == "paddle":
        return prepared.paddle_side, ex._to_paddle, ex._paddle_out
    return prepared.torch_side, ex._to_torch, ex._torch_out


def run_side(name: str, prepared, materialised: dict, grad_of: dict[int, np.ndarray] | None = None) -> SideRun:
    """Run Paddle's (``name="paddle"``) or Torch's side of ``prepared`` on ``materialised``.

    ``grad_of`` maps an output index to its output-gradient array: the input gradients are then
    computed from those outputs (the engine's backward: ``execute._backward``)."""
    side, convert, to_out = _side_parts(name, prepared)
    values, leaves = ex._convert(materialised, convert, bool(grad_of))
    try:
        raw = side(values)
        if prepared.spec.outputs is not None:
            raw = prepared.spec.outputs(raw)
    except Exception as exc:
        return SideRun(error=ex._short(exc))
    flat = ex._flatten_outputs(raw)
    run = SideRun(outputs=[to_out(v) for v in flat])
    if grad_of:
        try:
            grads = _input_grads(name, flat, leaves, grad_of)
        except Exception as exc:
            return SideRun(outputs=run.outputs, error=f"backward: {ex._short(exc)}")
        run.grads = [ex._grad_out(g, leaf, to_out) for leaf, g in zip(leaves.tensors, grads)]
        run.grad_labels = [f"grad {label}" for label in leaves.labels]
    return run


def _input_grads(name: str, flat: list, leaves, grad_of: dict[int, np.ndarray]):
    paddle, torch = ex.frameworks()
    pairs = [(i, flat[i], g) for i, g in sorted(grad_of.items()) if i < len(flat)]
    if name == "paddle":
        outs = [out for _, out, _ in pairs]
        grads = [paddle.to_tensor(g).astype(out.dtype) for _, out, g in pairs]
        return paddle.grad(outs, leaves.tensors, grad_outputs=grads, allow_unused=True)
    outs = [out for _, out, _ in pairs]
    grads = [torch.from_numpy(np.array(g)).to(out.dtype) for _, out, g in pairs]
    return torch.autograd.grad(outs, leaves.tensors, grad_outputs=grads, allow_unused=True)


def output_gradients(prepared, materialised: dict, draw: inp.Draw) -> dict[int, np.ndarray]:
    """The engine's random output-gradients (``execute._random_grad``) for the outputs both sides
    differentiate, at the config's dtype; {} when the API's backward is not compared."""
    if not prepared.want_grad:
        return {}
    p_values, p_leaves = ex._convert(materialised, ex._to_paddle, True)
    t_values, t_leaves = ex._convert(materialised, ex._to_torch, True)
    if not p_leaves.tensors:
        return {}
    try:
        p_flat = ex._flatten_outputs(prepared.paddle_side(p_values))
        t_flat = ex._flatten_outputs(prepared.torch_side(t_values))
    except Exception:
        return {}
    pairs, _ = ex._grad_outputs(p_flat, t_flat)
    return {i: ex._random_grad(tuple(t.shape), dtype_name(t.dtype), draw.seed, i, draw.format) for i, _, t in pairs}


# ---------------------------------------------------------------- upcasting


def upcast(materialised: dict) -> dict:
    """The same input numbers at float64 / complex128 (integer and bool tensors unchanged)."""
    def leaf(t: inp.InputTensor) -> inp.InputTensor:
        high = UPCAST.get(t.dtype)
        if high is None:
            return inp.InputTensor(t.array.copy(), t.dtype)
        return inp.InputTensor(t.array.astype(high), high)

    return {k: ex._map_tensors(v, leaf) for k, v in materialised.items()}


def input_tensors(materialised: dict) -> list[inp.InputTensor]:
    """Every InputTensor of the materialised arguments, in the order the sides convert them."""
    found: list[inp.InputTensor] = []
    for value in materialised.values():
        ex._map_tensors(value, lambda t: found.append(t) or t)
    return found


def config_level_reason(prepared, materialised: dict) -> tuple[str, str] | None:
    """(NoOracle code, reason) when no float64 run can stand for this config, else None."""
    spec = prepared.spec
    if spec.random:
        return NoOracle.RANDOM_API, "a random API: its samples have no exact value to compare with"
    kinds = {a.kind for a in spec.visible_adaptations}
    if AdaptationKind.OUTPUT_INVARIANT in kinds and not spec.has_strict_reference:
        return NoOracle.CANNOT_UPCAST, "outputs defined only up to a gauge (sign, order): no exact value"
    dtypes = {t.dtype for t in input_tensors(materialised)}
    if not dtypes & set(UPCAST):
        if dtypes & set(HIGH):
            return NoOracle.FLOAT64_CONFIG, "the inputs are float64 already: no higher precision to upcast to"
        return NoOracle.EXACT_DTYPE, "integer/bool inputs: computed exactly, no rounding to measure"
    return None


# ---------------------------------------------------------------- measuring one output


def _as_float(array: np.ndarray) -> np.ndarray:
    return array.astype(np.complex128 if array.dtype.kind == "c" else np.float64)


def error_to_oracle(values: np.ndarray, oracle: np.ndarray) -> dict:
    """Max abs, max rel and RMSE of ``values`` to ``oracle`` (a NaN or inf where the oracle has a
    different value counts as an infinite error; equal NaN/inf positions count as 0)."""
    a, b = _as_float(values), _as_float(oracle)
    same_nonfinite = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
    diff = np.where(same_nonfinite, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    if diff.size == 0:
        return {"max_abs": 0.0, "max_rel": 0.0, "rmse": 0.0}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(b))
        rmse = float(np.sqrt(np.mean(np.square(diff))))
    return {"max_abs": float(diff.max()), "max_rel": float(np.nan_to_num(rel, nan=np.inf, posinf=np.inf).max()),
            "rmse": rmse}


def rounded_to(oracle: np.ndarray, dtype: str) -> np.ndarray:
    """The float64 oracle rounded to a config dtype (round to nearest even; bfloat16 via float32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "bfloat16":
            return inp.round_to_bfloat16(oracle.astype(np.float32))
        return oracle.astype(inp.numpy_dtype(dtype))


def oracles_agree(paddle64: np.ndarray, torch64: np.ndarray) -> tuple[bool, float]:
    """(agree, max |paddle64 - torch64| / scale) under AGREE_RTOL (NaN/inf positions must match)."""
    a, b = _as_float(paddle64), _as_float(torch64)
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
    b = np.abs(_as_float(oracle))
    finite = b[np.isfinite(b)]
    rms = float(np.sqrt(np.mean(np.square(finite)))) if finite.size else 0.0
    return NOISE_ULPS * EPS[dtype] * max(rms, float(np.finfo(np.float64).tiny))


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


def no_oracle(label: str, code: str, reason: str) -> dict:
    return {"output": label, "reading": Reading.NO_ORACLE, "no_oracle": code, "reason": reason}


def read_output(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out) -> dict:
    """One output's (or gradient's) reading from the four results (config dtype / float64, both sides)."""
    arrays = (low_p.array, low_t.array, high_p.array, high_t.array)
    if any(a is None for a in arrays):
        return no_oracle(label, NoOracle.NOT_NUMERIC, "an output is None on one side")
    dtype = low_t.dtype if low_t.is_tensor else None
    if dtype is None or any(a.dtype.kind not in "fc" for a in arrays):
        return no_oracle(label, NoOracle.EXACT_DTYPE, "integer/bool (or non-tensor) output: compared exactly")
    if dtype in HIGH:
        return no_oracle(label, NoOracle.FLOAT64_CONFIG, f"the output is {dtype} at the config's dtypes")
    if high_p.dtype not in HIGH or high_t.dtype not in HIGH:
        return no_oracle(label, NoOracle.CANNOT_UPCAST,
                         f"the upcast run gives {high_p.dtype} (paddle) / {high_t.dtype} (torch), not float64: "
                         "an argument fixes the output dtype")
    if len({a.shape for a in arrays}) != 1:
        return no_oracle(label, NoOracle.NOT_NUMERIC, "the outputs' shapes differ")
    agree, gap = oracles_agree(high_p.array, high_t.array)
    if not agree:
        return no_oracle(label, NoOracle.DISPUTED, f"the float64 results disagree (max gap {gap:.3g} of the "
                                                   f"output's scale, over {AGREE_RTOL:g})")
    oracle = high_t.array
    # Each side is measured against the oracle rounded to the output's dtype: the correctly rounded
    # result.  Against the raw float64 value, a float16 product that rightly overflows to inf (x*1e6
    # for |x| > 0.066) would count as an infinite error on both sides.
    rounded = rounded_to(oracle, dtype)
    paddle_err, torch_err = error_to_oracle(low_p.array, rounded), error_to_oracle(low_t.array, rounded)
    floor = noise_floor(oracle, dtype if dtype in EPS else "float32")
    return {"output": label, "reading": read_errors(paddle_err["rmse"], torch_err["rmse"], floor),
            "dtype": dtype, "noise_floor": encode_float(floor), "k": K, "oracle_gap": encode_float(gap),
            "paddle": {k: encode_float(v) for k, v in paddle_err.items()},
            "torch": {k: encode_float(v) for k, v in torch_err.items()}}


# ---------------------------------------------------------------- the oracle of one draw


def oracle_for(prepared, materialised: dict, draw: inp.Draw, *, grads: bool) -> dict:
    """Readings of every forward output (and, with ``grads``, every input gradient) of one draw.

    ``prepared`` is the strict layer (``execute._strict_sides``).  Returns {"readings": [...],
    "no_oracle": code or None, "reason": text} -- the readings are per output, labelled as the
    verdict labels them ("output 0", "grad x")."""
    level = config_level_reason(prepared, materialised)
    if level is not None:
        return {"readings": [], "no_oracle": level[0], "reason": level[1]}
    grad_of = output_gradients(prepared, materialised, draw) if grads else {}
    high_inputs = upcast(materialised)
    high_grad_of = {i: g.astype(np.complex128 if g.dtype.kind == "c" else np.float64) for i, g in grad_of.items()}
    runs = {
        "low_p": run_side("paddle", prepared, ex._copy_inputs(materialised), grad_of),
        "low_t": run_side("torch", prepared, ex._copy_inputs(materialised), grad_of),
        "high_p": run_side("paddle", prepared, ex._copy_inputs(high_inputs), high_grad_of),
        "high_t": run_side("torch", prepared, ex._copy_inputs(high_inputs), high_grad_of),
    }
    failed = [f"{key}: {run.error}" for key, run in runs.items() if run.error]
    if failed:
        return {"readings": [], "no_oracle": NoOracle.SIDE_RAISED,
                "reason": "a side raised: " + "; ".join(failed)[:400]}
    readings = [read_output(f"output {i}", *(run.outputs[i] for run in runs.values()))
                for i in range(min(len(run.outputs) for run in runs.values()))]
    low_p = runs["low_p"]
    if grad_of and len({len(run.grads) for run in runs.values()}) == 1:
        readings += [read_output(label, *(run.grads[j] for run in runs.values()))
                     for j, label in enumerate(low_p.grad_labels)]
    return {"readings": readings, "no_oracle": None, "reason": ""}


def reading_of(oracle: dict, output: str | None) -> dict:
    """The reading of the verdict's failing output (``Verdict.output``), or the oracle's no_oracle."""
    for reading in oracle["readings"]:
        if reading["output"] == output:
            return reading
    if oracle.get("no_oracle"):
        return no_oracle(output or "", oracle["no_oracle"], oracle["reason"])
    return no_oracle(output or "", NoOracle.NOT_NUMERIC, f"no value reading for {output or 'this failure'}")


# ---------------------------------------------------------------- float64 gradient check
#
# Each side's analytic float64 gradient of L = sum_i <output_i, grad_i> is checked against the numeric
# derivative of that side's own float64 forward, element by element (``element_derivative``):
#
# * the step is scaled to the element's magnitude, h = GRAD_STEP * max(|x|, 1), and taken as the difference
#   of two representable numbers ((x + h) - x), so that the quotient divides by the step actually taken;
# * each side of x is estimated on its own -- forward (f(x+s) - f(x)) / s and backward (f(x) - f(x-s)) / s at
#   s = h and h/2 -- and a one-sided estimate counts once its two steps agree (GRAD_ATOL / GRAD_RTOL); it is then
#   Richardson-extrapolated (2 D(h/2) - D(h): the first-order error cancels).  Where the two steps disagree the
#   step straddles something narrower than itself (eps's clamp in cosine_similarity: the clamped region is
#   ~eps wide), and the step is divided by GRAD_REFINE, at most GRAD_LEVELS times;
# * where the two one-sided derivatives agree the point is smooth and the central estimate, Richardson-
#   extrapolated ((4 C(h/2) - C(h)) / 3), is the derivative; where they disagree the point is a kink (relu or
#   abs at 0, a clip bound): there is no derivative, and any value between the two one-sided derivatives (the
#   Clarke subgradient) is a convention, not an error -- relu'(0) = 0 and abs'(0) = 0 both match;
# * where the forward is not finite on one side (a domain boundary: sqrt at 0 from below) the other side's
#   one-sided derivative alone is the derivative; one-sided estimates that grow without bound as the step
#   shrinks (sqrt at 0 from above) are a vertical tangent, matched only by an infinite gradient of that sign;
# * a NaN gradient where a one-sided derivative is finite misses it, whatever the other side says.
#
# An element is then "match", "miss" or "unresolved" (no estimate settles it: noisy or unbounded where the
# gradient is finite).  ``side_off`` names the side whose gradient misses while the other side's matches.
# With a reference derivative (``reference_gradient``: the API's documented function differentiated on its own,
# e.g. with mpmath.diff), both sides are judged against it instead of against their own forwards.

GRAD_STEP = 1e-6  # torch.autograd.gradcheck's eps, relative to the element's magnitude
GRAD_ATOL = 1e-5  # gradcheck's atol and rtol
GRAD_RTOL = 1e-3
GRAD_REFINE = 10.0  # a one-sided estimate that has not settled is tried again at a 10x smaller step ...
GRAD_LEVELS = 7     # ... down to GRAD_STEP * 1e-6 (1e-12 relative): float64 still resolves a derivative there
GRADCHECK_MAX_ELEMENTS = 512
GRADCHECK_MAX_FORWARDS = 6_000  # per side (level 0 takes 4 per element): past it, elements stay unresolved
GRADCHECK_MAX_SECONDS = 60.0    # per side, likewise: a slow forward (10 ms x 6,000) stays inside DIAGNOSE_TIMEOUT

MATCH, MISS, UNRESOLVED = "match", "miss", "unresolved"


def _close(a: float, b: float, spread: float = 0.0) -> bool:
    """Within gradcheck's tolerance of b, widened by the estimate's own spread (|D(h) - D(h/2)|: what the
    Richardson step corrected, an upper bound of what it leaves)."""
    return abs(a - b) <= GRAD_ATOL + GRAD_RTOL * abs(b) + spread


@dataclass
class OneSided:
    """One side of a point (direction +1: forward, -1: backward): its extrapolated derivative, or why not."""

    state: str = UNRESOLVED  # "value", "outside" (the forward is not finite there), "unbounded", UNRESOLVED
    value: float | None = None
    sign: int = 0  # "unbounded": the sign the estimates grow with
    level: int = -1
    pair: tuple[float, float] | None = None  # D(h), D(h/2) at that level (for the central estimate)

    @property
    def spread(self) -> float:
        return abs(self.pair[0] - self.pair[1]) if self.pair else 0.0


@dataclass
class Derivative:
    """The numeric derivative of one element: both one-sided ones, and the central one where they agree."""

    forward: OneSided
    backward: OneSided
    central: float | None = None  # set where the point is smooth (the one-sided derivatives agree)

    @property
    def spread(self) -> float:
        return max(self.forward.spread, self.backward.spread)

    @property
    def kink(self) -> bool:
        return self.forward.state == self.backward.state == "value" and self.central is None

    @property
    def values(self) -> list[float]:
        return [s.value for s in (self.forward, self.backward) if s.state == "value"]


class _Budget:
    """Forwards (and seconds) one side's check may still spend."""

    def __init__(self, forwards: int, seconds: float = GRADCHECK_MAX_SECONDS):
        self.left = forwards
        self.until = time.monotonic() + seconds

    def take(self, forwards: int) -> bool:
        if self.left < forwards or time.monotonic() > self.until:
            return False
        self.left -= forwards
        return True


def element_derivative(f, x: float, f0, budget: _Budget | None = None) -> Derivative:
    """The numeric derivative at ``x`` of the scalar function ``f`` (``f0`` = f(x)); see the rule above.  ``f`` may
    return the terms of its sum (an array, ``f0`` too): differences are then taken term by term."""
    budget = budget or _Budget(GRADCHECK_MAX_FORWARDS)
    base = GRAD_STEP * max(abs(x), 1.0)
    sides = {+1: OneSided(), -1: OneSided()}
    growth: dict[int, list[float]] = {+1: [], -1: []}
    for level in range(GRAD_LEVELS):
        h = base / GRAD_REFINE ** level
        for direction, side in sides.items():
            if side.state in ("value", "outside") or not budget.take(2):
                continue
            d1, d2 = _quotient(f, x, f0, direction * h), _quotient(f, x, f0, direction * h / 2)
            if d1 is None or d2 is None:
                if level == 0 and d1 is None and d2 is None:
                    side.state = "outside"  # the forward is NaN/inf just beside x: a domain boundary
                continue
            if _close(d1, d2):
                side.state, side.value, side.level, side.pair = "value", 2 * d2 - d1, level, (d1, d2)
                continue
            growth[direction] += [d1, d2]
        if all(s.state in ("value", "outside") for s in sides.values()):
            break
    for direction, side in sides.items():
        if side.state == UNRESOLVED and _grows(growth[direction]):
            side.state, side.sign = "unbounded", 1 if growth[direction][-1] > 0 else -1
    found = Derivative(sides[+1], sides[-1])
    fwd, bwd = found.forward, found.backward
    if fwd.state == bwd.state == "value" and _close(fwd.value, bwd.value, max(fwd.spread, bwd.spread)):
        if fwd.level == bwd.level:  # central differences at the same steps, Richardson (even-order errors)
            c1, c2 = (fwd.pair[0] + bwd.pair[0]) / 2, (fwd.pair[1] + bwd.pair[1]) / 2
            found.central = (4 * c2 - c1) / 3
        else:
            found.central = (fwd.value + bwd.value) / 2
    return found


def _quotient(f, x: float, f0, step: float) -> float | None:
    """(f(x + s) - f(x)) / s with s the step actually representable at x; None where f(x + s) is not finite.

    ``f`` may return the terms of a sum instead of the sum (an array): the difference is then taken term by term
    before summing, so that a term of 1e246 the step does not touch cannot swallow a change of 1e-6 in another."""
    moved = float(np.float64(x) + np.float64(step))
    taken = moved - x
    if taken == 0.0:
        return None
    value = np.asarray(f(moved), dtype=np.float64)
    if not np.isfinite(value).all():
        return None
    with np.errstate(all="ignore"):
        quotient = float(np.sum(value - f0)) / taken
    return quotient if math.isfinite(quotient) else None


def _grows(estimates: list[float]) -> bool:
    """Estimates (coarse to fine) of one sign whose magnitude grows, by GRAD_REFINE overall: a vertical tangent."""
    if len(estimates) < 4 or not all(math.isfinite(e) and e != 0 for e in estimates):
        return False
    signs = {e > 0 for e in estimates}
    sizes = [abs(e) for e in estimates]
    return len(signs) == 1 and all(b > a for a, b in zip(sizes, sizes[1:])) and sizes[-1] >= GRAD_REFINE * sizes[0]


def judge(analytic: float, d: Derivative) -> str:
    """MATCH / MISS / UNRESOLVED: does one element's analytic gradient agree with its numeric derivative?"""
    fwd, bwd = d.forward, d.backward
    values = d.values
    if math.isnan(analytic):
        return MISS if values else UNRESOLVED
    if math.isinf(analytic):
        sign = 1 if analytic > 0 else -1
        if sign in {s.sign for s in (fwd, bwd) if s.state == "unbounded"}:
            return MATCH
        unbounded = "unbounded" in (fwd.state, bwd.state)
        return MISS if values and not unbounded else UNRESOLVED
    if d.central is not None:
        return MATCH if _close(analytic, d.central, d.spread) else MISS
    if d.kink:  # between the one-sided derivatives: a subgradient, a convention
        low, high = min(values), max(values)
        slack = GRAD_ATOL + GRAD_RTOL * max(abs(low), abs(high)) + d.spread
        return MATCH if low - slack <= analytic <= high + slack else MISS
    if len(values) == 1:
        if _close(analytic, values[0], d.spread):
            return MATCH
        other = bwd if fwd.state == "value" else fwd
        return MISS if other.state == "outside" else UNRESOLVED
    return UNRESOLVED


def _loss(name: str, prepared, materialised: dict, grad_of: dict[int, np.ndarray],
          frozen: dict | None = None) -> np.ndarray:
    """The terms of sum_i <output_i, grad_i> of one side's float64 forward (its derivative is the input gradient),
    flat: the sum is taken after differencing (``_quotient``).

    ``frozen`` ({output index: (mask, values)}): output elements left out of the sum because they are not finite
    at the unperturbed input (their gradient weight is 0); where one of them changes, the loss is NaN (the step
    reached an output the check cannot measure, so the element is not judged from that side)."""
    run = run_side(name, prepared, ex._copy_inputs(materialised))
    if run.error:
        raise RuntimeError(run.error)
    terms = []
    for i, g in grad_of.items():
        values = np.real(np.asarray(run.outputs[i].array)).astype(np.float64)
        if frozen and i in frozen:
            mask, kept = frozen[i]
            if values.shape != mask.shape or not np.array_equal(values[mask], kept, equal_nan=True):
                return np.array([math.nan])
            values = np.where(mask, 0.0, values)  # inf * 0 would be NaN
        with np.errstate(all="ignore"):
            terms.append(np.broadcast_to(values * g, np.broadcast_shapes(values.shape, g.shape)).reshape(-1))
    return np.concatenate(terms) if terms else np.zeros(0)


def _finite_part(name: str, prepared, high: dict, grad_of: dict[int, np.ndarray]) -> tuple[dict, dict]:
    """The output-gradients with a 0 weight on every output element that is not finite at ``high`` (inf * 0 is
    NaN: such an element would make every finite difference NaN), and those elements' values (``_loss``'s
    ``frozen``).  The analytic gradient is taken with the same weights, so both differentiate one function."""
    run = run_side(name, prepared, ex._copy_inputs(high))
    if run.error:
        raise RuntimeError(run.error)
    weights, frozen = {}, {}
    for i, g in grad_of.items():
        values = np.asarray(run.outputs[i].array, dtype=np.float64)
        mask = ~np.isfinite(values) if values.shape == np.broadcast_shapes(values.shape, g.shape) else None
        if mask is not None and mask.any():
            weights[i] = np.where(mask, 0.0, g)
            frozen[i] = (mask, values[mask])
        else:
            weights[i] = g
    return weights, frozen


def gradient_check(prepared, materialised: dict, draw: inp.Draw, reference_gradient=None) -> dict:
    """Each side's analytic float64 gradient against the numeric derivative of its own float64 forward
    (the rule above), per input: ``side_off`` (the one side that misses anywhere while the other matches) and
    ``side_off_by_output`` ({"grad x2": "paddle"}), with each side's misses as evidence.

    ``reference_gradient`` (optional, the hook for a spec's independent reference): a callable taking the
    float64 inputs (the materialised dict) and the output-gradients ({output index: array}) and returning the
    true gradient of sum_i <ref_output_i, grad_i> for each floating input (a list of arrays, input order), or
    None; NaN where it has no value.  Given, both sides are judged against it (``"against": "reference"``).

    Real floating inputs only (complex gradients follow conventions that differ between the two frameworks);
    bounded by GRADCHECK_MAX_ELEMENTS and, per side, GRADCHECK_MAX_FORWARDS and GRADCHECK_MAX_SECONDS."""
    leaves = [t for t in input_tensors(materialised) if t.dtype in ex.FLOATING]
    count = sum(t.array.size for t in leaves)
    if not prepared.want_grad or not leaves:
        return {"ran": False, "reason": "no differentiable floating input"}
    if count > GRADCHECK_MAX_ELEMENTS:
        return {"ran": False, "reason": f"{count} floating input elements, over {GRADCHECK_MAX_ELEMENTS}"}
    grad_of = output_gradients(prepared, materialised, draw)
    if not grad_of:
        return {"ran": False, "reason": "no output differentiable on both sides"}
    high = upcast(materialised)
    high_grad_of = {i: g.astype(np.float64) for i, g in grad_of.items()}
    reference = None
    if reference_gradient is not None:
        found = reference_gradient(ex._copy_inputs(high), dict(high_grad_of))
        reference = [np.asarray(r, dtype=np.float64).reshape(-1) for r in found] if found is not None else None
    result = {"ran": True, "elements": count, "step": GRAD_STEP, "atol": GRAD_ATOL, "rtol": GRAD_RTOL,
              "method": ("reference derivative" if reference is not None else
                         "one-sided differences, Richardson-extrapolated; central where both sides agree"),
              "against": "reference" if reference is not None else "own_forward"}
    for name in ("paddle", "torch"):
        result[name] = _side_gradient_check(name, prepared, high, high_grad_of, reference)
    matches = {name: result[name].get("matches") for name in ("paddle", "torch")}
    misses = [name for name, ok in matches.items() if ok is False]
    result["side_off"] = misses[0] if len(misses) == 1 and True in matches.values() else None
    by_output = {}
    labels = result["paddle"].get("outputs", {}).keys() & result["torch"].get("outputs", {}).keys()
    for label in sorted(labels):
        per = {name: result[name]["outputs"][label] for name in ("paddle", "torch")}
        off = [name for name in per if per[name]["miss"]]
        if len(off) == 1:
            other = per["torch" if off[0] == "paddle" else "paddle"]
            if other["match"] and set(per[off[0]]["missed_at"]) - set(other["unresolved_at"]):
                by_output[label] = off[0]
    result["side_off_by_output"] = by_output
    result["evidence"] = {label: _evidence(label, side, result) for label, side in by_output.items()}
    for name in ("paddle", "torch"):  # the positions were for the comparison; the JSON keeps the first few
        for out in result[name].get("outputs", {}).values():
            out["missed_at"] = out["missed_at"][:20]
            del out["unresolved_at"]
    return result


def _side_gradient_check(name: str, prepared, high: dict, grad_of: dict[int, np.ndarray],
                         reference: list[np.ndarray] | None = None) -> dict:
    try:
        grad_of, frozen = (grad_of, {}) if reference is not None else _finite_part(name, prepared, high, grad_of)
    except Exception as exc:
        return {"matches": None, "error": str(exc)[:300]}
    analytic = run_side(name, prepared, ex._copy_inputs(high), grad_of)
    if analytic.error:
        return {"matches": None, "error": analytic.error}
    leaves = [t for t in input_tensors(high) if t.dtype in ex.FLOATING]  # the order _convert takes leaves in
    budget = _Budget(GRADCHECK_MAX_FORWARDS)
    outputs, worst = {}, 0.0
    try:
        f0 = _loss(name, prepared, high, grad_of, frozen) if reference is None else None
        for position, (leaf, grad, label) in enumerate(zip(leaves, analytic.grads, analytic.grad_labels)):
            have = np.asarray(grad.array, dtype=np.float64).reshape(-1)
            out = {MATCH: 0, MISS: 0, UNRESOLVED: 0, "kinks": 0, "missed_at": [], "unresolved_at": [], "first_miss": None}
            flat = leaf.array.reshape(-1)
            for j in range(flat.size):
                if reference is not None:
                    want = float(reference[position][j])
                    verdict = UNRESOLVED if math.isnan(want) else (
                        MATCH if math.isfinite(have[j]) and _close(float(have[j]), want) or have[j] == want else MISS)
                    numeric = {"reference": encode_float(want)}
                    if math.isfinite(want) and math.isfinite(have[j]):
                        worst = max(worst, abs(float(have[j]) - want))
                else:
                    d = _derivative_at(name, prepared, high, grad_of, frozen, flat, j, f0, budget)
                    verdict = judge(float(have[j]), d)
                    out["kinks"] += d.kink
                    numeric = _numeric_summary(d)
                    if d.central is not None and math.isfinite(have[j]):
                        worst = max(worst, abs(float(have[j]) - d.central))
                out[verdict] += 1
                if verdict == MISS:
                    out["missed_at"].append(j)
                    if out["first_miss"] is None:
                        out["first_miss"] = {"index": _index(leaf.array.shape, j), "analytic": encode_float(have[j]),
                                             **numeric}
                elif verdict == UNRESOLVED:
                    out["unresolved_at"].append(j)
            outputs[label] = out
    except Exception as exc:  # a perturbed input the side rejects
        return {"matches": None, "error": str(exc)[:300]}
    return {"matches": not any(o[MISS] for o in outputs.values()), "max_abs": encode_float(worst), "outputs": outputs}


def _derivative_at(name, prepared, high, grad_of, frozen, flat: np.ndarray, j: int, f0: np.ndarray,
                   budget: _Budget) -> Derivative:
    keep = float(flat[j])

    def f(value: float) -> np.ndarray:
        flat[j] = value
        try:
            return _loss(name, prepared, high, grad_of, frozen)
        finally:
            flat[j] = keep

    return element_derivative(f, keep, f0, budget)


def _numeric_summary(d: Derivative) -> dict:
    if d.central is not None:
        return {"numeric": encode_float(d.central)}
    out = {}
    for key, side in (("forward", d.forward), ("backward", d.backward)):
        out[key] = encode_float(side.value) if side.state == "value" else side.state + (
            f" {'+' if side.sign > 0 else '-'}" if side.state == "unbounded" else "")
    return out


def _index(shape: tuple, j: int) -> list[int]:
    return [int(i) for i in np.unravel_index(j, shape)] if shape else []


def _evidence(label: str, off: str, result: dict) -> str:
    """A sentence saying how the side off misses at ``label`` while the other side matches."""
    other = "torch" if off == "paddle" else "paddle"
    o, t = result[off]["outputs"][label], result[other]["outputs"][label]
    miss = o["first_miss"] or {}
    if "reference" in miss:
        want = f"the reference derivative is {_num(miss['reference'])}"
    elif "numeric" in miss:
        want = f"the numeric derivative is {_num(miss['numeric'])}"
    else:
        want = (f"the one-sided derivatives are {_num(miss.get('forward'))} (forward) and "
                f"{_num(miss.get('backward'))} (backward)")
    source = "a reference derivative" if result.get("against") == "reference" else "its own float64 forward's"
    total = o[MATCH] + o[MISS] + o[UNRESOLVED]
    kinks = f", {t['kinks']} at a kink" if t.get("kinks") else ""
    return (f"float64 gradient check of {label}: {off.capitalize()}'s gradient misses {source} derivative at "
            f"{o[MISS]} of {total} elements (at {miss.get('index')}: {_num(miss.get('analytic'))} where "
            f"{want}); {other.capitalize()}'s matches at {t[MATCH]} of {total}{kinks}")


def _num(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)
