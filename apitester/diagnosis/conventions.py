"""Failures that are not about values: the two sides follow different conventions, and the reading names both.

A dtype, shape or error failure has no exact value to measure the sides against, but it is not a mystery
either: "dtype int32 (Paddle) vs int64 (Torch)", "shape (n,) vs (n, 1)", "Paddle raises ValueError: … where
Torch returns".  ``convention_of`` reads that off the strict layer of a verdict: its status and its ``facts``
(``Verdict.facts``, as ``apitester.engine.compare`` and ``apitester.engine.trial`` record them; no message is parsed back) and ``convention_reading`` makes it the failing
output's reading (``Reading.CONVENTION``, docs/diagnosis.md) in place of ``no_oracle``.

Ties (``ConventionKind.TIE``) are read from values, not from the message: ``tie_convention`` takes each side's
rounding choice at the inputs placed exactly on a tie (``apitester.specs.base.Ties``) and names each side's
rule (``TieRule``).

A convention is a ``Convention`` (frozen, its kind a ``ConventionKind``; defined beside the other typed readings in
``records``, an ``OutputReading`` holds it), serialised in one place (``Convention.to_dict``, read back by
``Convention.from_dict``) as ``{"kind", "paddle", "torch", "text", "key"}`` and for ``raises`` also ``"raises"``
(the side that raises) and ``"error"`` (its message), for ``tie`` also ``"paddle_rule"``, ``"torch_rule"`` and
``"ties"`` (how many tied elements went different ways), for ``subgradient`` also ``"kinks"``, for ``undefined``
also ``"elements"`` (how many input elements have no derivative), for ``parameter`` also ``"parameters"``
("slope=0.2": the config's values) and ``"rounds"`` (the side computing them at float32;
``rounded_parameter_convention``).  A gradient whose shape is not its input's is no convention but that side's
error (``gradient_shape_reading``).  ``key`` is what distinct failures group by: the sizes and the error's text
left out (a shape as ``(n,) vs (n, 1)``, an error as its exception type).
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import trial
from .measuring import oracles_agree
from .records import Convention, OutputReading
from .sides import output_gradients, run_side
from ..vocab import ConventionKind, Reading, ReadingSource, Side, Status, TieRule

def symbolic_shape(dims: list[int], names: dict[int, str]) -> str:
    """A shape with every size above 1 named by its value (the first size seen is n, then m, k, …), 1 kept:
    [3] -> "(n,)", [3, 1] -> "(n, 1)".  ``names`` is shared by both sides so equal sizes get one name."""
    letters = "nmkpqrs"
    parts = []
    for d in dims:
        if d == 1 or d == 0:
            parts.append(str(d))
            continue
        if d not in names:
            names[d] = letters[len(names)] if len(names) < len(letters) else f"n{len(names)}"
        parts.append(names[d])
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _dtype(facts: dict) -> Convention | None:
    if "dtypes" not in facts:
        return None
    paddle, torch = facts["dtypes"]
    return Convention(ConventionKind.DTYPE, paddle, torch, text=f"dtype: {paddle} (Paddle) vs {torch} (Torch)",
                      key=f"dtype: {paddle} vs {torch}")


def gradient_shape_reading(layer: dict) -> OutputReading | None:
    """A gradient whose shape is not its input's is that side's error, not a shape convention (issue 44): the
    reading naming the side (``paddle_off`` / ``torch_off``, ``both_off`` where neither has its input's shape), or
    None where the layer is no gradient's shape mismatch, the input's shape is not recorded (``facts["input_shape"]``,
    apitester.engine.trial) or both gradients have it (the shape convention stands)."""
    facts = layer.get("facts") or {}
    want = facts.get("input_shape")
    if layer.get("status") != Status.SHAPE_MISMATCH or "shapes" not in facts or want is None:
        return None
    want = list(want)
    output = layer.get("output") or ""
    dims = dict(zip((Side.PADDLE, Side.TORCH), (list(d) for d in facts["shapes"])))
    off = [side for side in (Side.PADDLE, Side.TORCH) if dims[side] != want]
    if not off:
        return None
    reading = {(Side.PADDLE,): Reading.PADDLE_OFF, (Side.TORCH,): Reading.TORCH_OFF}.get(tuple(off), Reading.BOTH_OFF)
    said = "; ".join(f"{side.capitalize()}'s {output} has shape {dims[side]}, its input {want}" for side in off)
    evidence = f"{said} (a gradient has its input's shape)"
    return OutputReading(output, reading, reason=evidence, oracle=ReadingSource.INPUT_SHAPE, evidence=evidence)


def _shape(facts: dict) -> Convention | None:
    if "shapes" in facts:
        p_dims, t_dims = (list(dims) for dims in facts["shapes"])
        names: dict[int, str] = {}
        p_sym, t_sym = symbolic_shape(p_dims, names), symbolic_shape(t_dims, names)
        return Convention(ConventionKind.SHAPE, str(p_dims), str(t_dims), text=f"shape {p_sym} (Paddle) vs {t_sym} (Torch)",
                          key=f"shape: {p_sym} vs {t_sym}")
    if "outputs" in facts:
        p, t = facts["outputs"]
        return Convention(ConventionKind.SHAPE, f"{p} outputs", f"{t} outputs",
                          text=f"{p} outputs (Paddle) vs {t} outputs (Torch)", key=f"outputs: {p} vs {t}")
    if "none" in facts:
        paddle, torch = ("None", "a value") if facts["none"] == Side.PADDLE else ("a value", "None")
        return Convention(ConventionKind.SHAPE, paddle, torch, text=f"{paddle} (Paddle) vs {torch} (Torch)",
                          key=f"output: {paddle} vs {torch}")
    return None


def _raises(side: str, error: str, kind: str) -> Convention:
    """``error``: the side's error as the verdict shows it; ``kind``: its exception's type."""
    error = error.strip()
    other = "Torch" if side == Side.PADDLE else "Paddle"
    raised, returned = f"raises {error}", "returns"
    paddle, torch = (raised, returned) if side == Side.PADDLE else (returned, raised)
    return Convention(ConventionKind.RAISES, paddle, torch,
                      text=f"{'Paddle' if side == Side.PADDLE else 'Torch'} raises {error} where {other} returns",
                      key=f"raises: {kind} ({side}) vs returns ({other.lower()})",
                      details=(("raises", str(side)), ("error", error)))


def convention_of(layer: dict, error: str = "") -> Convention | None:
    """The convention a strict failure shows (``layer``: the verdict's strict layer, its status and facts), or
    None when the failure is about values (accuracy_error), or both sides raise (an input outside the API).
    ``error``: the raising side's error text to show (the layer's message by default)."""
    status, facts = layer.get("status"), layer.get("facts") or {}
    if status == Status.DTYPE_MISMATCH:
        return _dtype(facts)
    if status == Status.SHAPE_MISMATCH:  # a gradient not shaped as its input is a side's error instead
        return None if gradient_shape_reading(layer) else _shape(facts)
    if status == Status.PADDLE_ERROR and facts.get("both_reject"):
        return None
    if status in (Status.PADDLE_ERROR, Status.TORCH_ERROR):
        side = Side.PADDLE if status == Status.PADDLE_ERROR else Side.TORCH
        return _raises(side, error or layer.get("message") or "", facts.get("error_type") or "error")
    return None


def convention_reading(output: str | None, convention: Convention) -> OutputReading:
    """The failing output's reading for a convention: names both behaviours, no oracle needed."""
    return OutputReading(output or "", Reading.CONVENTION, reason=convention.text, convention=convention)


# ---------------------------------------------------------------- ties


def _consistent(rule: TieRule, floor: int, up: bool) -> bool:
    """Does ``rule`` round the tie floor + 0.5 up (to floor + 1) exactly when ``up``?"""
    if rule == TieRule.HALF_TO_EVEN:
        return up == (floor % 2 != 0)
    if rule == TieRule.HALF_AWAY_FROM_ZERO:
        return up == (floor >= 0)
    if rule == TieRule.HALF_UP:
        return up
    return not up  # HALF_DOWN


RULE_ORDER = (TieRule.HALF_TO_EVEN, TieRule.HALF_AWAY_FROM_ZERO, TieRule.HALF_UP, TieRule.HALF_DOWN)


def tie_rule(choices: list[tuple[int, bool]], avoid: "TieRule | None" = None) -> TieRule:
    """The rule a side's choices follow: ``choices`` are (floor of the tied coordinate, rounded up?) per tie.

    Several rules can fit the ties seen (on positive ties half away from zero and half up agree): the first
    in RULE_ORDER that fits is named, except ``avoid`` (the other side's rule) while another fits; MIXED when
    none fits."""
    fitting = [rule for rule in RULE_ORDER if all(_consistent(rule, f, up) for f, up in choices)]
    if not fitting:
        return TieRule.MIXED
    preferred = [rule for rule in fitting if rule != avoid]
    return (preferred or fitting)[0]


RULE_TEXT = {
    TieRule.HALF_TO_EVEN: "half to even", TieRule.HALF_AWAY_FROM_ZERO: "half away from zero",
    TieRule.HALF_UP: "half up", TieRule.HALF_DOWN: "half down", TieRule.MIXED: "no single rule",
}


def tie_convention(paddle: list[tuple[int, bool]], torch: list[tuple[int, bool]]) -> Convention | None:
    """The tie convention of two sides' choices at the same ties (None when they round every tie alike)."""
    differ = sum(1 for (_, p), (_, t) in zip(paddle, torch) if p != t)
    if not differ:
        return None
    t_rule = tie_rule(torch)
    p_rule = tie_rule(paddle, avoid=t_rule)
    if p_rule == t_rule:
        t_rule = tie_rule(torch, avoid=p_rule)
    p_text, t_text = RULE_TEXT[p_rule], RULE_TEXT[t_rule]
    return Convention(ConventionKind.TIE, p_text, t_text,
                      text=f"ties: Paddle rounds {p_text}, Torch {t_text} ({differ} tied element"
                           f"{'s' if differ != 1 else ''})",
                      key=f"tie: {p_rule} vs {t_rule}",
                      details=(("paddle_rule", str(p_rule)), ("torch_rule", str(t_rule)), ("ties", differ)))


# ---------------------------------------------------------------- a parameter rounded to the working dtype


def rounded_parameter_convention(prepared, materialised: dict, draw, output: str, direction: str) -> Convention | None:
    """A float parameter one side computes at float32 (Paddle keeps a float attribute as a 32-bit float: a slope of
    0.2 is 0.2000000030, which moves a kink or a clamp bound by ~1e-8) where the other computes the float64 value
    (issue 44): the convention, where running the other side with that parameter rounded to float32 gives the first
    side's ``output`` (``oracles_agree``) and the unrounded run does not.  None where no float parameter changes when
    rounded, or the rounding does not explain the difference."""
    names = [k for k, v in materialised.items() if type(v) is float and math.isfinite(v) and float(np.float32(v)) != v]
    wide = any(getattr(t, "dtype", None) in ("float64", "complex128") for v in materialised.values()
               for t in (v if isinstance(v, (list, tuple)) else [v]))
    if not names or not wide:  # below float64 both sides compute a parameter at float32 (or lower) alike
        return None
    grad_of = output_gradients(prepared, materialised, draw) if direction == "backward" else None

    def result(side: str, inputs: dict):
        run = run_side(side, prepared, trial.copy_inputs(inputs), grad_of)
        outs = run.grads if direction == "backward" else run.outputs
        labels = run.grad_labels if direction == "backward" else [f"output {i}" for i in range(len(outs))]
        found = dict(zip(labels, outs)).get(output)
        return None if run.error or found is None or found.array is None else np.asarray(found.array)

    def agree(a, b) -> bool:
        return a is not None and b is not None and a.shape == b.shape and a.dtype.kind in "fc" and \
            oracles_agree(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                          b.astype(np.complex128 if b.dtype.kind == "c" else np.float64))[0]

    plain = {side: result(side, materialised) for side in (Side.PADDLE, Side.TORCH)}
    if any(v is None for v in plain.values()) or agree(plain[Side.PADDLE], plain[Side.TORCH]):
        return None

    def explains(keys: list[str], rounds: str, other: str) -> bool:
        rounded = {**materialised, **{k: float(np.float32(materialised[k])) for k in keys}}
        return agree(result(other, rounded), plain[rounds])

    for rounds, other in ((Side.PADDLE, Side.TORCH), (Side.TORCH, Side.PADDLE)):
        if explains(names, rounds, other):  # all rounded at once first (one run), then which one it is
            keys = next(([name] for name in names if len(names) > 1 and explains([name], rounds, other)), names)
            return _rounded_convention(rounds, {k: materialised[k] for k in keys})
    return None


def _rounded_convention(rounds: str, params: dict) -> Convention:
    """The convention naming the side that rounds ``params`` ({name: the config's value}) to float32."""
    said = ", ".join(f"{k}={v!r} as float32 ({float(np.float32(v)):.10g})" for k, v in params.items())
    names = ", ".join(params)
    rounding, exact = f"{names} rounded to float32", f"{names} at float64"
    paddle, torch = (rounding, exact) if rounds == Side.PADDLE else (exact, rounding)
    other = "Torch" if rounds == Side.PADDLE else "Paddle"
    text = (f"parameter rounded to float32: {rounds.capitalize()} computes {said}, {other} the float64 value "
            f"(the rounded parameter moves a kink or bound; with it rounded, {other}'s result is {rounds.capitalize()}'s)")
    return Convention(ConventionKind.PARAMETER, paddle, torch, text=text,
                      key=f"parameter: {names} float32 ({rounds}) vs float64 ({other.lower()})",
                      details=(("parameters", ", ".join(f"{k}={v!r}" for k, v in params.items())),
                               ("rounds", str(rounds))))
