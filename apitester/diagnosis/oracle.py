"""A float64 oracle for one config: which side is off the exact value, and by how much.

The draw that failed (``Verdict.draw``: kind + seed, ``apitester.inputs``) is materialised at the
config's dtypes, then the same numbers are upcast to float64 (complex64 -> complex128; integer and
bool inputs are left as they are) and run through the strict Paddle call *and* the strict Torch call
(the layer "fix verified" reads).  Where the two float64 results agree (``AGREE_RTOL``) Torch's
float64 result is the oracle; where they do not, there is none (``disputed``).  Each side's result at
the config's dtype is then measured against it (max abs, max rel, RMSE) and read with
``apitester.vocab.Reading`` (``read_errors``; the rule and its constants are documented there and in
docs/diagnosis.md).

Where that float64 pair is ``disputed``, where the config is float64 already (nothing to upcast to), or
where a result is NaN/inf, the spec's independent reference (``Spec.ref``: NumPy / SciPy / mpmath at
>= 30 digits, rounded once to float64; ``apitester.references``) is the oracle instead when the spec
has one: each side's config-dtype result is measured against it by the same rule, and the reading
says ``"oracle": "reference"``, names the reference as ``evidence`` and, for a disputed pair, which
framework's float64 result computes the documented function (``float64_match``).  A NaN or inf on a
side where the oracle is finite (or a finite value where it is NaN/inf) is that side's error and the
reading's ``nonfinite`` says so (docs/diagnosis.md, "The independent reference").

For a backward failure a float64 gradient check (``gradient_check``: one-sided differences at a step scaled
to each element, refined where the step straddles a clamp, Richardson-extrapolated, kinks read as
subgradients) says whether each side's analytic float64 gradient matches the numeric derivative of its own
float64 forward, and which side misses it; it checks every element of small inputs (``GRADCHECK_MAX_ELEMENTS``,
i.e. after shrinking) and, on larger ones, the elements where the two sides' float64 gradients differ most
(``GRADCHECK_CHOSEN``): the difference is the question, and a side's miss there is a miss wherever it is.

Everything returned is plain JSON values (floats through ``compare.encode_float``).
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import trial
from .. import inputs as inp
from .. import references
from ..compare import Out, encode_float
from ..specs.base import dtype_name
from ..vocab import AdaptationKind, ConventionKind, NoOracle, Reading, ReadingSource

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

# The independent reference runs in mpmath element by element: above this many input elements it is
# not run and the reading is ``too_large`` (shrinking then adopts the reading of the first smaller
# candidate, as for the oracle's own bound).
REF_MAX_ELEMENTS = 1 << 15
# A framework's float64 result computes the documented function when it is within this of the
# reference (the float64 pair's own agreement rule, ``oracles_agree``).
REF_RTOL = AGREE_RTOL
# Float64's machine epsilon: the noise floor of a float64 config measured against the reference.
EPS64 = 2.0 ** -52


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
        return prepared.paddle_side, trial.to_paddle, trial.paddle_out
    return prepared.torch_side, trial.to_torch, trial.torch_out


def run_side(name: str, prepared, materialised: dict, grad_of: dict[int, np.ndarray] | None = None) -> SideRun:
    """Run Paddle's (``name="paddle"``) or Torch's side of ``prepared`` on ``materialised``.

    ``grad_of`` maps an output index to its output-gradient array: the input gradients are then
    computed from those outputs (the engine's backward: ``trial.run_backward``)."""
    side, convert, to_out = _side_parts(name, prepared)
    values, leaves = trial.convert(materialised, convert, bool(grad_of))
    try:
        raw = side(values)
        if prepared.spec.outputs is not None:
            raw = prepared.spec.outputs(raw)
    except Exception as exc:
        return SideRun(error=trial.short_error(exc))
    flat = trial.flatten_outputs(raw)
    run = SideRun(outputs=[to_out(v) for v in flat])
    if grad_of:
        try:
            grads = _input_grads(name, flat, leaves, grad_of)
        except Exception as exc:
            return SideRun(outputs=run.outputs, error=f"backward: {trial.short_error(exc)}")
        run.grads = [trial.grad_out(g, leaf, to_out) for leaf, g in zip(leaves.tensors, grads)]
        run.grad_labels = [f"grad {label}" for label in leaves.labels]
    return run


def _input_grads(name: str, flat: list, leaves, grad_of: dict[int, np.ndarray]):
    paddle, torch = trial.frameworks()
    pairs = [(i, flat[i], g) for i, g in sorted(grad_of.items()) if i < len(flat)]
    if name == "paddle":
        outs = [out for _, out, _ in pairs]
        grads = [paddle.to_tensor(g).astype(out.dtype) for _, out, g in pairs]
        return paddle.grad(outs, leaves.tensors, grad_outputs=grads, allow_unused=True)
    outs = [out for _, out, _ in pairs]
    grads = [torch.from_numpy(np.array(g)).to(out.dtype) for _, out, g in pairs]
    return torch.autograd.grad(outs, leaves.tensors, grad_outputs=grads, allow_unused=True)


def output_gradients(prepared, materialised: dict, draw: inp.Draw) -> dict[int, np.ndarray]:
    """The engine's random output-gradients (``trial.output_gradient``) for the outputs both sides
    differentiate, at the config's dtype; {} when the API's backward is not compared."""
    if not prepared.want_grad:
        return {}
    p_values, p_leaves = trial.convert(materialised, trial.to_paddle, True)
    t_values, t_leaves = trial.convert(materialised, trial.to_torch, True)
    if not p_leaves.tensors:
        return {}
    try:
        p_flat = trial.flatten_outputs(prepared.paddle_side(p_values))
        t_flat = trial.flatten_outputs(prepared.torch_side(t_values))
    except Exception:
        return {}
    pairs, _ = trial.grad_outputs(p_flat, t_flat)
    return {i: trial.output_gradient(tuple(t.shape), dtype_name(t.dtype), draw.seed, i, draw.format) for i, _, t in pairs}


# ---------------------------------------------------------------- upcasting


def upcast(materialised: dict) -> dict:
    """The same input numbers at float64 / complex128 (integer and bool tensors unchanged)."""
    def leaf(t: inp.InputTensor) -> inp.InputTensor:
        high = UPCAST.get(t.dtype)
        if high is None:
            return inp.InputTensor(t.array.copy(), t.dtype)
        return inp.InputTensor(t.array.astype(high), high)

    return {k: trial.map_tensors(v, leaf) for k, v in materialised.items()}


def input_tensors(materialised: dict) -> list[inp.InputTensor]:
    """Every InputTensor of the materialised arguments, in the order the sides convert them."""
    found: list[inp.InputTensor] = []
    for value in materialised.values():
        trial.map_tensors(value, lambda t: found.append(t) or t)
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


def _rms(values: np.ndarray) -> float:
    """sqrt(mean(values^2)) without overflow: scaled by the largest magnitude (1e246 squared is inf)."""
    values = np.abs(np.asarray(values, dtype=np.float64))
    if values.size == 0:
        return 0.0
    top = float(values.max())
    if top == 0.0 or not math.isfinite(top):
        return top
    return top * float(np.sqrt(np.mean(np.square(values / top))))


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
        rmse = _rms(diff)
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
    rms = _rms(b[np.isfinite(b)])
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


# ---------------------------------------------------------------- the independent reference


class Reference:
    """The spec's ``ref`` on one draw's upcast inputs, run at most once and only when a reading needs it.

    ``outputs()`` gives the flattened reference outputs (float64 / complex128 arrays), or None with
    ``why`` saying why there are none (no ref, an argument combination it does not cover, too large)."""

    def __init__(self, prepared, high_inputs: dict, max_elements: int | None = None):
        self.spec = prepared.spec
        # the diagnosis reads a reported config with a wider bound (diagnose.REPORTED_MAX_ELEMENTS, under a timer)
        self.max_elements = REF_MAX_ELEMENTS if max_elements is None else max_elements
        self.sig = prepared.sig
        self.high_inputs = high_inputs
        self.why = ""
        self.code = None  # NoOracle.TOO_LARGE when the size bound kept it from running
        self._outputs: list[np.ndarray] | None = None
        self._ran = False
        self._checked: list[np.ndarray] | None = None  # the outputs at references.CHECK_DPS, once asked for
        self._check_why = ""

    @property
    def exists(self) -> bool:
        return self.spec.ref is not None

    @property
    def evidence(self) -> str:
        how = getattr(self.spec.ref, "how", "") or "NumPy; mpmath at 40 digits and exact rational sums, rounded once"
        return f"independent reference ({how}) of {self.spec.api}"

    def outputs(self) -> list[np.ndarray] | None:
        if not self._ran:
            self._ran = True
            self._outputs = self._run()
        return self._outputs

    def _run(self) -> list[np.ndarray] | None:
        if self.spec.ref is None:
            self.why = "the spec has no independent reference"
            return None
        elements = sum(t.array.size for t in input_tensors(self.high_inputs))
        if elements > self.max_elements:
            self.why = f"{elements} input elements, over the reference's {self.max_elements}"
            self.code = NoOracle.TOO_LARGE
            return None
        values = {k: trial.map_tensors(v, lambda t: t.array.copy()) for k, v in self.high_inputs.items()}
        try:
            with np.errstate(all="ignore"):
                raw = self.spec.ref(**trial.reference_kwargs(values, self.sig))
        except NotImplementedError as exc:
            self.why = f"the reference does not cover these arguments{': ' + str(exc) if str(exc) else ''}"
            return None
        except Exception as exc:  # an engine gap in the reference: said so, never a side's error
            self.why = f"the reference raised: {trial.short_error(exc)}"[:300]
            return None
        return [np.asarray(v) for v in trial.flatten_outputs(raw)]

    def certain(self, index: int) -> tuple[np.ndarray | None, str]:
        """Per element of output ``index``: does the reference give the same float64 value at its precision and
        at ``references.CHECK_DPS`` (NaN as NaN, inf as the same inf)?  (None, why) when the second run gives
        nothing to compare (it raised, or another shape): then no element is certain."""
        ref = self.output(index)
        if ref is None:
            return None, self.why
        if self._checked is None:  # one more run of the whole reference, at most once per draw
            self._checked, self._check_why = self._run_at(references.CHECK_DPS)
        if self._checked is None or index >= len(self._checked) or self._checked[index].shape != ref.shape:
            return None, self._check_why or f"at {references.CHECK_DPS} digits the reference gives no output {index}"
        return _same_values(ref, self._checked[index]), ""

    def _run_at(self, dps: int) -> tuple[list[np.ndarray] | None, str]:
        """The outputs at ``dps`` digits (every ref reads ``references.DPS`` when it runs), and why there are none."""
        saved = self.why, self.code
        with references.precision(dps):
            outs = self._run()
        why, (self.why, self.code) = self.why, saved
        return outs, why

    def output(self, index: int | None) -> np.ndarray | None:
        outs = self.outputs()
        if outs is None or index is None:
            return None
        if index >= len(outs):
            self.why = f"the reference gives {len(outs)} outputs, not {index + 1}"
            return None
        return outs[index]

    def checked(self, index: int) -> np.ndarray | None:
        """Output ``index`` at ``references.CHECK_DPS`` digits, once ``certain`` has run it."""
        return None if self._checked is None or index >= len(self._checked) else self._checked[index]


def _same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: equal float64 (complex128) values, NaN matching NaN; exact equality for other dtypes."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        return np.asarray(a == b, dtype=bool).reshape(a.shape)
    x, y = _as_float(a), _as_float(b)
    return (x == y) | (np.isnan(x) & np.isnan(y))


def _nonfinite_note(low_p: np.ndarray, low_t: np.ndarray, oracle: np.ndarray, against: str) -> dict:
    """Per side, the NaN / inf it gives where the oracle is finite, or the finite values where it is not."""
    notes = {}
    o = _as_float(oracle)
    for name, values in (("paddle", low_p), ("torch", low_t)):
        a = _as_float(values)
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


def _has_nonfinite(*arrays: np.ndarray) -> bool:
    return any(not np.isfinite(_as_float(a)).all() for a in arrays)


def _measure(label: str, low_p: Out, low_t: Out, oracle: np.ndarray, dtype: str, eps: float, against: str) -> dict:
    """Each side's config-dtype result against ``oracle`` rounded to the output's dtype, read by K and the floor."""
    rounded = oracle if dtype in HIGH else rounded_to(oracle, dtype)
    paddle_err, torch_err = error_to_oracle(low_p.array, rounded), error_to_oracle(low_t.array, rounded)
    b = np.abs(_as_float(oracle))
    floor = NOISE_ULPS * eps * max(_rms(b[np.isfinite(b)]), float(np.finfo(np.float64).tiny))
    reading = {"output": label, "reading": read_errors(paddle_err["rmse"], torch_err["rmse"], floor),
               "dtype": dtype, "noise_floor": encode_float(floor), "k": K,
               "paddle": {k: encode_float(v) for k, v in paddle_err.items()},
               "torch": {k: encode_float(v) for k, v in torch_err.items()}}
    notes = _nonfinite_note(low_p.array, low_t.array, oracle, against)
    if notes:
        reading["nonfinite"] = notes
    return reading


def _reference_gap(values: np.ndarray, ref: np.ndarray) -> tuple[bool, float]:
    """(computes the documented function, max gap of the output's scale) of a float64 result to the reference."""
    if np.asarray(values).shape != np.asarray(ref).shape:
        return False, math.inf
    return oracles_agree(values, ref)


def read_by_reference(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out, ref: np.ndarray,
                      reference: Reference, why: str, index: int | None = None) -> dict:
    """The reading against the spec's reference: ``why`` says what sent it there (disputed, float64, NaN).

    With the output's ``index``, a reading that names a side is checked against the reference at a second
    precision (``certain_reading``)."""
    reading = _reading_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why)
    if index is None or reading["reading"] not in SIDE_READINGS:
        return reading
    return certain_reading(reading, (low_p, low_t, high_p, high_t), ref, reference, why, index)


