"""Shrinking: the smallest config (greedy, deterministic) that still shows the *same failure*.

A failure is (strict status, direction, output, oracle reading) of one draw (``Failure``): the draw
the verdict reported (kind + seed), replayed on every candidate, so a step never trades the failure
for another draw's.  Candidates, from the current config, in this order:

1. every group of tensor dimensions of equal size, across all tensors, set to 1 and then halved --
   equal sizes move together, so matmul's inner size, channels and broadcast partners stay
   consistent (a dimension the group shares by coincidence is retried alone in step 2);
2. each dimension of a group with more than one member alone (1, then half);
3. each integer argument the spec declares a free size (``Spec.free_sizes``): 1, then half.

A candidate whose shapes break the spec's ``shapes_agree`` is never run (counted as ``rejected``), nor one whose
inputs on its draw break a domain the spec draws them by (``inputs.domain_violations``: the rule each domain
declares with ``inputs.keeps`` -- ctc_loss's labels never the blank, put_along_axis's indices distinct along a
row) where the reported config's own draw keeps it: the repro shows the reported failure, not another one.
The first candidate with the same failure is kept and the candidates are generated again from it;
the shrink stops at a fixpoint (no candidate keeps the failure) or when ``Budget`` runs out (trials
or seconds, checked before each trial; one trial is not interrupted).  A candidate already tried is
never run again.  Every figure (trials, seconds, elements before -> after) is in the result.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..engine import execute as ex
from ..engine import trial
from .. import inputs as inp
from ..engine.compare import Verdict, layer_of
from ..config import Call, Constructor, TensorSpec, format_call, parse_config, walk
from .conventions import (Convention, convention_of, convention_reading, gradient_shape_reading,
                          rounded_parameter_convention)
from .oracle import oracle_for, reading_of
from .records import DrawReadings, OutputReading
from .ties import tie_convention_of
from ..vocab import NoOracle, Reading, Status

# Statuses whose failure is a value difference the oracle can read.
VALUE_FAILURES = frozenset({Status.ACCURACY_ERROR, Status.DTYPE_MISMATCH})
# The oracle runs both sides twice more at float64: above this many input elements a probe's
# reading is left out (``Reading.NO_ORACLE``, "too large") and shrinking adopts the reading of the
# first kept step under it (see ``Failure.same_as``).
ORACLE_MAX_ELEMENTS = 1 << 24
TOO_LARGE = NoOracle.TOO_LARGE
# The failure status of a paddle_error that Torch shares (invalid inputs on both sides).
BOTH_REJECT = "paddle_error_torch_rejects_too"


@dataclass(frozen=True)
class Budget:
    max_trials: int = 200
    max_seconds: float = 120.0


@dataclass(frozen=True)
class Failure:
    """What "the same failure" compares: the strict layer's status, direction, failing output and
    the oracle's reading of that output."""

    status: str
    direction: str | None
    output: str | None
    reading: str
    convention: str | None = None  # a convention reading's key (apitester.diagnosis.conventions): the same convention

    def same_as(self, other: "Failure") -> bool:
        """Equal, except that a target read ``too_large`` (no oracle at its size) matches any reading."""
        if (self.status, self.direction, self.output) != (other.status, other.direction, other.output):
            return False
        if self.convention != other.convention:
            return False
        return self.reading == other.reading or TOO_LARGE in (self.reading, other.reading)

    def to_dict(self) -> dict:
        data = {"status": str(self.status), "direction": self.direction, "output": self.output,
                "reading": str(self.reading)}
        if self.convention is not None:
            data["convention"] = self.convention
        return data


@dataclass
class Probe:
    """One run of a config on one draw: its verdict, the oracle and the failure they make."""

    config: str
    verdict: Verdict
    oracle: DrawReadings
    reading: OutputReading
    failure: Failure
    elements: int
    draw: inp.Draw | None = None  # the draw it ran (a shrunk candidate's may be a cut of the failing one)


