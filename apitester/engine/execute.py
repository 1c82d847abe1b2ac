"""Run one config in this process: Paddle side, Torch side, compare -> Verdict.

``run_config`` never raises for a bad config, a missing spec, or a Paddle/Torch exception:
those become statuses.  An exception inside apitester itself becomes ``unsupported`` with
``engine_error=True`` (an engine gap is never reported as a Paddle bug).

A verdict is the worst over the config's draws (``apitester.inputs.draw_plan``: typical, edge,
extra seeds for small inputs), judged in plan order:

* the first draw (typical) decides alone when it is not ``pass`` or a by-design status
  (``documented_difference``, ``torch_suspect``): a failure, or no verdict at all;
* a later draw that fails (accuracy, dtype, shape, a Paddle error Torch does not share) is the
  verdict, and no further draw runs (the budget: one failure is enough);
* a later by-design draw replaces a ``pass`` (or a by-design draw with fewer values off the
  plain Torch call): it is the worse of the two;
* a later draw with no verdict (Torch raises, both sides reject the edge values) changes
  nothing; the message says it was not judged.

``Verdict.draw`` is the reported draw, ``Verdict.draws`` every draw judged;
``run_config(config, draw="edge:0")`` (``python -m apitester --draw edge:0``) replays one.
"""

from __future__ import annotations

import time
import traceback
import zlib

import numpy as np

from .. import inputs as inp
from . import torch_cache
from .compare import Out, Verdict, final_status, layer_of, merge_exactness
from ..config import ConfigSyntaxError, api_name, parse_config
from .phases import Phase, PhaseClock
from ..specs import get_spec
from .trial import (NotRunnable, Trial, copy_inputs, frameworks, gpu_available, judge, prepare,
                    resolve_paddle)
from ..vocab import Device, Side, Status

# Statuses of a draw that make it the verdict (a Paddle failure) and those that are worse than a
# pass without being one (docs/verdicts.md).
FAILING_DRAW = frozenset({Status.ACCURACY_ERROR, Status.DTYPE_MISMATCH, Status.SHAPE_MISMATCH, Status.PADDLE_ERROR})
BY_DESIGN_DRAW = frozenset({Status.DOCUMENTED_DIFFERENCE, Status.TORCH_SUSPECT})


def run_config(config: str, *, device: Device | str = Device.CPU, atol: float = 1e-2, rtol: float = 1e-2, seed: int = 0,
               draw: "str | inp.Draw | dict | None" = None, bitwise: bool = False,
               stability: bool = False) -> Verdict:
    """Run one config string and return its Verdict (never raises for bad input).

    ``draw`` ("edge:0", a Draw or its dict) replays that one draw instead of the plan. ``bitwise`` judges with
    atol = rtol = 0 whatever the spec's tolerances (PaddleAPITest's ``--bitwise_alignment=True``): the status
    then reads the exact rule; every verdict records ``exact`` and ``max_ulp`` either way. ``stability``: a
    config that is not exact runs its inexact draw once more and records whether each side gave the same bits
    (``stable``, ``nondeterministic``); ``apitester.readings.run_with_readings`` asks for it."""
    config = config.strip()
    if draw is not None:
        try:
            draw = inp.Draw.parse(draw)
        except (ValueError, TypeError) as exc:
            return Verdict(Status.UNSUPPORTED, config=config, api=api_name(config), message=str(exc))
    try:
        frameworks()  # one-time import, not part of a config's seconds
    except Exception as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return Verdict(Status.UNSUPPORTED, engine_error=True, config=config, api=api_name(config),
                       message=f"engine error: cannot import paddle/torch: {last}")
    start = time.perf_counter()
    clock = PhaseClock()  # the trial's (its gradients and captures go with it when it returns)
    cache = torch_cache.active()
    if cache is not None:
        cache.take_counts()  # this config's events only
    try:
        verdict = _run(config, device, atol, rtol, seed, draw, bitwise, stability, clock)
    except Exception as exc:  # a bug or gap inside apitester itself
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        verdict = Verdict(Status.UNSUPPORTED, engine_error=True, message=f"engine error: {last}")
    verdict.seconds = time.perf_counter() - start
    verdict.framework_seconds = clock.framework()
    verdict.phases = clock.report(verdict.seconds)
    verdict.torch_cache = cache.take_counts() if cache is not None else {}
    verdict.config = config
    if not verdict.api:
        verdict.api = api_name(config)
    if verdict.atol is None:
        verdict.atol, verdict.rtol = atol, rtol
    if verdict.strict is None:  # one layer: the strict layer is the verdict itself
        verdict.strict = layer_of(verdict)
    return _with_declarations(verdict)


def _with_declarations(verdict: Verdict) -> Verdict:
    """The spec's comparison note, and the declared known Paddle failure this verdict matches."""
    spec = get_spec(verdict.api) if verdict.api else None
    if spec is None:
        return verdict
    if spec.comparison is not None:
        verdict.comparison = spec.comparison.to_dict()
    if spec.known_failures and verdict.status != Status.PASS:
        try:
            dtypes = [t.dtype for t in parse_config(verdict.config).tensors()]
        except ConfigSyntaxError:
            return verdict
        paddle, _ = frameworks()
        known = spec.known_failure_for(paddle.__version__, dtypes, verdict.status, verdict.direction,
                                       verdict.config)
        if known is not None:
            verdict.known_failure = known.to_dict()
    return verdict


