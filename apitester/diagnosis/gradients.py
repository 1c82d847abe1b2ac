"""The float64 gradient check (``gradient_check``): each side's analytic float64 gradient against the numeric
derivative of its own float64 forward (or a reference derivative), element by element; the rule is below.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from ..engine import trial
from .. import inputs as inp
from ..engine.compare import encode_float
from ..vocab import Side
from .records import GradientCheck, OutputCheck, SideCheck
from .sides import input_tensors, output_gradients, run_side, upcast


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


def gradient_check(prepared, materialised: dict, draw: inp.Draw, reference_gradient=None) -> GradientCheck:
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
        return GradientCheck.not_run("no differentiable floating input")
    if count > GRADCHECK_LARGEST or count > GRADCHECK_MAX_ELEMENTS and reference_gradient is not None:
        return GradientCheck.not_run(f"{count} floating input elements, over "
                                     f"{GRADCHECK_MAX_ELEMENTS if reference_gradient else GRADCHECK_LARGEST}")
    grad_of = output_gradients(prepared, materialised, draw)
    if not grad_of:
        return GradientCheck.not_run("no output differentiable on both sides")
    high = upcast(materialised)
    high_grad_of = {i: g.astype(np.float64) for i, g in grad_of.items()}
    chosen = differing_elements(prepared, high, high_grad_of) if count > GRADCHECK_MAX_ELEMENTS else None
    if isinstance(chosen, str):  # nothing differs to judge: why
        return GradientCheck.not_run(f"{count} floating input elements, over {GRADCHECK_MAX_ELEMENTS}: {chosen}")
    reference = None
    if reference_gradient is not None:
        found = reference_gradient(trial.copy_inputs(high), dict(high_grad_of))
        reference = [np.asarray(r, dtype=np.float64).reshape(-1) for r in found] if found is not None else None
    method = ("reference derivative" if reference is not None else
              "one-sided differences, Richardson-extrapolated; central where both sides agree")
    noted = None if chosen is None else {"elements": sum(map(len, chosen.values())), "of": count,
                                         "rule": "the elements where the two float64 gradients differ most"}
    undefined = undefined_elements(prepared, high, high_grad_of) if reference is None else {}
    sides = {name: _side_gradient_check(name, prepared, high, high_grad_of, reference, chosen, undefined)
             for name in (Side.PADDLE, Side.TORCH)}
    check = GradientCheck(True, "", count, GRAD_STEP, GRAD_ATOL, GRAD_RTOL, method,
                          "reference" if reference is not None else "own_forward", noted, sides[Side.PADDLE],
                          sides[Side.TORCH], _side_off(sides), _off_by_output(sides))
    evidence = {label: _evidence(label, side, check) for label, side in check.side_off_by_output.items()}
    # the positions were for the comparison; the JSON keeps the first few
    return replace(check, paddle=_kept(check.paddle), torch=_kept(check.torch), evidence=evidence)


def _side_off(sides: dict[Side, SideCheck]) -> Side | None:
    """The one side that misses anywhere while the other matches."""
    matches = {name: side.matches for name, side in sides.items()}
    misses = [name for name, ok in matches.items() if ok is False]
    return misses[0] if len(misses) == 1 and True in matches.values() else None


def _off_by_output(sides: dict[Side, SideCheck]) -> dict[str, Side]:
    """Per input gradient, the one side that misses where the other matches (and does not leave it unresolved)."""
    by_output = {}
    for label in sorted(sides[Side.PADDLE].outputs.keys() & sides[Side.TORCH].outputs.keys()):
        per = {name: side.outputs[label] for name, side in sides.items()}
        off = [name for name in per if per[name].miss]
        if len(off) == 1:
            other = per[Side.TORCH if off[0] == Side.PADDLE else Side.PADDLE]
            if other.match and set(per[off[0]].missed_at) - set(other.unresolved_at):
                by_output[label] = off[0]
    return by_output


def _kept(side: SideCheck) -> SideCheck:
    """The side's check as the JSON keeps it: the first 20 missed positions, no unresolved ones."""
    outputs = {label: replace(out, missed_at=out.missed_at[:20], unresolved_at=()) for label, out in side.outputs.items()}
    return replace(side, outputs=outputs)


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
                         undefined: dict[int, set[int]] | None = None) -> SideCheck:
    """One side's check: every (or every chosen) element of every floating input judged MATCH / MISS /
    UNRESOLVED, or UNDEFINED where ``undefined`` (``undefined_elements``) says it has no derivative."""
    try:
        grad_of, frozen = (grad_of, {}) if reference is not None else _finite_part(name, prepared, high, grad_of)
    except Exception as exc:
        return SideCheck(None, str(exc)[:300])
    analytic = run_side(name, prepared, trial.copy_inputs(high), grad_of)
    if analytic.error:
        return SideCheck(None, analytic.error)
    leaves = [t for t in input_tensors(high) if t.dtype in trial.FLOATING]  # the order trial.convert takes leaves in
    misshaped = [f"{label} has shape {list(g.array.shape)}, its input {list(leaf.array.shape)}"
                 for leaf, g, label in zip(leaves, analytic.grads, analytic.grad_labels)
                 if g.array is not None and tuple(g.array.shape) != tuple(leaf.array.shape)]
    if misshaped:  # no element-wise judging of a gradient not shaped as its input (that side's error)
        return SideCheck(None, "; ".join(misshaped)[:300])
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
            outputs[label] = OutputCheck(**{**out, "missed_at": tuple(out["missed_at"]),
                                            "unresolved_at": tuple(out["unresolved_at"])})
    except Exception as exc:  # a perturbed input the side rejects
        return SideCheck(None, str(exc)[:300])
    return SideCheck(not any(o.miss for o in outputs.values()), "", worst, outputs)


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


def _evidence(label: str, off: Side, check: GradientCheck) -> str:
    """A sentence saying how the side off misses at ``label`` while the other side matches."""
    other = Side.TORCH if off == Side.PADDLE else Side.PADDLE
    o, t = check.output(off, label), check.output(other, label)
    miss = o.first_miss or {}
    if "reference" in miss:
        want = f"the reference derivative is {_num(miss['reference'])}"
    elif "numeric" in miss:
        want = f"the numeric derivative is {_num(miss['numeric'])}"
    else:
        want = (f"the one-sided derivatives are {_num(miss.get('forward'))} (forward) and "
                f"{_num(miss.get('backward'))} (backward)")
    source = "a reference derivative" if check.against == "reference" else "its own float64 forward's"
    total = o.match + o.miss + o.unresolved
    kinks = f", {t.kinks} at a kink" if t.kinks else ""
    chosen = (f" (the elements judged: where the two gradients differ most, of {check.chosen['of']})"
              if check.chosen else "")
    return (f"float64 gradient check of {label}: {off.capitalize()}'s gradient misses {source} derivative at "
            f"{o.miss} of {total} elements (at {miss.get('index')}: {_num(miss.get('analytic'))} where "
            f"{want}); {other.capitalize()}'s matches at {t.match} of {total}{kinks}{chosen}")


def _num(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)