# The readings that name a side: only these re-run the reference at the second precision (the check's cost is
# one more reference run, paid where a side is named, not on every within_rounding output).
SIDE_READINGS = (Reading.PADDLE_OFF, Reading.TORCH_OFF, Reading.BOTH_OFF)


def _cut(out: Out, mask: np.ndarray) -> Out:
    array = np.asarray(out.array)
    return Out(array[mask] if array.shape == mask.shape else array, out.dtype, out.is_tensor)


def certain_reading(reading: dict, outs: tuple, ref: np.ndarray, reference: Reference, why: str,
                    index: int) -> dict:
    """A side reading stands only where the reference is certain of itself: its value, rounded to float64, is the
    same at ``references.REFERENCE_DPS`` and ``references.CHECK_DPS`` digits on every element, or the reading
    is the same on the certain elements alone.  Otherwise ``no_oracle`` / ``reference_uncertain``, never a side."""
    certain, trouble = reference.certain(index)
    digits = [references.REFERENCE_DPS, references.CHECK_DPS]
    if certain is not None and certain.all():
        return {**reading, "reference_check": {"digits": digits, "uncertain": 0}}
    uncertain = ref.size if certain is None else int((~certain).sum())
    check = {"digits": digits, "uncertain": uncertain}
    if certain is not None and certain.any():
        part = _reading_by_reference(reading["output"], *(_cut(o, certain) for o in outs), ref[certain],
                                     reference, why)
        if part["reading"] == reading["reading"]:
            note = (f"the reference differs at {digits[0]} and {digits[1]} digits on {uncertain} of {ref.size} "
                    f"elements; the reading is the same without them")
            return {**reading, "reference_check": check, "reason": f"{reading['reason']}; {note}"}
    if certain is None:
        detail = f"its value at {digits[1]} digits could not be compared: {trouble}"
    else:
        at = int(np.flatnonzero(~certain.reshape(-1))[0])
        high = reference.checked(index).reshape(-1)[at]
        detail = (f"{uncertain} of {ref.size} elements differ at {digits[0]} and {digits[1]} digits "
                  f"(e.g. element {at}: {ref.reshape(-1)[at]:.6g} and {high:.6g})")
    out = no_oracle(reading["output"], NoOracle.REFERENCE_UNCERTAIN,
                    f"{why}; the reference is not certain where it decides ({detail}): it would read "
                    f"{reading['reading']}, which it cannot settle")
    return {**out, "reference_check": check, "evidence": reference.evidence}


