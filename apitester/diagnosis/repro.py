"""A paste-ready repro script for one config and draw (usually the shrunk one).

The script holds the inputs as literals when they are small (``LITERAL_MAX_ELEMENTS``), else the
call that draws them deterministically (``draw_arguments``); the Paddle call written out as the
config makes it; the Torch call, which is the engine's strict reference for the API (a function of
``apitester/specs``, imported from apitester: its source is quoted in the script); and the
comparison the engine makes (forward outputs, then the input gradients for the same output-gradient),
ending in an AssertionError (exit status 1) when Paddle and Torch disagree.  Its last stdout line is
a JSON object ``{"status", "direction", "output"}`` that the round trip compares with the verdict.
"""
from __future__ import annotations

import inspect
import json
import math

import numpy as np

from ..engine import trial
from .. import inputs as inp
from ..engine.compare import Verdict
from .shrink import draw_inputs, prepare_strict

LITERAL_MAX_ELEMENTS = 1024


def draw_arguments(config: str, draw) -> dict:
    """The bound arguments of ``config`` on ``draw``: tensors as (numpy array, dtype name) pairs."""
    prepared = prepare_strict(config)
    if isinstance(prepared, Verdict):
        raise ValueError(prepared.message)
    materialised = draw_inputs(prepared, inp.Draw.parse(draw))
    return {k: trial.map_tensors(v, lambda t: (t.array, t.dtype)) for k, v in materialised.items()}