def prepare_strict(config: str):
    """``trial.prepare`` with the strict sides (the layer "fix verified" reads), or the Verdict of a config that
    cannot be run."""
    try:
        return trial.prepare(config).strict_layer()
    except trial.NotRunnable as exc:
        return exc.verdict


def _trial_or_none(config: str) -> trial.Trial | None:
    try:
        return trial.prepare(config)
    except trial.NotRunnable:
        return None


def draw_inputs(prepared, draw: inp.Draw) -> dict:
    """The materialised inputs of one draw, with the trial's edge options (the verdict's own)."""
    return prepared.inputs_of(draw)


def elements_of(config: str) -> int:
    return sum(t.numel for t in parse_config(config).tensors())


def probe(config: str, draw: inp.Draw) -> Probe:
    """Run ``config`` on ``draw`` and read the failing output with the float64 oracle."""
    verdict = ex.run_config(config, draw=draw)
    strict = verdict.strict or layer_of(verdict)
    elements = elements_of(config)
    oracle = DrawReadings()
    # the strict layer's Trial, prepared once for the oracle and the tie reading
    prepared = prepare_strict(config) if strict["status"] in VALUE_FAILURES else None
    if strict["status"] in VALUE_FAILURES:
        if elements > ORACLE_MAX_ELEMENTS:
            oracle = DrawReadings.none(TOO_LARGE, f"{elements} input elements, over the oracle's {ORACLE_MAX_ELEMENTS}")
        else:
            oracle = _oracle(prepared, draw, strict["direction"] == "backward")
    reading = reading_of(oracle, strict["output"])
    name = TOO_LARGE if reading.no_oracle == TOO_LARGE else reading.reading
    if strict["status"] not in VALUE_FAILURES:
        name = Reading.NO_ORACLE
    convention = convention_of(strict, strict.get("message") or verdict.message)
    if convention is None and strict["status"] == Status.ACCURACY_ERROR:
        convention = _tie_convention(prepared, draw, verdict) or _rounded_parameter(prepared, draw, strict)
    if convention is not None:  # not a value error: both behaviours named (apitester.diagnosis.conventions)
        reading, name = convention_reading(strict["output"], convention), Reading.CONVENTION
    shaped = gradient_shape_reading(strict)
    if shaped is not None:  # a gradient not shaped as its input: that side's error
        reading, name = shaped, shaped.reading
    status = strict["status"]
    if status == Status.PADDLE_ERROR and (strict.get("facts") or {}).get("both_reject"):
        status = BOTH_REJECT  # not a Paddle failure: a candidate both sides reject is not the same one
    failure = Failure(status, strict["direction"], strict["output"], str(name),
                      convention.key if convention is not None else None)
    return Probe(config, verdict, oracle, reading, failure, elements, draw)


def _tie_convention(prepared: "trial.Trial | Verdict", draw: inp.Draw, verdict: Verdict) -> Convention | None:
    """The tie convention (apitester.diagnosis.ties) of a spec that declares ``ties``; None otherwise."""
    if isinstance(prepared, Verdict) or prepared.spec.ties is None:
        return None
    try:
        return tie_convention_of(prepared, draw_inputs(prepared, draw), verdict)
    except Exception:  # an engine gap in the tie reading: the value reading stands
        return None


def _rounded_parameter(prepared: "trial.Trial | Verdict", draw: inp.Draw, strict: dict) -> Convention | None:
    """The convention of a float parameter one side rounds to float32 (apitester.diagnosis.conventions)."""
    if isinstance(prepared, Verdict):
        return None
    try:
        return rounded_parameter_convention(prepared, draw_inputs(prepared, draw), draw, strict["output"],
                                            strict["direction"])
    except Exception:  # an engine gap in the reading: the value reading stands
        return None