def _reading_by_reference(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out, ref: np.ndarray,
                          reference: Reference, why: str) -> dict:
    """read_by_reference's reading on the reference's value at its own precision."""
    dtype = low_t.dtype
    if ref.shape != np.asarray(low_t.array).shape:
        return no_oracle(label, NoOracle.NOT_NUMERIC, f"{why}; the reference's shape {ref.shape} differs "
                                                      f"from the outputs' {np.asarray(low_t.array).shape}")
    ref = ref.astype(np.complex128 if ref.dtype.kind == "c" or dtype.startswith("complex") else np.float64)
    high = dtype in HIGH
    eps = EPS64 if high else EPS.get(dtype, EPS["float32"])
    reading = _measure(label, low_p, low_t, ref, dtype, eps, "the reference")
    reading.update(oracle=ReadingSource.REFERENCE, evidence=reference.evidence)
    reasons = [why]
    if not high and high_p.dtype in HIGH and high_t.dtype in HIGH:
        match_p, gap_p = _reference_gap(high_p.array, ref)
        match_t, gap_t = _reference_gap(high_t.array, ref)
        reading["float64_match"] = {"paddle": match_p, "torch": match_t}
        reading["reference_gap"] = {"paddle": encode_float(gap_p), "torch": encode_float(gap_t)}
        if match_p != match_t:
            reasons.append(f"{'Paddle' if match_p else 'Torch'}'s float64 result computes the documented function "
                           f"(within {REF_RTOL:g} of the reference), {'Torch' if match_p else 'Paddle'}'s "
                           f"does not (gap {max(gap_p, gap_t):.3g} of the output's scale)")
        elif not match_p:
            reasons.append(f"neither float64 result computes the documented function (gaps to the reference: "
                           f"Paddle {gap_p:.3g}, Torch {gap_t:.3g} of the output's scale, over {REF_RTOL:g})")
            if reading["reading"] == Reading.WITHIN_ROUNDING:
                reading["reading"] = Reading.BOTH_OFF
    for side, note in reading.get("nonfinite", {}).items():
        reasons.append(f"{'Paddle' if side == 'paddle' else 'Torch'}: {note}")
    reading["reason"] = "; ".join(reasons)
    return reading


def _without_reference(reading: dict, reference: Reference | None) -> dict:
    """A no_oracle reading, saying why the reference did not settle it (too large: shrinking adopts a smaller one)."""
    if reference is None or not reference.exists:
        return reading
    if reference.code == NoOracle.TOO_LARGE:
        return no_oracle(reading["output"], NoOracle.TOO_LARGE, f"{reading['reason']}; {reference.why}")
    if reference.why:
        reading = {**reading, "reason": f"{reading['reason']}; no reference reading: {reference.why}"}
    return reading


def read_output(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out,
                reference: Reference | None = None, index: int | None = None) -> dict:
    """One output's (or gradient's) reading from the four results (config dtype / float64, both sides).

    ``reference`` (with the output's ``index``; None for a gradient) settles a disputed pair, a float64
    config, and a non-finite result the float64 pair agrees on while the reference is finite there."""
    arrays = (low_p.array, low_t.array, high_p.array, high_t.array)
    if any(a is None for a in arrays):
        return no_oracle(label, NoOracle.NOT_NUMERIC, "an output is None on one side")
    dtype = low_t.dtype if low_t.is_tensor else None
    if dtype is None or any(a.dtype.kind not in "fc" for a in arrays):
        return no_oracle(label, NoOracle.EXACT_DTYPE, "integer/bool (or non-tensor) output: compared exactly")
    use_ref = reference is not None and reference.exists and index is not None
    if dtype in HIGH:
        why = f"the output is {dtype} at the config's dtypes"
        ref = reference.output(index) if use_ref and low_p.array.shape == low_t.array.shape else None
        if ref is not None:
            return read_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why, index)
        return _without_reference(no_oracle(label, NoOracle.FLOAT64_CONFIG, why), reference if use_ref else None)
    if high_p.dtype not in HIGH or high_t.dtype not in HIGH:
        why = (f"the upcast run gives {high_p.dtype} (paddle) / {high_t.dtype} (torch), not float64: "
               "an argument fixes the output dtype")
        ref = reference.output(index) if use_ref and low_p.array.shape == low_t.array.shape else None
        if ref is not None:  # the reference rounded to the output's dtype is the correctly rounded result
            return read_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why, index)
        # a reference over its size bound reads too_large, so shrinking adopts a smaller candidate's reading
        return _without_reference(no_oracle(label, NoOracle.CANNOT_UPCAST, why), reference if use_ref else None)
    if len({a.shape for a in arrays}) != 1:
        return no_oracle(label, NoOracle.NOT_NUMERIC, "the outputs' shapes differ")
    agree, gap = oracles_agree(high_p.array, high_t.array)
    if not agree:
        why = f"the float64 results disagree (max gap {gap:.3g} of the output's scale, over {AGREE_RTOL:g})"
        ref = reference.output(index) if use_ref else None
        if ref is not None:
            reading = read_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why, index)
            reading["oracle_gap"] = encode_float(gap)
        else:
            reading = _without_reference(no_oracle(label, NoOracle.DISPUTED, why), reference if use_ref else None)
        agreeing = agreeing_elements(low_p, low_t, high_p, high_t)
        return {**reading, "agreeing_elements": agreeing} if agreeing else reading
    return _read_agreed(label, low_p, low_t, high_p, high_t, gap, reference if use_ref else None, index)


def agreeing_mask(paddle64: np.ndarray, torch64: np.ndarray) -> np.ndarray:
    """Elementwise ``oracles_agree``: where the two float64 results agree (within AGREE_RTOL of the output's
    scale, or the same NaN/inf)."""
    a, b = _as_float(paddle64), _as_float(torch64)
    finite = np.isfinite(a) & np.isfinite(b)
    same_nonfinite = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    scale = float(np.abs(b[finite]).max()) if finite.any() else 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        close = finite & (np.abs(a - b) <= AGREE_RTOL * (np.abs(b) + (scale or 1.0)))
    return close | same_nonfinite


def agreeing_elements(low_p: Out, low_t: Out, high_p: Out, high_t: Out) -> dict | None:
    """Where the float64 results disagree on some elements only (a tie of minimum/maximum, where each side gives
    its own subgradient), the elements where they agree read as ``_read_agreed`` reads a whole output: Torch's
    float64 value is the oracle there, each side's error to it rounded to the dtype, floor eps x RMS, K.  A value
    error on those elements (Paddle 3.0.0's float32 minimum gradient) is otherwise hidden behind the dispute.
    None where no element (or every element) agrees."""
    mask = agreeing_mask(high_p.array, high_t.array)
    count, total = int(mask.sum()), int(mask.size)
    if count == 0 or count == total:
        return None
    dtype, oracle = low_t.dtype, _as_float(high_t.array)[mask]
    rounded = rounded_to(oracle, dtype)
    paddle_err = error_to_oracle(np.asarray(low_p.array)[mask], rounded)
    torch_err = error_to_oracle(np.asarray(low_t.array)[mask], rounded)
    floor = noise_floor(oracle, dtype if dtype in EPS else "float32")
    return {"elements": count, "of": total, "dtype": dtype,
            "reading": read_errors(paddle_err["rmse"], torch_err["rmse"], floor),
            "noise_floor": encode_float(floor), "k": K,
            "paddle": {k: encode_float(v) for k, v in paddle_err.items()},
            "torch": {k: encode_float(v) for k, v in torch_err.items()}}