def _number(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


def _literal(value) -> str:
    """Python source of a plain argument value (numbers, strings, None, lists, tuples, slices)."""
    if isinstance(value, inp.InputTensor):
        return _array_literal(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(_literal(v) + ", " for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, slice):
        return f"slice({_literal(value.start)}, {_literal(value.stop)}, {_literal(value.step)})"
    if isinstance(value, complex):
        return f"complex({_number(value.real)}, {_number(value.imag)})"
    if isinstance(value, (float, np.floating)):
        return _number(float(value))
    return repr(value)


def _array_literal(t: inp.InputTensor) -> str:
    flat = t.array.reshape(-1)
    if t.array.dtype.kind == "c":
        items = ", ".join(f"complex({_number(float(v.real))}, {_number(float(v.imag))})" for v in flat)
    elif t.array.dtype.kind == "f":
        items = ", ".join(_number(float(v)) for v in flat)  # a float64 repr holds any float16/32 exactly
    else:
        items = ", ".join(repr(v.item()) for v in flat)
    held = str(t.array.dtype)
    return f"T(np.array([{items}], dtype={held!r}).reshape({list(t.array.shape)!r}), {t.dtype!r})"


def _arguments_source(config: str, draw: inp.Draw, materialised: dict) -> str:
    elements = sum(t.array.size for t in _tensors(materialised))
    if elements <= LITERAL_MAX_ELEMENTS:
        body = ",\n".join(f"    {k!r}: {_literal(v)}" for k, v in materialised.items())
        return "ARGS = {\n" + body + ",\n}\n"
    return ("# the inputs are too many for literals: apitester draws them (deterministic: config + draw)\n"
            "from apitester.diagnosis.repro import draw_arguments\n"
            f"ARGS = wrap(draw_arguments(CONFIG, {str(draw)!r}))\n")


def _tensors(materialised: dict) -> list:
    found: list = []
    for value in materialised.values():
        trial.map_tensors(value, lambda t: found.append(t) or t)
    return found


def _paddle_call(prepared) -> str:
    """Source of the Paddle call on converted values ``V`` (positional parameters positionally)."""
    spec, sig = prepared.spec, prepared.sig
    if spec.strict_paddle is not None or spec.paddle is not None:
        which = "strict_paddle" if spec.strict_paddle is not None else "paddle"
        return f"get_spec(API).{which}(**reference_kwargs(V))  # the spec's own Paddle side"
    parts = []
    for name, param in sig.parameters.items():
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            parts.append(f"V[{name!r}]")
        elif param.kind == param.VAR_POSITIONAL:
            parts.append(f"*V[{name!r}]")
        elif param.kind == param.KEYWORD_ONLY:
            parts.append(f"{name}=V[{name!r}]")
        elif param.kind == param.VAR_KEYWORD:
            parts.append(f"**V[{name!r}]")
    return f"{prepared.call.api}({', '.join(parts)})"


def _reference_source(fn) -> str:
    try:
        lines = inspect.getsource(fn).rstrip().splitlines()
    except (OSError, TypeError):
        return "#   (source not available)"
    return "\n".join("#   " + line for line in lines[:40])


def repro_script(config: str, draw, *, atol: float = 1e-2, rtol: float = 1e-2) -> str:
    """The repro script's source for ``config`` on ``draw`` (module docstring)."""
    draw = inp.Draw.parse(draw)
    prepared = prepare_strict(config)
    if isinstance(prepared, Verdict):
        raise ValueError(f"cannot write a repro: {prepared.message}")
    materialised = draw_inputs(prepared, draw)
    spec = prepared.spec
    reference = spec.strict_torch or spec.torch
    var_keyword = [n for n, p in prepared.sig.parameters.items() if p.kind == p.VAR_KEYWORD]
    reference_name = f"{reference.__module__}.{getattr(reference, '__qualname__', 'reference')}"
    return _TEMPLATE.format(
        docstring=script_docstring(config, draw, reference_name),
        config_literal=json.dumps(config), api=json.dumps(prepared.call.api), draw=str(draw),
        atol=atol, rtol=rtol, want_grad=prepared.want_grad, seed=draw.seed, draw_format=draw.format,
        arguments=_arguments_source(config, draw, materialised), paddle_call=_paddle_call(prepared),
        reference_source=_reference_source(reference),
        torch_attr="strict_torch" if spec.strict_torch is not None else "torch",
        outputs_attr="get_spec(API).outputs" if spec.outputs is not None else "None",
        var_keyword=json.dumps(var_keyword),
    )


def script_docstring(config: str, draw, reference_name: str) -> str:
    """The source of the script's module docstring, which quotes ``config`` as it reads.

    The config goes in escaped, not as it is: a string argument's ``\\N``, ``\\x4`` or ``\\u12`` is an escape
    sequence to the Python parser (a SyntaxError when malformed), a NUL byte cannot be in source at all and three
    quotes would end the docstring.  The docstring's value is the config exactly."""
    return _DOCSTRING.format(config=_docstring_escape(config), draw=draw, reference_name=reference_name)


def _docstring_escape(text: str) -> str:
    """``text`` as the body of a non-raw triple-quoted string literal whose value is ``text``."""
    escaped = "".join(
        "\\\\" if char == "\\" else char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text)
    return escaped.replace('"""', '""\\"')


def repro_command(config: str, draw) -> str:
    """The engine command that re-runs the same config and draw."""
    quoted = config.replace("'", "'\"'\"'")
    return f"python -m apitester --api_config='{quoted}' --draw {inp.Draw.parse(draw)}"


_DOCSTRING = '''\
"""Repro: {config}
draw {draw} (python -m apitester --api_config=... --draw {draw} replays it in the engine).

Paddle: the call below.  Torch: the engine's strict reference for this API, {reference_name}
(its source is quoted below).  Exit status 1 (AssertionError) when Paddle and Torch disagree, 0 when
they agree.
"""
'''

_TEMPLATE = '''\
{docstring}{reference_source}
import json
import sys
import zlib

import numpy as np
import paddle
import torch
from apitester.inputs import round_to_bfloat16, uniform_array  # the engine's draws (format FORMAT)
from apitester.specs import get_spec  # the Torch reference (and a spec-supplied Paddle side)
from apitester.vocab import Status  # the engine's verdict statuses

paddle.set_device("cpu")
CONFIG = {config_literal}
API = {api}
ATOL, RTOL = {atol!r}, {rtol!r}
WANT_GRAD = {want_grad!r}
SEED = {seed!r}
FORMAT = {draw_format!r}
VAR_KEYWORD = {var_keyword}
FLOATING = ("float16", "bfloat16", "float32", "float64")


class T:
    """One input tensor: its values (bfloat16 held as float32) and its dtype name."""

    def __init__(self, array, dtype):
        self.array, self.dtype = array, dtype


def wrap(value):
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], np.ndarray):
        return T(*value)
    if isinstance(value, (list, tuple)):
        return type(value)(wrap(v) for v in value)
    if isinstance(value, dict):
        return {{k: wrap(v) for k, v in value.items()}}
    return value


{arguments}

def convert(value, make, leaves):
    if isinstance(value, T):
        return make(value, leaves)
    if isinstance(value, (list, tuple)):
        return type(value)(convert(v, make, leaves) for v in value)
    if isinstance(value, dict):
        return {{k: convert(v, make, leaves) for k, v in value.items()}}
    return value


def to_paddle(t, leaves):
    x = paddle.to_tensor(t.array)
    if t.dtype == "bfloat16":
        x = x.astype("bfloat16")
    x.stop_gradient = not (WANT_GRAD and t.dtype in FLOATING)
    if not x.stop_gradient:
        leaves.append(x)
    return x


def to_torch(t, leaves):
    x = torch.from_numpy(t.array.copy())
    if t.dtype == "bfloat16":
        x = x.to(torch.bfloat16)
    if WANT_GRAD and t.dtype in FLOATING:
        x = x.requires_grad_(True)
        leaves.append(x)
    return x


def reference_kwargs(values):
    out = {{k: v for k, v in values.items() if k != "name" and k not in VAR_KEYWORD}}
    for k in VAR_KEYWORD:
        out.update(values.get(k) or {{}})
    return out


def flatten(value):
    if isinstance(value, (list, tuple)):
        return [item for v in value for item in flatten(v)]
    return [value]


def as_numpy(value):
    """(array, dtype name or None for a Python value)."""
    if isinstance(value, (paddle.Tensor, torch.Tensor)):
        name = str(value.dtype).rsplit(".", 1)[-1]
        if isinstance(value, paddle.Tensor):
            v = value.detach()
            return np.asarray((v.astype("float32") if name == "bfloat16" else v).numpy()), name
        v = value.detach().resolve_conj()
        return (v.float() if name == "bfloat16" else v).numpy(), name
    return np.asarray(value), None


def random_grad(shape, dtype, index):
    """The engine's output-gradient (apitester.engine.trial.output_gradient): its generator, in draw format FORMAT."""
    rng = np.random.default_rng([SEED, zlib.crc32(b"grad_output"), index])
    held = "float32" if dtype == "bfloat16" else dtype
    arr = uniform_array(rng, -1.0, 1.0, shape, held, fmt=FORMAT)
    return round_to_bfloat16(arr) if dtype == "bfloat16" else arr


def report(status, direction, output, message):
    print(message)
    print(json.dumps({{"status": status, "direction": direction, "output": output}}))
    if status != Status.PASS:
        raise AssertionError(f"{{status}} {{direction}} {{output}}")


def compare(actual, desired, direction, labels):
    if len(actual) != len(desired):
        report(Status.SHAPE_MISMATCH, direction, None, f"{{len(actual)}} vs {{len(desired)}} outputs")
    for label, (a, a_dtype), (d, d_dtype) in zip(labels, actual, desired):
        if a.shape != d.shape:
            report(Status.SHAPE_MISMATCH, direction, label, f"{{label}}: shape {{a.shape}} vs {{d.shape}}")
        if a_dtype is not None and d_dtype is not None and a_dtype != d_dtype:
            report(Status.DTYPE_MISMATCH, direction, label, f"{{label}}: dtype {{a_dtype}} (paddle) vs {{d_dtype}} (torch)")
        try:
            if a.dtype.kind in "biu" and d.dtype.kind in "biu":
                np.testing.assert_array_equal(a, d)
            elif a.dtype.kind in "fcbiu" and d.dtype.kind in "fcbiu":
                np.testing.assert_allclose(a.astype(np.complex128 if "c" in a.dtype.kind + d.dtype.kind else np.float64),
                                           d.astype(np.complex128 if "c" in a.dtype.kind + d.dtype.kind else np.float64),
                                           atol=ATOL, rtol=RTOL, equal_nan=True)
            elif str(a) != str(d):
                raise AssertionError(f"{{a}} != {{d}}")
        except AssertionError as exc:
            report(Status.ACCURACY_ERROR, direction, label, f"{{label}} (paddle = actual, torch = desired):{{exc}}")


def main():
    p_leaves, t_leaves = [], []
    V = convert(ARGS, to_paddle, p_leaves)
    try:
        p_out = {paddle_call}
        outputs = {outputs_attr}
        p_flat = flatten(outputs(p_out) if outputs else p_out)
    except Exception as exc:
        report(Status.PADDLE_ERROR, "forward", None, f"paddle raised: {{exc}}")
    V = convert(ARGS, to_torch, t_leaves)
    try:
        t_out = get_spec(API).{torch_attr}(**reference_kwargs(V))
        t_flat = flatten(outputs(t_out) if outputs else t_out)
    except Exception as exc:
        report(Status.TORCH_ERROR, "forward", None, f"torch raised: {{exc}}")
    compare([as_numpy(v) for v in p_flat], [as_numpy(v) for v in t_flat], "forward",
            [f"output {{i}}" for i in range(len(p_flat))])
    pairs = [(i, p, t) for i, (p, t) in enumerate(zip(p_flat, t_flat))
             if isinstance(t, torch.Tensor) and t.requires_grad and isinstance(p, paddle.Tensor)
             and not p.stop_gradient]
    if not (WANT_GRAD and pairs and p_leaves):
        report(Status.PASS, None, None, "paddle and torch agree (forward)")
        return
    grads = [random_grad(tuple(t.shape), str(t.dtype).rsplit(".", 1)[-1], i) for i, _, t in pairs]
    try:
        p_grads = paddle.grad([p for _, p, _ in pairs], p_leaves,
                              grad_outputs=[paddle.to_tensor(g).astype(p.dtype) for g, (_, p, _) in zip(grads, pairs)],
                              allow_unused=True)
    except Exception as exc:
        report(Status.PADDLE_ERROR, "backward", None, f"paddle raised in backward: {{exc}}")
    t_grads = torch.autograd.grad([t for _, _, t in pairs], t_leaves,
                                  grad_outputs=[torch.from_numpy(g).to(t.dtype) for g, (_, _, t) in zip(grads, pairs)],
                                  allow_unused=True)
    labels = [f"grad {{name}}" for name in GRAD_LABELS]
    zeros = lambda leaf, g: g if g is not None else leaf * 0  # noqa: E731  (an unused input: zero gradient)
    compare([as_numpy(zeros(l, g)) for l, g in zip(p_leaves, p_grads)],
            [as_numpy(zeros(l, g)) for l, g in zip(t_leaves, t_grads)], "backward", labels)
    report(Status.PASS, None, None, "paddle and torch agree (forward and backward)")


GRAD_LABELS = [label for label in (
    (key if n == 0 else f"{{key}}[{{n}}]")
    for key, value in ARGS.items()
    for n in range(len([t for t in flatten(value if not isinstance(value, dict) else list(value.values()))
                        if isinstance(t, T) and t.dtype in FLOATING]))
)]

if __name__ == "__main__":
    try:
        main()
    except AssertionError as exc:
        print(f"AssertionError: {{exc}}", file=sys.stderr)
        sys.exit(1)
'''