def _run(config: str, device: Device | str, atol: float, rtol: float, seed: int, draw: inp.Draw | None,
         bitwise: bool, stability: bool, clock: PhaseClock) -> Verdict:
    try:
        prepared = prepare(config, device, clock)
    except NotRunnable as exc:
        return exc.verdict
    if bitwise:
        prepared, atol, rtol = prepared.with_bitwise(), 0.0, 0.0
    plan = _plan(prepared, draw, seed)
    reported: Verdict | None = None
    exact: tuple[bool | None, int | None] = (None, None)  # the exact rule over every draw judged
    judged: list[str] = []
    inexact: list[dict] = []  # every draw judged that is not exact, with its outputs that differ (the readings')
    not_judged: list[str] = []
    # the typical draw's values, kept for the edge draw of the same seed (which would draw them again)
    typical = {} if len(plan) > 1 and any(d.kind == inp.EDGE for d in plan) else None
    watch = _Inexact(prepared) if stability else None
    for current in plan:
        prepared.state.start_capture(watch is not None)
        if reported is None:  # the first draw: an error here is the config's, as it always was
            verdict = _run_draw(prepared, current, atol, rtol, replay=draw is not None, typical=typical)
        else:
            try:
                verdict = _run_draw(prepared, current, atol, rtol, replay=False, typical=typical)
            except Exception as exc:  # a domain or reference that cannot take this draw
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                not_judged.append(f"draw {current} not judged (engine: {last[:160]})")
                continue
        if current.kind == inp.EDGE:
            typical = None
        if verdict is None:  # an edge draw that placed no edge value: the typical draw again
            continue
        judged.append(str(current))
        exact = merge_exactness(exact, (verdict.strict_exact, verdict.strict_max_ulp))
        if verdict.strict_exact is False:
            inexact.append({"draw": str(current), "outputs": list(verdict.inexact_outputs)})
        if watch is not None:
            watch.saw(current, verdict)
        if reported is None:
            reported = verdict
            if verdict.status != Status.PASS and verdict.status not in BY_DESIGN_DRAW:
                break
        elif _fails(verdict):
            reported = verdict
            break
        elif verdict.status in BY_DESIGN_DRAW:
            if reported.status == Status.PASS or (verdict.mismatched or 0) > (reported.mismatched or 0):
                reported = verdict
        elif verdict.status != Status.PASS:
            not_judged.append(f"draw {current} not judged ({verdict.status}: {verdict.message[:160]})")
    reported.draws, reported.inexact_draws = judged, inexact
    _set_exactness(reported, exact)
    if not_judged:
        reported.message = "\n".join([reported.message, *not_judged]).strip()
    if watch is not None and exact[0] is False:
        with prepared.clock.span(Phase.READINGS, absorb=True):
            _read_stability(reported, watch.pick(reported), prepared, atol, rtol)
    return reported


# ---------------------------------------------------------------- run-to-run stability


def _digest(out: Out) -> str:
    """The exact bits of one output (dtype, shape and bytes), as a short hash: two runs of a deterministic kernel
    on identical inputs give the same digest."""
    if out.array is None:
        return "none"
    array = np.asarray(out.array)
    if array.dtype.kind in "USO":
        return "str:" + str(array.tolist())[:2000]
    data = np.ascontiguousarray(array)
    return f"{out.dtype}:{array.dtype.str}:{array.shape}:{zlib.crc32(data.view(np.uint8).reshape(-1)):08x}" \
        f":{zlib.adler32(data.view(np.uint8).reshape(-1)):08x}"


def _digests(captured: list) -> tuple[list[str], list[str]]:
    """(Paddle's digests, Torch's) of one draw's captured outputs, in capture order."""
    paddle, torch = [], []
    for outs_p, outs_t in captured:
        paddle += [_digest(o) for o in outs_p] + ["|"]
        torch += [_digest(o) for o in outs_t] + ["|"]
    return paddle, torch


class _Inexact:
    """The draws of one run that are not exact, with the bits each side gave: the reported draw when it is not
    exact (a failing config's failing draw), else the first draw that is not."""

    def __init__(self, trial: Trial) -> None:
        self.trial = trial
        self.draws: dict[str, tuple[inp.Draw, tuple[list[str], list[str]]]] = {}
        self.first: str | None = None

    def saw(self, draw: inp.Draw, verdict: Verdict) -> None:
        captured = self.trial.state.stop_capture()
        if verdict.strict_exact is False:
            self.draws[str(draw)] = (draw, _digests(captured))
            self.first = self.first or str(draw)

    def pick(self, reported: Verdict) -> tuple[inp.Draw, tuple[list[str], list[str]]] | None:
        key = str(inp.Draw.parse(reported.draw)) if reported.draw else None
        return self.draws.get(key) or (self.draws.get(self.first) if self.first else None)