def _read_agreed(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out, gap: float,
                 reference: Reference | None, index: int | None) -> dict:
    """The reading where the float64 pair agrees: Torch's float64 result is the oracle, unless the pair
    agrees on a NaN/inf the reference does not have (an overflow inside both)."""
    dtype, oracle = low_t.dtype, high_t.array
    if reference is not None and _has_nonfinite(low_p.array, low_t.array, high_p.array, high_t.array):
        ref = reference.output(index)
        if ref is not None and ref.shape == oracle.shape and \
                (np.isfinite(_as_float(ref)) != np.isfinite(_as_float(oracle))).any():
            why = "the float64 results agree on a non-finite value where the reference differs"
            reading = read_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why, index)
            reading["oracle_gap"] = encode_float(gap)
            return reading
    # Each side is measured against the oracle rounded to the output's dtype: the correctly rounded
    # result.  Against the raw float64 value, a float16 product that rightly overflows to inf (x*1e6
    # for |x| > 0.066) would count as an infinite error on both sides.
    rounded = rounded_to(oracle, dtype)
    paddle_err, torch_err = error_to_oracle(low_p.array, rounded), error_to_oracle(low_t.array, rounded)
    floor = noise_floor(oracle, dtype if dtype in EPS else "float32")
    reading = {"output": label, "reading": read_errors(paddle_err["rmse"], torch_err["rmse"], floor),
               "dtype": dtype, "noise_floor": encode_float(floor), "k": K, "oracle_gap": encode_float(gap),
               "paddle": {k: encode_float(v) for k, v in paddle_err.items()},
               "torch": {k: encode_float(v) for k, v in torch_err.items()}}
    notes = _nonfinite_note(low_p.array, low_t.array, rounded, "the float64 oracle")
    if notes:
        reading["nonfinite"] = notes
    return reading


# ---------------------------------------------------------------- the oracle of one draw


# Config-level reasons a spec's reference can see past: float64 inputs (the reference computes above float64) and
# integer inputs (an integer to float16 cast rounds, and the reference rounds correctly: int64 65519 is 65504 in
# float16, not inf); the per-output readings then say whether an output is exact.
REFERENCE_SETTLES = (NoOracle.FLOAT64_CONFIG, NoOracle.EXACT_DTYPE)


def oracle_for(prepared, materialised: dict, draw: inp.Draw, *, grads: bool, ref_max_elements: int | None = None) -> dict:
    """Readings of every forward output (and, with ``grads``, every input gradient) of one draw.

    ``prepared`` is the strict layer (``Trial.strict``).  Returns {"readings": [...],
    "no_oracle": code or None, "reason": text} -- the readings are per output, labelled as the
    verdict labels them ("output 0", "grad x").  ``ref_max_elements``: the reference's input bound (default
    REF_MAX_ELEMENTS; the diagnosis reads a reported config with a wider one)."""
    level = config_level_reason(prepared, materialised)
    if level is not None and not (level[0] in REFERENCE_SETTLES and prepared.spec.ref is not None):
        return {"readings": [], "no_oracle": level[0], "reason": level[1]}
    grad_of = output_gradients(prepared, materialised, draw) if grads else {}
    high_inputs = upcast(materialised)
    high_grad_of = {i: g.astype(np.complex128 if g.dtype.kind == "c" else np.float64) for i, g in grad_of.items()}
    runs = {
        "low_p": run_side("paddle", prepared, trial.copy_inputs(materialised), grad_of),
        "low_t": run_side("torch", prepared, trial.copy_inputs(materialised), grad_of),
        "high_p": run_side("paddle", prepared, trial.copy_inputs(high_inputs), high_grad_of),
        "high_t": run_side("torch", prepared, trial.copy_inputs(high_inputs), high_grad_of),
    }
    failed = [f"{key}: {run.error}" for key, run in runs.items() if run.error]
    if failed:
        return {"readings": [], "no_oracle": NoOracle.SIDE_RAISED,
                "reason": "a side raised: " + "; ".join(failed)[:400]}
    reference = Reference(prepared, high_inputs, ref_max_elements)
    readings = [read_output(f"output {i}", *(run.outputs[i] for run in runs.values()), reference=reference, index=i)
                for i in range(min(len(run.outputs) for run in runs.values()))]
    low_p = runs["low_p"]
    if grad_of and len({len(run.grads) for run in runs.values()}) == 1:
        readings += [settle_gradient(read_output(label, *(run.grads[j] for run in runs.values())), j,
                                     reference, runs, high_grad_of)
                     for j, label in enumerate(low_p.grad_labels)]
    return {"readings": readings, "no_oracle": None, "reason": ""}


# ---------------------------------------------------------------- gradients against the reference's derivative

# The reference's derivative is taken by differences of its float64-rounded outputs (step REF_GRAD_STEP
# times the element's magnitude, at least REF_GRAD_STEP): accurate to ~1e-9 relative, so each side's float64
# gradient is matched with gradcheck's tolerances (GRAD_ATOL, GRAD_RTOL), on at most this many floating
# input elements (three reference runs per element).
REF_GRAD_MAX_ELEMENTS = 128
REF_GRAD_STEP = 1e-6
# ... and for at most this many seconds: an exact reference (fractions) of a float64 send_ue_recv took over five
# minutes for its 2 x 128 evaluations, holding a whole-set diagnosis on one config. Past it, no derivative.
REF_GRAD_MAX_SECONDS = 20.0


class ReferenceTooSlow(NotImplementedError):
    """The reference's derivative would take longer than REF_GRAD_MAX_SECONDS: not taken (the reading stays)."""


def _reference_terms(reference: Reference, grad_of: dict[int, np.ndarray]) -> list[float]:
    """The terms of sum_i <ref_i, g_i> on the reference's current inputs (differences of two such sums are
    taken exactly, over both term lists: a 1e246 term elsewhere must not swamp a change of 1e-6)."""
    reference._ran = False
    outs = reference.outputs()
    if outs is None:
        raise NotImplementedError(reference.why)
    terms = []
    for i, g in grad_of.items():
        if i >= len(outs):
            raise NotImplementedError(f"the reference gives no output {i}")
        terms.extend(np.real(np.asarray(outs[i], dtype=np.complex128 if np.iscomplexobj(outs[i]) else np.float64)
                             * g).reshape(-1).tolist())
    return terms


