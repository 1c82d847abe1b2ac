"""A gradient reading the float64 pair disputes (or a float64 config's) settled by the derivative of the spec's
independent reference (``settle_gradient``): central differences of the reference's float64-rounded outputs, each
side's float64 gradient matched with gradcheck's tolerances; on the part of the gradient the API defines
(``Spec.gradient_part``) where the spec declares one, a convention outside it (``gradient_convention_reading``).
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import replace

import numpy as np

from ..engine import trial
from .. import inputs as inp
from ..vocab import AdaptationKind, ConventionKind, NoOracle, Reading, ReadingSource
from .gradients import GRAD_ATOL, GRAD_RTOL
from .measuring import K, error_to_oracle, no_oracle, nonfinite_note
from .records import Convention, OutputReading
from .reference import Reference
from .sides import input_tensors


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


def settle_gradient(reading: OutputReading, j: int, reference: Reference, runs: dict,
                    grad_of: dict[int, np.ndarray]) -> OutputReading:
    """A disputed (or float64) gradient reading settled by the reference's derivative, when the spec has a
    reference and the input is small: the side whose float64 gradient alone misses it is off."""
    if reading.no_oracle not in (NoOracle.DISPUTED, NoOracle.FLOAT64_CONFIG) or not reference.exists:
        return reading
    project = _gradient_part(reference)
    convention = _declared_convention(reference)
    if convention and project is None:  # which gradient the API defines is a declared convention, not a value
        return replace(reading, reason=f"{reading.reason}; no reference derivative: a declared gradient "
                                       f"convention ({convention})")
    leaves = [t for t in input_tensors(reference.high_inputs) if t.dtype in trial.FLOATING]
    if j >= len(leaves):
        return reading
    if sum(t.array.size for t in leaves) > REF_GRAD_MAX_ELEMENTS:  # shrinking adopts a smaller candidate's reading
        out = no_oracle(reading.output, NoOracle.TOO_LARGE, f"{reading.reason}; no reference derivative: "
                                                            f"over {REF_GRAD_MAX_ELEMENTS} floating input elements")
        return replace(out, agreeing_elements=reading.agreeing_elements)
    try:
        numeric, kinks = reference_gradient(reference, leaves[j], grad_of)
    except NotImplementedError as exc:
        return replace(reading, reason=f"{reading.reason}; no reference derivative: {exc}")
    except Exception as exc:  # an engine gap: said so
        return replace(reading, reason=f"{reading.reason}; no reference derivative: {trial.short_error(exc)}"[:400])
    high = {"paddle": runs["high_p"].grads[j].array, "torch": runs["high_t"].grads[j].array}
    if any(v is None for v in high.values()):
        return reading
    part, whole = "", {}
    if project is not None:  # compared on the part of the gradient the API defines (the declared convention)
        numeric, kinks, whole, high = _on_part(project, leaves[j].array.shape, numeric, kinks, high)
        part = f" on the gradients' {project.name} (the declared gradient convention)"
    if kinks.all():
        return replace(reading, reason=f"{reading.reason}; no reference derivative: a kink (clamp, tie, domain "
                                       f"edge) at every element of {reading.output}")
    use = ~kinks
    match = {side: _gradient_matches(v, numeric, use) for side, v in high.items()}
    if match["paddle"] and match["torch"] and project is not None:
        return gradient_convention_reading(reading, project, whole, numeric)
    if match["paddle"] and match["torch"]:
        left_out = f"; {int(kinks.sum())} element(s) at a kink or where an output is NaN left out" if kinks.any() else ""
        return replace(reading, reason=f"{reading.reason}; both float64 gradients match the reference's derivative "
                                       f"within gradcheck's tolerances (atol {GRAD_ATOL:g}, rtol {GRAD_RTOL:g}){left_out}")
    return _side_reading(reading, reference, match, high, numeric, use, part)


def _side_reading(reading: OutputReading, reference: Reference, match: dict, high: dict, numeric: np.ndarray,
                  use: np.ndarray, part: str) -> OutputReading:
    """settle_gradient's reading once a side misses the reference's derivative: who, each side's error, why."""
    kinks = ~use
    name = (Reading.BOTH_OFF if not (match["paddle"] or match["torch"])
            else Reading.TORCH_OFF if match["paddle"] else Reading.PADDLE_OFF)
    target = numeric[use]
    errors = {side: error_to_oracle(np.asarray(values, dtype=np.float64).reshape(-1)[use], target)
              for side, values in high.items()}
    notes = nonfinite_note(np.asarray(high["paddle"]).reshape(-1)[use], np.asarray(high["torch"]).reshape(-1)[use],
                            target, "the reference's derivative")
    evidence = f"derivative of the {reference.evidence} (central differences, step {REF_GRAD_STEP:g})"
    sides = [f"{'Paddle' if s == 'paddle' else 'Torch'}'s float64 gradient {'matches' if ok else 'misses'}"
             for s, ok in match.items()]
    reason = (f"{reading.reason}; " + ", ".join(sides) + f" the reference's derivative{part} (gradcheck's "
              f"tolerances)" + (f", {int(kinks.sum())} element(s) at a kink left out" if kinks.any() else "")
              + "".join(f"; {s}: {n}" for s, n in notes.items()))
    return OutputReading(reading.output, name, reason=reason, dtype="float64", noise_floor=GRAD_ATOL, k=K,
                         paddle=errors["paddle"], torch=errors["torch"], nonfinite=notes or None,
                         oracle=ReadingSource.REFERENCE, evidence=evidence + part, gradient_match=match)


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


def gradient_convention_reading(reading: OutputReading, project: "functools.partial", whole: dict,
                                numeric: np.ndarray) -> OutputReading:
    """Both sides' gradients match the reference's derivative on the part the API defines (``Spec.gradient_part``),
    so the strict difference lies outside it: a convention (``ConventionKind.GRADIENT``) naming what each side
    returns there -- the defined part only, or a part outside it too (Torch's own split between the triangles)."""
    def returns(values: np.ndarray) -> str:
        inside = np.allclose(values, project(values), rtol=1e-9, atol=1e-12, equal_nan=True)
        return f"the {project.name} only" if inside else f"more than the {project.name}"

    paddle, torch = returns(whole["paddle"]), returns(whole["torch"])
    text = (f"gradients equal on their {project.name} (the reference's derivative there); outside it Paddle "
            f"returns {paddle}, Torch {torch}")
    convention = Convention(ConventionKind.GRADIENT, paddle, torch, text, f"gradient: {paddle} vs {torch}",
                            details=(("part", project.name),))
    return OutputReading(reading.output, Reading.CONVENTION, reason=f"{reading.reason}; {text}",
                         oracle=ReadingSource.REFERENCE, convention=convention,
                         float64_oracle={"no_oracle": reading.no_oracle, "reason": reading.reason or ""})


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