def _oracle(prepared: "trial.Trial | Verdict", draw: inp.Draw, grads: bool) -> DrawReadings:
    if isinstance(prepared, Verdict):
        return DrawReadings.none(NoOracle.NOT_NUMERIC, prepared.message[:300])
    try:
        materialised = draw_inputs(prepared, draw)
        return oracle_for(prepared, materialised, draw, grads=grads)
    except Exception as exc:  # an engine gap in the oracle: said so, never a Paddle bug
        return DrawReadings.none(NoOracle.SIDE_RAISED, f"engine error in the oracle: {exc}"[:300])


# ---------------------------------------------------------------- candidates


def _shapes(call: Call) -> list[tuple[int, ...]]:
    return [t.shape for t in call.tensors()]


def with_shapes(call: Call, shapes: list[tuple[int, ...]]) -> Call:
    """The call with its tensors (depth first, as ``Call.tensors``) given these shapes."""
    queue = iter(shapes)

    def leaf(value, _path):
        return TensorSpec(tuple(next(queue)), value.dtype) if isinstance(value, TensorSpec) else value

    def rebuilt(value):
        return walk(value, leaf, into=(list, tuple, slice, dict, Constructor))

    return Call(call.api, tuple(rebuilt(v) for v in call.args), {k: rebuilt(v) for k, v in call.kwargs.items()})


def _dimension_groups(shapes) -> list[tuple[int, list[tuple[int, int]]]]:
    """(size, [(tensor, dim)]) for every size > 1, the largest total elements first."""
    groups: dict[int, list[tuple[int, int]]] = {}
    for t, shape in enumerate(shapes):
        for d, size in enumerate(shape):
            if size > 1:
                groups.setdefault(size, []).append((t, d))
    return sorted(groups.items(), key=lambda item: (-item[0] * len(item[1]), -item[0]))


def _resized(shapes, members, size: int) -> list[tuple[int, ...]]:
    out = [list(s) for s in shapes]
    for t, d in members:
        out[t][d] = size
    return [tuple(s) for s in out]