def _difference(a: list[float], b: list[float]) -> float:
    """sum(a) - sum(b) of two term lists of the same outputs, term by term (two close float64 values subtract
    exactly) and summed exactly; a term NaN (or the same inf) in both is unchanged by the step: 0, so a NaN
    output elsewhere does not make every derivative NaN."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        d = x - y
    d[(np.isnan(x) & np.isnan(y)) | (np.isinf(x) & (x == y))] = 0.0
    try:
        return math.fsum(d.tolist())
    except (OverflowError, ValueError):
        return float(np.sum(d))


def reference_gradient(reference: Reference, leaf: inp.InputTensor,
                       grad_of: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """d/d(leaf) of sum_i <ref_i, g_i> by central differences, and the elements where it is not one number
    (a kink: the one-sided differences disagree, or one is NaN -- a clamp, a tie, a domain edge -- or nothing
    finite moves while some output is NaN).  Where both one-sided differences are NaN the derivative is NaN."""
    flat = leaf.array.reshape(-1)
    numeric, kinks = np.zeros(flat.size), np.zeros(flat.size, dtype=bool)
    began = time.monotonic()
    try:
        base = _reference_terms(reference, grad_of)
        undefined = bool(np.isnan(np.asarray(base, dtype=np.float64)).any())
        for j in range(flat.size):
            if time.monotonic() - began > REF_GRAD_MAX_SECONDS:
                raise ReferenceTooSlow(f"over {REF_GRAD_MAX_SECONDS:g} s after {j} of {flat.size} elements")
            keep = flat[j]
            step = REF_GRAD_STEP * max(1.0, abs(float(keep))) if math.isfinite(float(keep)) else math.nan
            if math.isnan(step):
                kinks[j] = True
                continue
            flat[j] = keep + step
            up = _reference_terms(reference, grad_of)
            flat[j] = keep - step
            down = _reference_terms(reference, grad_of)
            flat[j] = keep
            forward, backward = _difference(up, base) / step, _difference(base, down) / step
            numeric[j] = _difference(up, down) / (2 * step)
            if math.isnan(forward) and math.isnan(backward):
                numeric[j] = math.nan
            elif not abs(forward - backward) <= GRAD_ATOL + GRAD_RTOL * abs(numeric[j]):
                kinks[j] = True
            elif numeric[j] == 0 and undefined:
                kinks[j] = True  # nothing finite moved: whether an undefined (NaN) output depends on it is unknown
    finally:
        reference._ran = False
    return numeric, kinks


def _gradient_matches(values: np.ndarray, numeric: np.ndarray, use: np.ndarray) -> bool:
    have = np.asarray(values, dtype=np.float64).reshape(-1)[use]
    want = numeric[use]
    with np.errstate(invalid="ignore"):
        close = np.abs(have - want) <= GRAD_ATOL + GRAD_RTOL * np.abs(want)
    return bool((close | (np.isnan(have) & np.isnan(want))).all())


def settle_gradient(reading: dict, j: int, reference: Reference, runs: dict, grad_of: dict[int, np.ndarray]) -> dict:
    """A disputed (or float64) gradient reading settled by the reference's derivative, when the spec has a
    reference and the input is small: the side whose float64 gradient alone misses it is off."""
    if reading.get("no_oracle") not in (NoOracle.DISPUTED, NoOracle.FLOAT64_CONFIG) or not reference.exists:
        return reading
    project = _gradient_part(reference)
    convention = _declared_convention(reference)
    if convention and project is None:  # which gradient the API defines is a declared convention, not a value
        return {**reading, "reason": f"{reading['reason']}; no reference derivative: a declared gradient "
                                     f"convention ({convention})"}
    leaves = [t for t in input_tensors(reference.high_inputs) if t.dtype in trial.FLOATING]
    if j >= len(leaves):
        return reading
    if sum(t.array.size for t in leaves) > REF_GRAD_MAX_ELEMENTS:  # shrinking adopts a smaller candidate's reading
        out = no_oracle(reading["output"], NoOracle.TOO_LARGE, f"{reading['reason']}; no reference derivative: "
                                                               f"over {REF_GRAD_MAX_ELEMENTS} floating input elements")
        return {**out, "agreeing_elements": reading["agreeing_elements"]} if "agreeing_elements" in reading else out
    try:
        numeric, kinks = reference_gradient(reference, leaves[j], grad_of)
    except NotImplementedError as exc:
        return {**reading, "reason": f"{reading['reason']}; no reference derivative: {exc}"}
    except Exception as exc:  # an engine gap: said so
        return {**reading, "reason": f"{reading['reason']}; no reference derivative: {trial.short_error(exc)}"[:400]}
    high = {"paddle": runs["high_p"].grads[j].array, "torch": runs["high_t"].grads[j].array}
    if any(v is None for v in high.values()):
        return reading
    part, whole = "", {}
    if project is not None:  # compared on the part of the gradient the API defines (the declared convention)
        numeric, kinks, whole, high = _on_part(project, leaves[j].array.shape, numeric, kinks, high)
        part = f" on the gradients' {project.name} (the declared gradient convention)"
    if kinks.all():
        return {**reading, "reason": f"{reading['reason']}; no reference derivative: a kink (clamp, tie, domain "
                                     f"edge) at every element of {reading['output']}"}
    use = ~kinks
    match = {side: _gradient_matches(v, numeric, use) for side, v in high.items()}
    if match["paddle"] and match["torch"] and project is not None:
        return gradient_convention_reading(reading, project, whole, numeric)
    if match["paddle"] and match["torch"]:
        left_out = f"; {int(kinks.sum())} element(s) at a kink or where an output is NaN left out" if kinks.any() else ""
        return {**reading, "reason": f"{reading['reason']}; both float64 gradients match the reference's derivative "
                                     f"within gradcheck's tolerances (atol {GRAD_ATOL:g}, rtol {GRAD_RTOL:g}){left_out}"}
    return _side_reading(reading, reference, match, high, numeric, use, part)


def _side_reading(reading: dict, reference: Reference, match: dict, high: dict, numeric: np.ndarray,
                  use: np.ndarray, part: str) -> dict:
    """settle_gradient's reading once a side misses the reference's derivative: who, each side's error, why."""
    kinks = ~use
    name = (Reading.BOTH_OFF if not (match["paddle"] or match["torch"])
            else Reading.TORCH_OFF if match["paddle"] else Reading.PADDLE_OFF)
    target = numeric[use]
    errors = {side: {k: encode_float(v) for k, v in error_to_oracle(
        np.asarray(values, dtype=np.float64).reshape(-1)[use], target).items()} for side, values in high.items()}
    out = {"output": reading["output"], "reading": name, "dtype": "float64", "k": K,
           "noise_floor": encode_float(GRAD_ATOL), "oracle": ReadingSource.REFERENCE,
           "evidence": f"derivative of the {reference.evidence} (central differences, step {REF_GRAD_STEP:g})",
           "gradient_match": match, **errors}
    notes = _nonfinite_note(np.asarray(high["paddle"]).reshape(-1)[use], np.asarray(high["torch"]).reshape(-1)[use],
                            target, "the reference's derivative")
    if notes:
        out["nonfinite"] = notes
    sides = [f"{'Paddle' if s == 'paddle' else 'Torch'}'s float64 gradient {'matches' if ok else 'misses'}"
             for s, ok in match.items()]
    out["reason"] = (f"{reading['reason']}; " + ", ".join(sides) + f" the reference's derivative{part} (gradcheck's "
                     f"tolerances)" + (f", {int(kinks.sum())} element(s) at a kink left out" if kinks.any() else "")
                     + "".join(f"; {s}: {n}" for s, n in notes.items()))
    if part:
        out["evidence"] += part
    return out


def _declared_convention(reference: Reference) -> str:
    """The reason of the spec's first gradient_convention adaptation, or ""."""
    return next((a.reason for a in reference.spec.visible_adaptations
                 if a.kind == AdaptationKind.GRADIENT_CONVENTION), "")


def _on_part(project: "functools.partial", shape, numeric: np.ndarray, kinks: np.ndarray, high: dict):
    """The derivative, its kinks and both sides' gradients projected on the part the API defines; and the sides'
    whole gradients (for the convention reading)."""
    numeric = np.asarray(project(numeric.reshape(shape))).reshape(-1)
    kinks = np.asarray(project(kinks.reshape(shape).astype(np.float64))).reshape(-1) != 0
    whole = {side: np.asarray(v).reshape(shape) for side, v in high.items()}
    return numeric, kinks, whole, {side: project(v) for side, v in whole.items()}


def gradient_convention_reading(reading: dict, project: "functools.partial", whole: dict, numeric: np.ndarray) -> dict:
    """Both sides' gradients match the reference's derivative on the part the API defines (``Spec.gradient_part``),
    so the strict difference lies outside it: a convention (``ConventionKind.GRADIENT``) naming what each side
    returns there -- the defined part only, or a part outside it too (Torch's own split between the triangles)."""
    def returns(values: np.ndarray) -> str:
        inside = np.allclose(values, project(values), rtol=1e-9, atol=1e-12, equal_nan=True)
        return f"the {project.name} only" if inside else f"more than the {project.name}"

    paddle, torch = returns(whole["paddle"]), returns(whole["torch"])
    text = (f"gradients equal on their {project.name} (the reference's derivative there); outside it Paddle "
            f"returns {paddle}, Torch {torch}")
    convention = {"kind": ConventionKind.GRADIENT, "paddle": paddle, "torch": torch, "part": project.name,
                  "text": text, "key": f"gradient: {paddle} vs {torch}"}
    return {"output": reading["output"], "reading": Reading.CONVENTION, "convention": convention,
            "oracle": ReadingSource.REFERENCE, "reason": f"{reading['reason']}; {text}",
            "float64_oracle": {"no_oracle": reading.get("no_oracle"), "reason": reading.get("reason", "")}}


