"""Rounding ties: which way each side rounds an input placed exactly halfway, read from its own outputs.

A spec whose API rounds one argument's values (``Spec.ties``: nearest sampling, ``round``) gets tie values in its
edge draw (``inputs.EdgeOptions.ties``).  When such a draw fails (``accuracy_error``, forward), ``tie_convention_of``:

1. finds the tied elements: where the spec's ``coordinate`` of the value is exactly k + 0.5;
2. checks that the failure is the ties alone: with every tied element nudged one ulp down (so that both sides
   round it the same way), Paddle and Torch agree under the verdict's tolerance -- otherwise the failure is
   about values too and the value reading stands;
3. reads each side's choice at each tie from its own outputs: a side rounded the tie *down* when nudging that
   element one ulp down leaves its output unchanged, *up* when nudging it one ulp up does (a tie where neither
   changes anything, equal neighbours, tells nothing and is left out);
4. names each side's rule (``conventions.tie_rule``: half to even, half away from zero, half up, half down).
"""
from __future__ import annotations

import numpy as np

from ..engine import trial
from .. import inputs as inp
from ..engine.compare import Verdict, compare_outputs
from .conventions import Convention, tie_convention
from .sides import run_side
from ..vocab import Status

# At most this many ties are read one by one (two runs of each side per tie at most).
MAX_TIES_READ = 32
# How far a tie is moved off (relative): 4 float16 ulps, half a bfloat16 one is rounded up to one (round_to_bfloat16).
NUDGE = 2.0 ** -8


def tied_positions(spec, materialised: dict, parsed) -> tuple[inp.InputTensor | None, np.ndarray, np.ndarray]:
    """(the rounded tensor, flat indices of its tied elements, floor of their coordinates)."""
    tensor = materialised.get(spec.ties.param)
    if not isinstance(tensor, inp.InputTensor) or tensor.array.dtype.kind != "f":
        return None, np.zeros(0, int), np.zeros(0, int)
    coordinate = np.asarray(spec.ties.coordinate(tensor.array, parsed), dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        floor = np.floor(coordinate)
        tied = np.flatnonzero(np.isfinite(coordinate) & (coordinate - floor == 0.5))
    return tensor, tied[:MAX_TIES_READ], floor[tied[:MAX_TIES_READ]].astype(int)


def _nudged(materialised: dict, param: str, positions, direction: float) -> dict:
    """A copy of the inputs with ``param``'s elements at ``positions`` moved off their tie toward ``direction``
    (+-1) by NUDGE of their magnitude (at least NUDGE * 2**-4): a few ulps of any float dtype, far below a
    grid cell, so the coordinate leaves the tie and nothing else changes."""
    copy = trial.copy_inputs(materialised)
    tensor = copy[param]
    flat = tensor.array.reshape(-1)
    values = flat[positions].astype(np.float64)
    moved = values + np.sign(direction) * np.maximum(np.abs(values), 2.0 ** -4) * NUDGE
    flat[positions] = inp.round_to_bfloat16(moved) if tensor.dtype == "bfloat16" else moved.astype(flat.dtype)
    return copy


def _outputs(name: str, prepared, materialised: dict) -> list | None:
    run = run_side(name, prepared, trial.copy_inputs(materialised))
    return None if run.error else [o.array for o in run.outputs]


def _same(a: list | None, b: list | None) -> bool:
    if a is None or b is None or len(a) != len(b):
        return False
    return all(x is not None and y is not None and x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
               for x, y in zip(a, b))


def side_choices(name: str, prepared, materialised: dict, param: str, tied, floors) -> list[tuple[int, int, bool]]:
    """(tie number, floor, rounded up?) for each tie whose choice the side's outputs show."""
    base = _outputs(name, prepared, materialised)
    if base is None:
        return []
    choices = []
    for j, (position, floor) in enumerate(zip(tied, floors)):
        down = _same(_outputs(name, prepared, _nudged(materialised, param, [position], -1.0)), base)
        up = _same(_outputs(name, prepared, _nudged(materialised, param, [position], 1.0)), base)
        if down != up:  # both unchanged: the tie's two neighbours give the same output, it tells nothing
            choices.append((j, int(floor), up))
    return choices


def _ties_alone(prepared, materialised: dict, param: str, tied, verdict: Verdict) -> bool:
    """Do Paddle and Torch agree once every tie is nudged down (the failure is the ties only)?"""
    nudged = _nudged(materialised, param, tied, -1.0)
    p_run = run_side("paddle", prepared, trial.copy_inputs(nudged))
    t_run = run_side("torch", prepared, trial.copy_inputs(nudged))
    if p_run.error or t_run.error:
        return False
    atol = verdict.atol if verdict.atol is not None else 1e-2
    rtol = verdict.rtol if verdict.rtol is not None else 1e-2
    return compare_outputs(p_run.outputs, t_run.outputs, atol, rtol).status == Status.PASS


def tie_convention_of(prepared, materialised: dict, verdict: Verdict) -> Convention | None:
    """The tie convention of a failing forward draw (``materialised``, the strict layer ``prepared``) of a spec
    with ``ties`` (module docstring), or None."""
    if verdict.strict_status != Status.ACCURACY_ERROR or (verdict.strict or {}).get("direction", verdict.direction) != "forward":
        return None
    if prepared.spec.ties is None:
        return None
    param = prepared.spec.ties.param
    tensor, tied, floors = tied_positions(prepared.spec, materialised, prepared.parsed)
    if tensor is None or not tied.size or not _ties_alone(prepared, materialised, param, tied, verdict):
        return None
    paddle = {j: (f, up) for j, f, up in side_choices("paddle", prepared, materialised, param, tied, floors)}
    torch = {j: (f, up) for j, f, up in side_choices("torch", prepared, materialised, param, tied, floors)}
    both = sorted(set(paddle) & set(torch))
    return tie_convention([paddle[j] for j in both], [torch[j] for j in both])