def _read_stability(verdict: Verdict, picked, prepared: Trial, atol: float, rtol: float) -> None:
    """Run the picked inexact draw a second time (fresh inputs of the same draw) and compare each side's bits with
    the first run's: ``stable`` and ``nondeterministic`` on the verdict. A rerun that cannot be made leaves them
    None / "" (said in the message)."""
    if picked is None:
        return
    draw, (first_p, first_t) = picked
    verdict.inexact_draw = draw.to_dict()
    state = prepared.state
    state.start_capture(True)
    try:
        _run_draw(prepared, draw, atol, rtol, replay=True)
    except Exception as exc:  # the draw ran once; an engine gap in the second run is said, never blamed
        state.stop_capture()
        verdict.message = f"{verdict.message}\nstability not read: {type(exc).__name__}: {str(exc)[:160]}".strip()
        return
    again_p, again_t = _digests(state.stop_capture())
    changed = [side for side, first, again in ((Side.PADDLE, first_p, again_p), (Side.TORCH, first_t, again_t))
               if first != again]
    verdict.stable = not changed
    verdict.nondeterministic = "" if not changed else changed[0] if len(changed) == 1 else Side.BOTH


def _plan(prepared: "Trial", draw: inp.Draw | None, seed: int) -> list[inp.Draw]:
    """The draws to judge: the one replayed, else the spec's plan."""
    if draw is not None:
        return [draw]
    if prepared.spec.random:  # a statistical check of its own samples: edge values and seeds say nothing new
        return [inp.Draw(inp.TYPICAL, seed)]
    return inp.draw_plan(prepared.elements, seed)


def _set_exactness(verdict: Verdict, exact: tuple[bool | None, int | None]) -> None:
    """The exact rule's reading over every draw, on the verdict and on its strict layer (the top level reads it)."""
    verdict.exact, verdict.max_ulp = exact
    if verdict.strict is not None:
        verdict.strict["exact"], verdict.strict["max_ulp"] = exact


def _fails(verdict: Verdict) -> bool:
    """A later draw's verdict that blames Paddle (not: both sides reject its edge values)."""
    if verdict.status not in FAILING_DRAW:
        return False
    return not (verdict.status == Status.PADDLE_ERROR and verdict.facts.get("both_reject"))


def _run_draw(prepared: Trial, draw: inp.Draw, atol: float, rtol: float, replay: bool,
              typical: dict | None = None) -> Verdict | None:
    """The verdict of one draw (None: an edge draw where no tensor takes edge values, unless replayed)."""
    if draw.kind == inp.EDGE and not replay and not prepared.edge_draw_places():
        return None  # what materialising would find out, without drawing every tensor a second time
    materialised, placed = prepared.materialise(draw, typical)
    if draw.kind == inp.EDGE and not placed and not replay:
        return None
    verdict = _run_layers(prepared.on(materialised, draw), atol, rtol, draw.seed)
    verdict.draw = draw.to_dict()
    return verdict


def _run_layers(prepared: Trial, atol: float, rtol: float, seed: int) -> Verdict:
    """One draw's verdict: the strict layer and, where the spec adapts, the adapted one."""
    spec = prepared.spec
    visible = spec.visible_adaptations
    if not visible:
        # a plain spec: one computation, the strict layer is the verdict itself
        return judge(prepared, atol, rtol, seed)
    kinds = [a.kind for a in visible]
    if not spec.has_strict_reference:
        # no plain comparison exists (randomness, output invariants, a composed reference):
        # the adapted check is both layers, and the verdict says so
        verdict = judge(prepared, atol, rtol, seed)
        verdict.adaptations = [a.to_dict() for a in visible]
        verdict.strict_separate = False
        return verdict
    # strict first, on pristine inputs (Torch shares the numpy arrays it is given)
    strict = judge(prepared.strict(), atol, rtol, seed)
    prepared.materialised = copy_inputs(prepared.materialised)
    adapted = judge(prepared, atol, rtol, seed)
    verdict = strict  # the top-level figures and diff map are the strict layer's
    verdict.strict, verdict.adapted = layer_of(strict), layer_of(adapted)
    verdict.adaptations = [a.to_dict() for a in visible]
    verdict.status = final_status(strict.status, adapted.status, kinds)
    reasons = "; ".join(a.reason for a in visible)
    if verdict.status == Status.DOCUMENTED_DIFFERENCE:
        verdict.message = (f"differs from Torch by design: {reasons}\n"
                           f"strict (plain Torch call): {verdict.message}")
    elif verdict.status == Status.TORCH_SUSPECT:
        verdict.evidence = (f"Paddle agrees with the higher-precision reference (max abs diff "
                            f"{adapted.max_abs:g}, max rel diff {adapted.max_rel:g}); the plain Torch call at "
                            f"the config's dtype is the side off it: {reasons}")
    return verdict


__all__ = ["BY_DESIGN_DRAW", "FAILING_DRAW", "run_config", "frameworks", "gpu_available", "resolve_paddle"]