def _gradient_part(reference: Reference) -> "functools.partial | None":
    """The spec's ``gradient_part`` bound to this config's non-tensor arguments, its ``name`` the part's label; None
    when no part is declared or it does not apply to these arguments (pinv without hermitian=True)."""
    part = getattr(reference.spec, "gradient_part", None)
    if part is None:
        return None
    project = functools.partial(part, **{k: v for k, v in reference.high_inputs.items() if not input_tensors({k: v})})
    if project(np.zeros((2, 2))) is None:
        return None
    project.name = getattr(part, "label", "defined part")
    return project


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
# * a NaN gradient where a one-sided derivative is finite misses it, whatever the other side says;
# * an **absorbed step** is no derivative (issue 44): where every quotient that gave an estimate is exactly 0 -- the
#   input moved, the forward did not -- and the analytic gradient says the change was at most ABSORB_ULPS units of
#   the float64 resolution of the largest operand in play (the largest finite term of the sum, or input: 2**512 + y
#   swallows y's step, as an internal sum x*y + z with |z| >> swallows x's), the zero says nothing: the element is
#   unresolved (``absorbed``), never a miss.  A forward that does not move where the change would have shown (a
#   gradient Torch gives in a triangle the factor never reads) stays a miss;
# * an element that feeds an output which is not finite at the input (logit at -0.5, log of a negative: NaN there
#   and around) has **no derivative** (``undefined_elements``: either side's gradient of those outputs alone is not
#   0 there): it is not judged, and each side's value there is kept -- Paddle 0 against Torch NaN is a convention
#   (``ConventionKind.UNDEFINED``), never a side off.
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
# Above GRADCHECK_MAX_ELEMENTS the check judges only the GRADCHECK_CHOSEN elements where the two sides' float64
# gradients differ most (a minimum/maximum whose shrink stayed large fails at a few ties among a million
# elements), up to GRADCHECK_LARGEST input elements, in GRADCHECK_CHOSEN_SECONDS per side: each judged element
# costs up to 28 whole forwards (a kink is refined at every level), 50 ms each for a broadcast to 1e7 elements.
GRADCHECK_CHOSEN = 8
GRADCHECK_CHOSEN_SECONDS = 15.0
GRADCHECK_LARGEST = 1 << 22
GRADCHECK_MAX_FORWARDS = 6_000  # per side (level 0 takes 4 per element): past it, elements stay unresolved
GRADCHECK_MAX_SECONDS = 60.0    # per side, likewise: a slow forward (10 ms x 6,000) stays inside DIAGNOSE_TIMEOUT

# A zero quotient is an absorbed step where the analytic gradient times the step is at most this many float64
# spacings of the largest operand in play: one rounding of the sum that swallows it is half a spacing, an internal
# sum and the output's own rounding another (a change of 2 spacings can still vanish), so 4 leaves room for both.
ABSORB_ULPS = 4.0
# Output elements at least this large (float64 spacing >= 2**-9) cannot show the change a step on an input of
# ordinary size makes (1e-6 x a derivative below ~500): their part of the gradient is left out of the numeric
# derivative by float64 itself (cumsum past 2**512: the outputs after it), so a miss the rest explains is unresolved.
COARSE_OUTPUT = 2.0 ** 43

MATCH, MISS, UNRESOLVED = "match", "miss", "unresolved"
UNDEFINED = "undefined"  # the element feeds an output that is not finite at the input: no derivative to judge


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
    step: float = 0.0    # "value": the step h taken at that level
    still: bool = False  # "value": both quotients exactly 0 -- the input moved and the forward did not

    @property
    def spread(self) -> float:
        return abs(self.pair[0] - self.pair[1]) if self.pair else 0.0


@dataclass
class Derivative:
    """The numeric derivative of one element: both one-sided ones, and the central one where they agree."""

    forward: OneSided
    backward: OneSided
    central: float | None = None  # set where the point is smooth (the one-sided derivatives agree)
    resolution: float = 0.0  # the float64 spacing of the largest operand in play (``absorbed``)

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


def element_derivative(f, x: float, f0, budget: _Budget | None = None, operand: float = 0.0) -> Derivative:
    """The numeric derivative at ``x`` of the scalar function ``f`` (``f0`` = f(x)); see the rule above.  ``f`` may
    return the terms of its sum (an array, ``f0`` too): differences are then taken term by term.  ``operand``: the
    largest finite magnitude among the inputs (an operand an internal sum may absorb the step in)."""
    budget = budget or _Budget(GRADCHECK_MAX_FORWARDS)
    if not math.isfinite(x):  # an infinite input cannot be stepped: no estimate
        return Derivative(OneSided(), OneSided())
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
                side.step, side.still = h, d1 == 0.0 and d2 == 0.0
                continue
            growth[direction] += [d1, d2]
        if all(s.state in ("value", "outside") for s in sides.values()):
            break
    for direction, side in sides.items():
        if side.state == UNRESOLVED and _grows(growth[direction]):
            side.state, side.sign = "unbounded", 1 if growth[direction][-1] > 0 else -1
    found = Derivative(sides[+1], sides[-1], resolution=_resolution(f0, operand))
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


def _resolution(f0, operand: float) -> float:
    """The float64 spacing of the largest finite magnitude among the sum's terms at x and ``operand``."""
    terms = np.abs(np.asarray(f0, dtype=np.float64)).reshape(-1)
    terms = terms[np.isfinite(terms)]
    largest = max(float(terms.max()) if terms.size else 0.0, abs(operand) if math.isfinite(operand) else 0.0)
    return float(np.spacing(largest))


def absorbed(analytic: float, d: Derivative) -> bool:
    """Is a zero numeric derivative an absorbed step?  Every one-sided estimate is "still" (its quotients exactly
    0) and the change the analytic gradient predicts at that step is within ABSORB_ULPS spacings of the largest
    operand in play: too small to show, so the zero is no evidence against the gradient."""
    sides = [s for s in (d.forward, d.backward) if s.state == "value"]
    if not sides or not all(s.still for s in sides) or not math.isfinite(analytic) or analytic == 0.0:
        return False
    return all(abs(analytic) * s.step <= ABSORB_ULPS * d.resolution for s in sides)


def _grows(estimates: list[float]) -> bool:
    """Estimates (coarse to fine) of one sign whose magnitude grows, by GRAD_REFINE overall: a vertical tangent."""
    if len(estimates) < 4 or not all(math.isfinite(e) and e != 0 for e in estimates):
        return False
    signs = {e > 0 for e in estimates}
    sizes = [abs(e) for e in estimates]
    return len(signs) == 1 and all(b > a for a, b in zip(sizes, sizes[1:])) and sizes[-1] >= GRAD_REFINE * sizes[0]


def judge(analytic: float, d: Derivative, coarse: float = 0.0) -> str:
    """MATCH / MISS / UNRESOLVED: does one element's analytic gradient agree with its numeric derivative?  A miss
    against an absorbed step (``_judged``: ``absorbed``, or ``coarse`` the gradient's part through outputs too large
    to move) is UNRESOLVED."""
    return _judged(analytic, d, coarse)[0]


def _judge(analytic: float, d: Derivative) -> str:
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
    run = run_side(name, prepared, trial.copy_inputs(materialised))
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
    run = run_side(name, prepared, trial.copy_inputs(high))
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
    leaves = [t for t in input_tensors(materialised) if t.dtype in trial.FLOATING]
    count = sum(t.array.size for t in leaves)
    if not prepared.want_grad or not leaves:
        return {"ran": False, "reason": "no differentiable floating input"}
    if count > GRADCHECK_LARGEST or count > GRADCHECK_MAX_ELEMENTS and reference_gradient is not None:
        return {"ran": False, "reason": f"{count} floating input elements, over "
                                        f"{GRADCHECK_MAX_ELEMENTS if reference_gradient else GRADCHECK_LARGEST}"}
    grad_of = output_gradients(prepared, materialised, draw)
    if not grad_of:
        return {"ran": False, "reason": "no output differentiable on both sides"}
    high = upcast(materialised)
    high_grad_of = {i: g.astype(np.float64) for i, g in grad_of.items()}
    chosen = differing_elements(prepared, high, high_grad_of) if count > GRADCHECK_MAX_ELEMENTS else None
    if isinstance(chosen, str):  # nothing differs to judge: why
        return {"ran": False, "reason": f"{count} floating input elements, over {GRADCHECK_MAX_ELEMENTS}: {chosen}"}
    reference = None
    if reference_gradient is not None:
        found = reference_gradient(trial.copy_inputs(high), dict(high_grad_of))
        reference = [np.asarray(r, dtype=np.float64).reshape(-1) for r in found] if found is not None else None
    result = {"ran": True, "elements": count, "step": GRAD_STEP, "atol": GRAD_ATOL, "rtol": GRAD_RTOL,
              "method": ("reference derivative" if reference is not None else
                         "one-sided differences, Richardson-extrapolated; central where both sides agree"),
              "against": "reference" if reference is not None else "own_forward"}
    if chosen is not None:
        result["chosen"] = {"elements": sum(map(len, chosen.values())), "of": count,
                            "rule": "the elements where the two float64 gradients differ most"}
    undefined = undefined_elements(prepared, high, high_grad_of) if reference is None else {}
    for name in ("paddle", "torch"):
        result[name] = _side_gradient_check(name, prepared, high, high_grad_of, reference, chosen, undefined)
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