def _smaller(size: int) -> list[int]:
    """The sizes a dimension or free size is tried at: 1, then half (when that is not 1)."""
    return [1] + ([size // 2] if size // 2 > 1 else [])


def candidates(call: Call, free_sizes: dict[str, int]) -> list[tuple[str, Call]]:
    """(what changed, candidate call) in the order the shrink tries them."""
    shapes = _shapes(call)
    out: list[tuple[str, Call]] = []
    groups = _dimension_groups(shapes)
    for size, members in groups:
        for new in _smaller(size):
            out.append((f"dims of size {size} ({len(members)}) -> {new}", with_shapes(call, _resized(shapes, members, new))))
    for size, members in groups:
        if len(members) > 1:
            for t, d in members:
                for new in _smaller(size):
                    out.append((f"tensor {t} dim {d}: {size} -> {new}", with_shapes(call, _resized(shapes, [(t, d)], new))))
    for name, value in free_sizes.items():
        for new in _smaller(value):
            out.append((f"{name}: {value} -> {new}", _with_argument(call, name, new)))
    return out


def _free_sizes(config: str) -> dict[str, int]:
    """The spec's free-size integer arguments of this config and their values (>1 only)."""
    prepared = _trial_or_none(config)
    if prepared is None:
        return {}
    found = {}
    for name in prepared.spec.free_sizes:
        value = prepared.parsed.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            found[name] = value
    return found


def _with_argument(call: Call, name: str, value: int) -> Call:
    if name in call.kwargs:
        return Call(call.api, call.args, {**call.kwargs, name: value})
    prepared = trial.prepare(format_call(call))
    position = list(prepared.sig.parameters).index(name)
    args = list(call.args)
    args[position] = value
    return Call(call.api, tuple(args), dict(call.kwargs))


# ---------------------------------------------------------------- the shrink


@dataclass
class ShrinkResult:
    original: str
    config: str
    draw: dict
    failure: dict
    start: Probe = field(repr=False)
    final: Probe = field(repr=False)
    trials: int = 0
    rejected: int = 0  # candidates never run: their shapes break the spec's shapes_agree, or their inputs a domain
    kept: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str = "fixpoint"  # fixpoint | max_trials | max_seconds | not_failing
    final_draw: dict | None = None  # the shrunk config's draw: the failing draw, or a cut of it (inputs.Draw.cut)

    def to_dict(self) -> dict:
        return {"original": self.original, "config": self.config, "draw": self.draw, "failure": self.failure,
                "final_draw": self.final_draw or self.draw,
                "trials": self.trials, "rejected": self.rejected, "kept": list(self.kept), "seconds": round(self.seconds, 3),
                "stopped": self.stopped, "elements_before": self.start.elements,
                "elements_after": self.final.elements}


def shrink(config: str, draw: "inp.Draw | str | dict", budget: Budget = Budget(), start: Probe | None = None) -> ShrinkResult:
    """Greedy reduction of ``config`` keeping its failure on ``draw`` (module docstring)."""
    draw = inp.Draw.parse(draw)
    began = time.perf_counter()
    start = start or probe(config, draw)
    result = ShrinkResult(config, config, draw.to_dict(), start.failure.to_dict(), start, start)
    if start.failure.status not in ex.FAILING_DRAW | {Status.TORCH_ERROR}:
        result.stopped = "not_failing"
        result.seconds = time.perf_counter() - began
        return result
    target, current, tried = start.failure, parse_config(config), {(format_call(parse_config(config)), str(draw))}
    free = _free_sizes(config)
    if start.draw is None:
        start.draw = draw
    kept = start
    broken = set(domains_broken(config, draw))  # a domain the reported draw breaks already: its candidates may too
    while True:
        step = _first_kept(current, free, kept, target, tried, result, began, budget, broken)
        if step is None:
            break
        what, current, kept = step
        result.kept.append(what + (" (cut around the worst element)" if kept.draw.cut is not None else ""))
        result.final = kept
        free = _free_sizes(kept.config)
        if target.reading == TOO_LARGE and kept.failure.reading != TOO_LARGE:
            target = kept.failure  # the first reading the oracle could give (ORACLE_MAX_ELEMENTS)
    result.config = result.final.config
    result.failure = result.final.failure.to_dict()
    result.final_draw = (result.final.draw or draw).to_dict()
    result.seconds = time.perf_counter() - began
    return result


def _first_kept(current: Call, free, kept: Probe, target: Failure, tried: set, result: ShrinkResult, began: float,
                budget: Budget, broken: set = frozenset()):
    """The first untried candidate of ``current`` with the target failure, or None (fixpoint/budget).

    Each candidate is tried first on the cut of the kept draw around its worst element (``cut_draw``: the
    failing values kept), then drawn anew at its size (the uncut draw), as before cuts existed."""
    for what, candidate in candidates(current, free):
        text = format_call(candidate)
        for draw in _draws_of(kept, current, candidate, text):
            if (text, str(draw)) in tried:
                continue
            if result.trials >= budget.max_trials:
                result.stopped = "max_trials"
                return None
            if time.perf_counter() - began >= budget.max_seconds:
                result.stopped = "max_seconds"
                return None
            tried.add((text, str(draw)))
            if _shapes_disagree(text) or set(domains_broken(text, draw)) - broken:
                result.rejected += 1
                continue
            result.trials += 1
            attempt = probe(text, draw)
            if target.same_as(attempt.failure):
                return what, candidate, attempt
    result.stopped = "fixpoint"
    return None


def _shapes_disagree(config: str) -> str | None:
    """Why a candidate's tensor shapes break the spec's ``shapes_agree`` (never run), or None."""
    prepared = _trial_or_none(config)
    if prepared is None or prepared.spec.shapes_agree is None:
        return None
    shapes = {name: value.shape for name, value in prepared.parsed.items() if isinstance(value, TensorSpec)}
    return prepared.spec.shapes_agree(**shapes)


def domains_broken(config: str, draw: inp.Draw) -> dict[str, str]:
    """{param: why} for the inputs of ``config`` on ``draw`` that break the rule their spec's domain draws by
    (``inputs.domain_violations``); {} where the spec declares no such rule or the draw cannot be made (the
    probe then says why, as before)."""
    prepared = _trial_or_none(config)
    if prepared is None or not any(getattr(d, "violation", None) for d in prepared.spec.domains.values()):
        return {}
    try:
        materialised = draw_inputs(prepared, draw)
    except Exception:  # a cut the domains refuse (inputs.CutBreaksDomain), an unsatisfiable draw: probe's verdict
        return {}
    return inp.domain_violations(prepared.parsed, prepared.spec.domains, materialised)


def _draws_of(kept: Probe, current: Call, candidate: Call, text: str) -> list[inp.Draw]:
    """The draws a candidate is tried on: the cut around the kept probe's worst element (when it has one), then
    the uncut draw."""
    draw = kept.draw
    cut = cut_draw(draw, current, candidate, kept.verdict.worst_index, kept.verdict.diff_shape, text)
    return [cut, draw.uncut()] if cut is not None else [draw.uncut()]


def _call_cut(draw: inp.Draw, current: Call, bound_order: list[int]) -> list[tuple]:
    """The current draw's cut in the call's tensor order ((original size, start) per dim); no cut: the whole."""
    shapes = _shapes(current)
    if draw.cut is None:
        return [tuple((size, 0) for size in shape) for shape in shapes]
    by_call: list = [None] * len(shapes)
    for bound_index, call_index in enumerate(bound_order):
        by_call[call_index] = draw.cut[bound_index]
    return by_call


def _bound_order(config: str) -> list[int] | None:
    """For each tensor in the order ``inputs.materialise`` walks the bound arguments, its index in the call's
    tensor order (``Call.tensors``); None when the config does not bind."""
    prepared = _trial_or_none(config)
    if prepared is None:
        return None
    position = {id(t): i for i, t in enumerate(prepared.call.tensors())}
    order = [position.get(id(t)) for t in inp.tensor_specs(prepared.parsed)]
    return None if None in order or sorted(order) != list(range(len(order))) else order


def _start(center: int | None, size: int, new: int) -> int:
    """Where a dim cut from ``size`` to ``new`` starts: around ``center`` (the worst element), else at 0."""
    if center is None:
        return 0
    return max(0, min(center - new // 2, size - new))


def cut_draw(draw: inp.Draw, current: Call, candidate: Call, worst, diff_shape, text: str) -> inp.Draw | None:
    """The draw of ``candidate`` (``current`` with smaller dims) cut from ``draw`` around the worst element.

    A tensor dim lines up with the failing output's dim right-aligned (broadcasting) when their sizes are
    equal: it is cut around the worst element's coordinate there; any other dim is cut from its start."""
    if worst is None or diff_shape is None:
        return None
    order = _bound_order(format_call(current))
    new_order = _bound_order(text)
    if order is None or new_order is None or order != new_order:
        return None
    old_shapes, new_shapes = _shapes(current), _shapes(candidate)
    if [len(s) for s in old_shapes] != [len(s) for s in new_shapes]:
        return None
    whole = _call_cut(draw, current, order)
    out_shape, worst = list(diff_shape), list(worst)
    cut_by_call = []
    for dims, old, new in zip(whole, old_shapes, new_shapes):
        lead = len(out_shape) - len(old)
        cut = []
        for d, ((original, start), size, target) in enumerate(zip(dims, old, new)):
            o = d + lead
            center = worst[o] if 0 <= o < len(out_shape) and out_shape[o] == size else None
            cut.append((original, start + (_start(center, size, target) if target < size else 0)))
        cut_by_call.append(tuple(cut))
    return inp.Draw(draw.kind, draw.seed, draw.format, tuple(cut_by_call[call_index] for call_index in order))
