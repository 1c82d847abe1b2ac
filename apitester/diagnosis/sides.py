"""Running one side of a prepared config (Paddle's or Torch's) on given inputs, at the config's dtypes or upcast to
float64: its outputs, its input gradients from given output gradients, or why it raised (``SideRun``); and the
config-level reasons no float64 run can stand for a config (``config_level_reason``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engine import trial
from .. import inputs as inp
from ..engine.compare import Out
from ..specs.base import dtype_name
from ..vocab import AdaptationKind, NoOracle
from .measuring import HIGH, UPCAST


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