def undefined_elements(prepared, high: dict, grad_of: dict[int, np.ndarray]) -> dict[int, set[int]]:
    """{floating input position: flat indices} of the elements with no derivative: they feed an output that is not
    finite at the input (a side's gradient of those outputs alone, each weighted 1, is not 0 there), and a side's
    gradient of the finite part is not finite there (Torch's logit at -0.5: 0 * NaN).  Either side's word counts
    (Paddle 3.0.0's logit gradient is 0 outside the domain, so only Torch's tells): both are then read there as
    they are, a convention (``ConventionKind.UNDEFINED``).  Where the finite part's gradient is finite on both
    sides (cumsum past an inf) the element is judged on the finite part as before."""
    feeds: dict[int, set[int]] = {}
    nonfinite: dict[int, set[int]] = {}
    for name in ("paddle", "torch"):
        try:
            weights, frozen = _finite_part(name, prepared, high, grad_of)
        except Exception:
            continue
        if not frozen:
            continue
        only = {i: np.where(frozen[i][0], 1.0, 0.0) if i in frozen else np.zeros_like(g) for i, g in weights.items()}
        for found, weighting, test in ((feeds, only, lambda a: a != 0.0), (nonfinite, weights, _not_finite)):
            run = run_side(name, prepared, trial.copy_inputs(high), weighting)
            for position, grad in enumerate(run.grads if not run.error else ()):
                if grad.array is not None:
                    with np.errstate(invalid="ignore"):
                        at = np.flatnonzero(test(np.asarray(grad.array, dtype=np.float64).reshape(-1)))
                    found.setdefault(position, set()).update(int(j) for j in at)
    both = {position: feeds[position] & nonfinite.get(position, set()) for position in feeds}
    return {position: js for position, js in both.items() if js}


def _not_finite(values: np.ndarray) -> np.ndarray:
    return ~np.isfinite(values)


def differing_elements(prepared, high: dict, grad_of: dict[int, np.ndarray]) -> dict[int, list[int]] | str:
    """{floating input position: flat indices} of the GRADCHECK_CHOSEN elements where the two sides' float64
    gradients differ most (a NaN against a number first), or why there are none to choose."""
    grads = {}
    for name in ("paddle", "torch"):
        run = run_side(name, prepared, trial.copy_inputs(high), grad_of)
        if run.error or any(g.array is None for g in run.grads):
            return f"no float64 gradient from {name}: {run.error or 'an input without one'}"[:300]
        grads[name] = [np.asarray(g.array, dtype=np.float64).reshape(-1) for g in run.grads]
    gaps = []
    for position, (p, t) in enumerate(zip(grads["paddle"], grads["torch"])):
        with np.errstate(invalid="ignore"):
            gap = np.where(np.isnan(p) ^ np.isnan(t), np.inf, np.nan_to_num(np.abs(p - t), nan=0.0))
            gap = np.where(gap > GRAD_ATOL + GRAD_RTOL * np.nan_to_num(np.abs(t)), gap, 0.0)
        worst = np.flatnonzero(gap)
        worst = worst[np.argsort(-gap[worst], kind="stable")[:GRADCHECK_CHOSEN]]
        gaps.extend((float(gap[j]), position, int(j)) for j in worst)
    if not gaps:
        return "the two float64 gradients agree at every element"
    chosen: dict[int, list[int]] = {}
    for _, position, j in sorted(gaps, key=lambda g: -g[0])[:GRADCHECK_CHOSEN]:
        chosen.setdefault(position, []).append(j)
    return {position: sorted(js) for position, js in chosen.items()}


def _side_gradient_check(name: str, prepared, high: dict, grad_of: dict[int, np.ndarray],
                         reference: list[np.ndarray] | None = None,
                         chosen: dict[int, list[int]] | None = None,
                         undefined: dict[int, set[int]] | None = None) -> dict:
    """One side's check: every (or every chosen) element of every floating input judged MATCH / MISS /
    UNRESOLVED, or UNDEFINED where ``undefined`` (``undefined_elements``) says it has no derivative."""
    try:
        grad_of, frozen = (grad_of, {}) if reference is not None else _finite_part(name, prepared, high, grad_of)
    except Exception as exc:
        return {"matches": None, "error": str(exc)[:300]}
    analytic = run_side(name, prepared, trial.copy_inputs(high), grad_of)
    if analytic.error:
        return {"matches": None, "error": analytic.error}
    leaves = [t for t in input_tensors(high) if t.dtype in trial.FLOATING]  # the order trial.convert takes leaves in
    misshaped = [f"{label} has shape {list(g.array.shape)}, its input {list(leaf.array.shape)}"
                 for leaf, g, label in zip(leaves, analytic.grads, analytic.grad_labels)
                 if g.array is not None and tuple(g.array.shape) != tuple(leaf.array.shape)]
    if misshaped:  # no element-wise judging of a gradient not shaped as its input (that side's error)
        return {"matches": None, "error": "; ".join(misshaped)[:300]}
    budget = _Budget(GRADCHECK_MAX_FORWARDS, GRADCHECK_MAX_SECONDS if chosen is None else GRADCHECK_CHOSEN_SECONDS)
    operand = _largest_input(leaves)
    coarse = _coarse_gradient(name, prepared, high, grad_of) if reference is None else None
    outputs, worst = {}, 0.0
    try:
        f0 = _loss(name, prepared, high, grad_of, frozen) if reference is None else None
        for position, (leaf, grad, label) in enumerate(zip(leaves, analytic.grads, analytic.grad_labels)):
            have = np.asarray(grad.array, dtype=np.float64).reshape(-1)
            out = {MATCH: 0, MISS: 0, UNRESOLVED: 0, "kinks": 0, "absorbed": 0, UNDEFINED: 0, "missed_at": [],
                   "unresolved_at": [], "first_miss": None, "first_kink": None, "first_absorbed": None,
                   "first_undefined": None}
            flat, shape, skip = leaf.array.reshape(-1), leaf.array.shape, (undefined or {}).get(position, set())
            for j in (range(flat.size) if chosen is None else chosen.get(position, ())):
                value = float(have[j])
                if j in skip:  # no derivative to judge: the side's value there is what the reading names
                    out[UNDEFINED] += 1
                    out["first_undefined"] = out["first_undefined"] or {"index": _index(shape, j),
                                                                        "analytic": encode_float(value)}
                    continue
                if reference is not None:
                    verdict, numeric, gap = _against_reference(value, float(reference[position][j]))
                else:
                    d = _derivative_at(name, prepared, high, grad_of, frozen, flat, j, f0, budget, operand)
                    verdict, why = _judged(value, d, float(coarse[position][j]) if coarse else 0.0)
                    numeric = _numeric_summary(d)
                    gap = abs(value - d.central) if d.central is not None and math.isfinite(value) else 0.0
                    _note_edges(out, d, shape, j, value, why)
                worst = max(worst, gap)
                _tally(out, verdict, shape, j, value, numeric)
            outputs[label] = out
    except Exception as exc:  # a perturbed input the side rejects
        return {"matches": None, "error": str(exc)[:300]}
    return {"matches": not any(o[MISS] for o in outputs.values()), "max_abs": encode_float(worst), "outputs": outputs}


def _largest_input(leaves) -> float:
    """The largest finite magnitude among the floating inputs: an operand an internal sum may absorb a step in."""
    sizes = [float(np.max(np.abs(a[np.isfinite(a)]))) for a in (np.asarray(t.array, dtype=np.float64) for t in leaves)
             if np.isfinite(a).any()]
    return max(sizes, default=0.0)


def _against_reference(value: float, want: float) -> tuple[str, dict, float]:
    """(verdict, numeric summary, gap) of one element against a reference derivative."""
    verdict = UNRESOLVED if math.isnan(want) else (
        MATCH if math.isfinite(value) and _close(value, want) or value == want else MISS)
    gap = abs(value - want) if math.isfinite(want) and math.isfinite(value) else 0.0
    return verdict, {"reference": encode_float(want)}, gap


def _judged(value: float, d: Derivative, coarse: float) -> tuple[str, str]:
    """The element's verdict (``judge``), and why a miss is UNRESOLVED instead: an absorbed step -- the forward did
    not move at all (``absorbed``), or the output elements of magnitude >= COARSE_OUTPUT it feeds absorbed their
    part (``coarse``: the side's own gradient of those elements alone) and the rest matches the derivative."""
    verdict = _judge(value, d)
    if verdict != MISS:
        return verdict, ""
    if absorbed(value, d):
        step = max(s.step for s in (d.forward, d.backward) if s.state == "value")
        return UNRESOLVED, (f"the forward did not change although the input moved by {step:.3g}: the change the "
                            f"gradient predicts ({abs(value) * step:.3g}) is within {ABSORB_ULPS:g} spacings "
                            f"({d.resolution:.3g}) of the largest operand (an absorbed step)")
    if coarse != 0.0 and math.isfinite(coarse) and _judge(value - coarse, d) == MATCH:
        return UNRESOLVED, (f"the derivative matches the gradient without its part through outputs of magnitude >= "
                            f"{COARSE_OUTPUT:.3g} ({coarse:.6g}), whose float64 spacing absorbs the step (an "
                            f"absorbed step)")
    return MISS, ""


def _coarse_gradient(name: str, prepared, high: dict, grad_of: dict[int, np.ndarray]) -> list[np.ndarray] | None:
    """The side's gradient of the loss restricted to its finite output elements of magnitude >= COARSE_OUTPUT (flat,
    per floating input), or None where there are none: a step on an input of ordinary size cannot move them (2**512
    + y), so the numeric derivative leaves their part out (``_judged``)."""
    try:
        run = run_side(name, prepared, trial.copy_inputs(high))
        weights = {}
        for i, g in grad_of.items():
            values = np.abs(np.real(np.asarray(run.outputs[i].array))).astype(np.float64)
            if values.shape == g.shape:
                with np.errstate(invalid="ignore"):
                    weights[i] = np.where(np.isfinite(values) & (values >= COARSE_OUTPUT), g, 0.0)
        if not any(w.any() for w in weights.values()):
            return None
        coarse = run_side(name, prepared, trial.copy_inputs(high), weights)
    except Exception:  # no such part read: misses stand
        return None
    if coarse.error or any(g.array is None for g in coarse.grads):
        return None
    return [np.asarray(g.array, dtype=np.float64).reshape(-1) for g in coarse.grads]


def _note_edges(out: dict, d: Derivative, shape: tuple, j: int, value: float, absorbed_why: str) -> None:
    """Count a kink (and keep the first: which subgradient the side chose there) and an absorbed step (and keep
    the first: why its miss is unresolved)."""
    out["kinks"] += d.kink
    if d.kink and out["first_kink"] is None:
        out["first_kink"] = {"index": _index(shape, j), "analytic": encode_float(value),
                             "left": encode_float(d.backward.value), "right": encode_float(d.forward.value)}
    if absorbed_why:
        out["absorbed"] += 1
        if out["first_absorbed"] is None:
            out["first_absorbed"] = {"index": _index(shape, j), "analytic": encode_float(value),
                                     "resolution": encode_float(d.resolution), "reason": absorbed_why}


def _tally(out: dict, verdict: str, shape: tuple, j: int, value: float, numeric: dict) -> None:
    out[verdict] += 1
    if verdict == MISS:
        out["missed_at"].append(j)
        if out["first_miss"] is None:
            out["first_miss"] = {"index": _index(shape, j), "analytic": encode_float(value), **numeric}
    elif verdict == UNRESOLVED:
        out["unresolved_at"].append(j)


def _derivative_at(name, prepared, high, grad_of, frozen, flat: np.ndarray, j: int, f0: np.ndarray,
                   budget: _Budget, operand: float = 0.0) -> Derivative:
    keep = float(flat[j])

    def f(value: float) -> np.ndarray:
        flat[j] = value
        try:
            return _loss(name, prepared, high, grad_of, frozen)
        finally:
            flat[j] = keep

    return element_derivative(f, keep, f0, budget, operand)


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
    chosen = (f" (the elements judged: where the two gradients differ most, of {result['chosen']['of']})"
              if result.get("chosen") else "")
    return (f"float64 gradient check of {label}: {off.capitalize()}'s gradient misses {source} derivative at "
            f"{o[MISS]} of {total} elements (at {miss.get('index')}: {_num(miss.get('analytic'))} where "
            f"{want}); {other.capitalize()}'s matches at {t[MATCH]} of {total}{kinks}{chosen}")


def _num(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


# ---------------------------------------------------------------- checking a reference


def check_reference(prepared, materialised: dict) -> dict:
    """The spec's reference against both frameworks' float64 results on one draw's inputs.

    Returns {"ran": bool, "why": str, "outputs": [{"output", "frameworks_agree", "ref_agrees", "gap"}]}:
    per forward output, whether Paddle and Torch agree at float64 (``oracles_agree``; integer and bool
    outputs exactly) and, where they do, whether the reference agrees with them by the same rule.
    ``tests/engine/test_references.py`` runs it on typical inputs for every spec with a ``ref``."""
    high = upcast(materialised)
    reference = Reference(prepared, high)
    outs = reference.outputs()
    if outs is None:
        return {"ran": False, "why": reference.why, "outputs": []}
    runs = {name: run_side(name, prepared, trial.copy_inputs(high)) for name in ("paddle", "torch")}
    if any(run.error for run in runs.values()):
        return {"ran": False, "why": "; ".join(f"{k}: {r.error}" for k, r in runs.items() if r.error), "outputs": []}
    rows = []
    for i, ref in enumerate(outs):
        if i >= min(len(r.outputs) for r in runs.values()):
            rows.append({"output": i, "frameworks_agree": False, "ref_agrees": None,
                         "gap": "the reference has more outputs than the frameworks"})
            continue
        p, t = runs["paddle"].outputs[i].array, runs["torch"].outputs[i].array
        if p is None or t is None:
            continue
        p, t, ref = np.asarray(p), np.asarray(t), np.asarray(ref)
        if p.dtype.kind in "fc" and t.dtype.kind in "fc":
            together, _ = oracles_agree(p, t)
            low = runs["torch"].outputs[i].dtype
            if low not in HIGH and low in EPS or low in ("float16", "bfloat16"):
                ref = rounded_to(ref.astype(np.float64) if ref.dtype.kind != "c" else ref, low)  # a fixed dtype
            ok, gap = (oracles_agree(ref, t)
                       if ref.shape == t.shape else (False, math.inf))
            rows.append({"output": i, "frameworks_agree": together, "ref_agrees": ok, "gap": gap})
        else:
            together = p.shape == t.shape and bool(np.array_equal(p, t))
            ok = ref.shape == t.shape and bool(np.array_equal(ref.astype(t.dtype), t))
            rows.append({"output": i, "frameworks_agree": together, "ref_agrees": ok,
                         "gap": 0.0 if ok else f"ref {ref.shape} {ref.dtype} vs torch {t.shape} {t.dtype}"})
    return {"ran": True, "why": "", "outputs": rows}
