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

import inspect
import json
import os
import re
import time
import traceback
import zlib
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from . import inputs as inp
from .compare import Out, Verdict, compare_outputs, final_status, layer_of, merge_exactness
from .config import Call, ConfigSyntaxError, TensorSpec, api_name, parse_config, walk
from .phases import CLOCK, Phase
from . import torch_cache
from .specs import get_spec
from .specs.base import Spec, dtype_name
from .vocab import Side, Status

FLOATING = ("float16", "bfloat16", "float32", "float64")
MESSAGE_LIMIT = 500

_frameworks: dict[str, Any] = {}

# Statuses of a draw that make it the verdict (a Paddle failure) and those that are worse than a
# pass without being one (docs/verdicts.md).
FAILING_DRAW = frozenset({Status.ACCURACY_ERROR, Status.DTYPE_MISMATCH, Status.SHAPE_MISMATCH, Status.PADDLE_ERROR})
BY_DESIGN_DRAW = frozenset({Status.DOCUMENTED_DIFFERENCE, Status.TORCH_SUSPECT})
# How a paddle_error says Torch rejects the same inputs (the edge values are outside the API).
BOTH_REJECT = " (torch rejects it too: "




def frameworks():
    """(paddle, torch), imported once and set to the CPU."""
    if not _frameworks:
        os.environ.setdefault("GLOG_minloglevel", "2")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # paddle's "No ccache found" on import
            import paddle
        import torch

        paddle.set_device("cpu")
        try:
            paddle.disable_static()
        except Exception:  # already dynamic
            pass
        _frameworks["paddle"] = paddle
        _frameworks["torch"] = torch
        _frameworks["device"] = "cpu"
    return _frameworks["paddle"], _frameworks["torch"]


def gpu_available() -> bool:
    paddle, _ = frameworks()
    return bool(paddle.is_compiled_with_cuda())


def _set_device(device: str) -> str | None:
    """Switch both frameworks to device; returns a reason string when impossible."""
    paddle, torch = frameworks()
    if device not in ("cpu", "gpu"):
        return f"unknown device {device!r} (use 'cpu' or 'gpu')"
    if device == "gpu" and not paddle.is_compiled_with_cuda():
        return ("GPU lane needs a CUDA build of Paddle; the installed Paddle "
                f"{paddle.__version__} is CPU-only, so this config waits for a GPU worker")
    if _frameworks["device"] != device:
        paddle.set_device(device)
        _frameworks["device"] = device
    return None


def _torch_device() -> str:
    _, torch = frameworks()
    if _frameworks["device"] == "gpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


# ---------------------------------------------------------------- resolution (cached)


@lru_cache(maxsize=None)
def resolve_paddle(api: str):
    """The Paddle callable a config API name refers to ('paddle.Tensor.X' -> unbound method)."""
    paddle, _ = frameworks()
    parts = api.split(".")
    if parts[0] != "paddle":
        raise AttributeError(f"{api} is not a paddle API")
    obj: Any = paddle
    for part in parts[1:]:
        obj = getattr(obj, part)
    return obj


@lru_cache(maxsize=None)
def _signature(spec: Spec, api: str) -> inspect.Signature:
    if spec.signature is not None:
        sig = inspect.signature(spec.signature)
    else:
        sig = inspect.signature(resolve_paddle(api))
    params = list(sig.parameters.values())
    # Tensor methods name their tensor `self`; bind it as `x` so one reference serves
    # paddle.X(x, ...) and paddle.Tensor.X(self, ...) alike.
    if params and params[0].name == "self" and "x" not in sig.parameters:
        params[0] = params[0].replace(name="x")
        sig = sig.replace(parameters=params)
    return sig


def _bind(sig: inspect.Signature, call: Call) -> inspect.BoundArguments:
    bound = sig.bind(*call.args, **call.kwargs)
    bound.apply_defaults()
    return bound


# ---------------------------------------------------------------- conversion


def _map_tensors(value, leaf):
    """``leaf`` applied to every InputTensor inside lists, tuples and **kwargs dicts."""
    return walk(value, lambda item, _path: leaf(item) if isinstance(item, inp.InputTensor) else item,
                into=(list, tuple, dict))


def _is_inplace(api: str) -> bool:
    """x.add_(...), paddle.nn.functional.relu_, Tensor.__setitem__, __iadd__ ...: the input
    is overwritten, so it cannot be an autograd leaf on either side."""
    last = api.rsplit(".", 1)[-1]
    if last.startswith("__"):
        return last == "__setitem__" or (last.startswith("__i") and last not in ("__invert__", "__index__", "__int__"))
    return last.endswith("_")


def _reference_kwargs(values: dict, sig: inspect.Signature) -> dict:
    """Bound values by Paddle parameter name for a reference: `name` dropped, a **kwargs
    parameter's entries spread at top level."""
    out = {}
    for key, value in values.items():
        if key == "name":
            continue
        param = sig.parameters.get(key)
        if param is not None and param.kind == param.VAR_KEYWORD:
            out.update(value)
        else:
            out[key] = value
    return out


def _plain(value):
    """Parsed non-tensor values as plain Python (dtype constructors -> name strings)."""
    return walk(value, lambda item, _path: item if isinstance(item, TensorSpec) else inp.plain_value(item))


class _Leaves:
    """Collects the differentiable leaf tensors of one side, in a fixed order. ``share``: Paddle may read big inputs
    in place (``_paddle_tensor``), as torch always does."""

    def __init__(self, grad: bool, share: bool = False):
        self.grad = grad
        self.share = share
        self.tensors: list = []
        self.labels: list[str] = []


# Arrays of at least this many elements are handed to Paddle through DLPack, sharing the numpy memory as torch's
# from_numpy does, instead of to_tensor's copy: on a [33712, 1024] embedding weight the copies (one per layer and
# draw) were a quarter of what the engine spent outside Paddle and Torch. Smaller ones are copied (the copy is cheap
# and to_tensor's path is the one every config always took).
SHARED_INPUT_ELEMENTS = 1 << 16


def _paddle_tensor(array: np.ndarray, share: bool):
    """A Paddle tensor of ``array``: the array's own memory when ``share`` and it is big, contiguous and writable
    (nothing writes to it: Paddle only reads the inputs of an API that is not in-place, and Paddle's backward does
    not write to its output gradients), else to_tensor's copy."""
    paddle, _ = frameworks()
    if share and array.size >= SHARED_INPUT_ELEMENTS and array.flags.c_contiguous and array.flags.writeable:
        try:
            return paddle.utils.dlpack.from_dlpack(array.__dlpack__())
        except (BufferError, TypeError, RuntimeError, ValueError, AttributeError):
            pass  # a dtype or build DLPack can't hand over: the copy, as before
    return paddle.to_tensor(array)


def _shares_inputs(api: str, parsed: dict) -> bool:
    """Whether Paddle may read this config's inputs in place: not when the API writes into an argument (in-place,
    or a tensor passed as out=/output=), which would change what the Torch side reads -- and with out= make both
    sides' outputs one buffer, a comparison that always agrees."""
    if _is_inplace(api):
        return False
    return not any(isinstance(parsed.get(name), TensorSpec) for name in ("out", "output"))


def _to_paddle(value: inp.InputTensor, leaves: _Leaves, label: str):
    paddle, _ = frameworks()
    tensor = _paddle_tensor(value.array, leaves.share)
    if value.dtype == "bfloat16":
        tensor = tensor.astype("bfloat16")
    if leaves.grad and value.dtype in FLOATING:
        tensor.stop_gradient = False
        leaves.tensors.append(tensor)
        leaves.labels.append(label)
    else:
        tensor.stop_gradient = True
    return tensor


def _to_torch(value: inp.InputTensor, leaves: _Leaves, label: str):
    _, torch = frameworks()
    # from_numpy shares the array; Paddle already took its own copy in to_tensor
    tensor = torch.from_numpy(value.array)
    if value.dtype == "bfloat16":
        tensor = tensor.to(torch.bfloat16)
    dev = _torch_device()
    if dev != "cpu":
        tensor = tensor.to(dev)
    if leaves.grad and value.dtype in FLOATING:
        tensor = tensor.detach().requires_grad_(True)
        leaves.tensors.append(tensor)
        leaves.labels.append(label)
    return tensor


def _convert(materialised: dict, make, grad: bool, share: bool = False) -> tuple[dict, _Leaves]:
    leaves = _Leaves(grad, share)
    out = {}
    for key, value in materialised.items():
        counter = [0]

        def leaf(t, key=key, counter=counter):
            label = key if counter[0] == 0 else f"{key}[{counter[0]}]"
            counter[0] += 1
            return make(t, leaves, label)

        out[key] = _map_tensors(value, leaf)
    return out, leaves


def _flatten_outputs(value) -> list:
    if isinstance(value, (list, tuple)):
        flat = []
        for item in value:
            flat.extend(_flatten_outputs(item))
        return flat
    return [value]


def _paddle_out(value) -> Out:
    paddle, _ = frameworks()
    if value is None:
        return Out(None)
    if isinstance(value, paddle.Tensor):
        name = dtype_name(value.dtype)
        t = value.detach() if hasattr(value, "detach") else value
        if name == "bfloat16":
            t = t.astype("float32")
        return Out(_paddle_array(t), name, True)
    return _plain_out(value)


def _paddle_array(t) -> np.ndarray:
    """A CPU tensor's values without a copy: numpy reads Paddle's memory through DLPack (the array holds the
    tensor's allocation), as torch's .numpy() already does. Tensor.numpy() copied every output -- on a broadcast
    maximum, a 30-million-element copy per draw. A tensor DLPack can't hand over (another device, a dtype numpy
    has no DLPack name for) is copied as before; the values are the same either way."""
    try:
        return np.from_dlpack(t)
    except (BufferError, TypeError, RuntimeError, ValueError, AttributeError):
        return np.asarray(t.numpy())


def _torch_out(value) -> Out:
    _, torch = frameworks()
    if value is None:
        return Out(None)
    if isinstance(value, torch.Tensor):
        name = dtype_name(value.dtype)
        t = value.detach()
        if name == "bfloat16":
            t = t.float()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.is_conj():
            t = t.resolve_conj()
        if not t.is_contiguous():
            # an expanded gradient (sum's: one value with stride 0) is made whole by torch's copy; numpy would
            # copy it element by element at every comparison (0.2 s for 38 million float16)
            t = t.contiguous()
        return Out(t.numpy(), name, True)
    return _plain_out(value)


def _plain_out(value) -> Out:
    """A non-tensor output: numbers as 0-d arrays; dtype objects as their name; other
    objects compared by their string form."""
    paddle, torch = frameworks()
    if isinstance(value, (paddle.dtype, torch.dtype, np.dtype)):
        return Out(np.asarray(dtype_name(value)), None, False)
    if isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
        return Out(np.asarray(value), None, False)
    return Out(np.asarray(str(value)), None, False)


_HINT = re.compile(r"\s*\[Hint:.*?\]\s*|\s*\(at /[^)]*\)")


def _short(exc: BaseException) -> str:
    """One clear line from a Paddle/Torch exception (C++ stacks and hints dropped)."""
    # "SystemError: <built-in ...> returned a result with an exception set": the real
    # error is the chained one.
    while isinstance(exc, SystemError) and (exc.__cause__ or exc.__context__):
        exc = exc.__cause__ or exc.__context__
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # Paddle's C++ errors: a "C++ Traceback" block, then "Error Message Summary:", then the error
    if "Error Message Summary:" in text:
        after = text.split("Error Message Summary:", 1)[1]
        lines = [ln.strip() for ln in after.splitlines() if ln.strip() and not ln.startswith("---")]
    lines = [ln for ln in lines if not ln.startswith(("File ", "[operator", "---", "C++ Traceback"))]
    body = " ".join(lines) if lines else text
    body = _HINT.sub(" ", body).strip()
    return f"{type(exc).__name__}: {body}"[:MESSAGE_LIMIT]


def _tolerance(spec: Spec, outs: list[Out], materialised: dict, atol: float, rtol: float):
    names = [o.dtype for o in outs if o.dtype in (*FLOATING, "complex64", "complex128")]
    if not names:
        for value in materialised.values():
            for t in _flatten_outputs(value):
                if isinstance(t, inp.InputTensor):
                    names.append(t.dtype)
    for name in names:
        if name in spec.tolerances:
            return spec.tolerances[name]
    return atol, rtol


def _grad_outputs(outs_p, outs_t):
    """Pairs of (paddle out, torch out) that carry gradients on both sides."""
    paddle, torch = frameworks()
    pairs = []
    notes = []
    for i, (p, t) in enumerate(zip(outs_p, outs_t)):
        t_grad = isinstance(t, torch.Tensor) and t.requires_grad and dtype_name(t.dtype) in FLOATING
        p_grad = isinstance(p, paddle.Tensor) and not p.stop_gradient and dtype_name(p.dtype) in FLOATING
        if t_grad and p_grad:
            pairs.append((i, p, t))
        elif t_grad != p_grad:
            notes.append(f"output {i} is differentiable only in {'torch' if t_grad else 'paddle'}")
    return pairs, notes


def _random_grad(shape, dtype: str, seed: int, index: int, fmt: int) -> np.ndarray:
    """Output ``index``'s gradient: uniform in [-1, 1), from its own generator. Drawn once per run_config and
    key (the typical and the edge draw share a seed, the strict and the adapted layer their outputs); the
    array is the same every time it is asked for and nobody writes to it: both sides read the array itself
    (_paddle_tensor; Paddle's backward does not write to its output gradients, and torch's autograd does not write
    to a gradient the caller still holds). ``fmt``: the draw's format (inputs.DRAW_FORMATS)."""
    key = (tuple(shape), dtype, seed, index, fmt)
    cached = _GRADS.get(key) if _GRADS is not None else None
    if cached is not None:
        return cached
    rng = np.random.default_rng([seed, zlib.crc32(b"grad_output"), index])
    arr = inp.uniform_array(rng, -1.0, 1.0, shape, inp.numpy_dtype(dtype), fmt=fmt)
    if dtype == "bfloat16":
        arr = inp.round_to_bfloat16(arr)
    if _GRADS is not None:
        _GRADS[key] = arr
    return arr


# The output gradients drawn during the current run_config; None outside one (the oracle draws its own), and
# dropped when it returns: a worker runs many configs, and one big output's gradient should not outlive its config.
_GRADS: dict[tuple, np.ndarray] | None = None


# ---------------------------------------------------------------- run


def run_config(config: str, *, device: str = "cpu", atol: float = 1e-2, rtol: float = 1e-2, seed: int = 0,
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
            return Verdict("unsupported", config=config, api=api_name(config), message=str(exc))
    try:
        frameworks()  # one-time import, not part of a config's seconds
    except Exception as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return Verdict("unsupported", engine_error=True, config=config, api=api_name(config),
                       message=f"engine error: cannot import paddle/torch: {last}")
    start = time.perf_counter()
    CLOCK.reset()
    cache = torch_cache.active()
    if cache is not None:
        cache.take_counts()  # this config's events only
    global _GRADS
    _GRADS = {}
    try:
        verdict = _run(config, device, atol, rtol, seed, draw, bitwise, stability)
    except Exception as exc:  # a bug or gap inside apitester itself
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        verdict = Verdict("unsupported", engine_error=True, message=f"engine error: {last}")
    finally:
        _GRADS = None
        _stop_capture()
    verdict.seconds = time.perf_counter() - start
    verdict.framework_seconds = CLOCK.framework()
    verdict.phases = CLOCK.report(verdict.seconds)
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


@dataclass
class _Prepared:
    """Step 1's result: the parsed call, its spec and the materialised inputs."""

    call: Call
    spec: Spec
    sig: inspect.Signature
    parsed: dict
    materialised: dict
    want_grad: bool
    paddle_side: Callable  # values (by Paddle parameter name) -> Paddle's raw output
    torch_side: Callable   # values -> the reference's raw output
    share_inputs: bool = False  # Paddle may read big inputs in place (_shares_inputs)
    bitwise: bool = False  # judge with atol = rtol = 0, the spec's tolerances set aside (run_config)
    draw_format: int = inp.DRAW_FORMAT  # the format of the draw being judged (its output gradients follow it)
    config: str = ""  # the config string (the Torch result cache's key)
    draw_key: str = ""  # the draw being judged, as its dict in JSON (the Torch result cache's key)
    torch_layer: str = "torch"  # which of the spec's Torch sides this is: "torch" or "strict_torch"


@dataclass
class _Forward:
    """Step 2's result when the forward outputs agree: what the backward step needs."""

    verdict: Verdict
    p_flat: list
    p_leaves: _Leaves


def _run(config: str, device: str, atol: float, rtol: float, seed: int, draw: inp.Draw | None,
         bitwise: bool = False, stability: bool = False) -> Verdict:
    prepared = _prepare(config, device)
    if isinstance(prepared, Verdict):
        return prepared
    if bitwise:
        prepared, atol, rtol = replace(prepared, bitwise=True), 0.0, 0.0
    spec = prepared.spec
    plan = _plan(prepared, draw, seed)
    options = inp.EdgeOptions(nan_inf=spec.nan_inf, overflow=spec.overflow, magnitudes=spec.magnitudes,
                              extra=dict(spec.edges),
                              ties={spec.ties.param: spec.ties.values} if spec.ties else {})
    reported: Verdict | None = None
    exact: tuple[bool | None, int | None] = (None, None)  # the exact rule over every draw judged
    judged: list[str] = []
    not_judged: list[str] = []
    # the typical draw's values, kept for the edge draw of the same seed (which would draw them again)
    typical = {} if len(plan) > 1 and any(d.kind == inp.EDGE for d in plan) else None
    watch = _Inexact() if stability else None
    for current in plan:
        _start_capture(watch)
        if reported is None:  # the first draw: an error here is the config's, as it always was
            verdict = _run_draw(prepared, current, options, atol, rtol, replay=draw is not None, typical=typical)
        else:
            try:
                verdict = _run_draw(prepared, current, options, atol, rtol, replay=False, typical=typical)
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
    reported.draws = judged
    _set_exactness(reported, exact)
    if not_judged:
        reported.message = "\n".join([reported.message, *not_judged]).strip()
    if watch is not None and exact[0] is False:
        with CLOCK.span(Phase.READINGS, absorb=True):
            _read_stability(reported, watch.pick(reported), prepared, options, atol, rtol)
    return reported


# ---------------------------------------------------------------- run-to-run stability

# The Out lists of the draw being run, each (paddle outs, torch outs) as _forward and _backward compare them (one
# entry per forward and per backward of each layer); None when nobody reads them.
_CAPTURED: list | None = None


def _capture(outs_p: list[Out], outs_t: list[Out]) -> None:
    if _CAPTURED is not None:
        _CAPTURED.append((outs_p, outs_t))


def _start_capture(watch) -> None:
    global _CAPTURED
    _CAPTURED = [] if watch is not None else None


def _stop_capture() -> list:
    global _CAPTURED
    captured, _CAPTURED = _CAPTURED or [], None
    return captured


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

    def __init__(self) -> None:
        self.draws: dict[str, tuple[inp.Draw, tuple[list[str], list[str]]]] = {}
        self.first: str | None = None

    def saw(self, draw: inp.Draw, verdict: Verdict) -> None:
        captured = _stop_capture()
        if verdict.strict_exact is False:
            self.draws[str(draw)] = (draw, _digests(captured))
            self.first = self.first or str(draw)

    def pick(self, reported: Verdict) -> tuple[inp.Draw, tuple[list[str], list[str]]] | None:
        key = str(inp.Draw.parse(reported.draw)) if reported.draw else None
        return self.draws.get(key) or (self.draws.get(self.first) if self.first else None)


def _read_stability(verdict: Verdict, picked, prepared: "_Prepared", options, atol: float, rtol: float) -> None:
    """Run the picked inexact draw a second time (fresh inputs of the same draw) and compare each side's bits with
    the first run's: ``stable`` and ``nondeterministic`` on the verdict. A rerun that cannot be made leaves them
    None / "" (said in the message)."""
    if picked is None:
        return
    draw, (first_p, first_t) = picked
    verdict.inexact_draw = draw.to_dict()
    _start_capture(True)
    try:
        _run_draw(prepared, draw, options, atol, rtol, replay=True)
    except Exception as exc:  # the draw ran once; an engine gap in the second run is said, never blamed
        _stop_capture()
        verdict.message = f"{verdict.message}\nstability not read: {type(exc).__name__}: {str(exc)[:160]}".strip()
        return
    again_p, again_t = _digests(_stop_capture())
    changed = [side for side, first, again in ((Side.PADDLE, first_p, again_p), (Side.TORCH, first_t, again_t))
               if first != again]
    verdict.stable = not changed
    verdict.nondeterministic = "" if not changed else changed[0] if len(changed) == 1 else Side.BOTH


def _plan(prepared: "_Prepared", draw: inp.Draw | None, seed: int) -> list[inp.Draw]:
    """The draws to judge: the one replayed, else the spec's plan."""
    if draw is not None:
        return [draw]
    if prepared.spec.random:  # a statistical check of its own samples: edge values and seeds say nothing new
        return [inp.Draw(inp.TYPICAL, seed)]
    return inp.draw_plan(sum(t.numel for t in prepared.call.tensors()), seed)


def _set_exactness(verdict: Verdict, exact: tuple[bool | None, int | None]) -> None:
    """The exact rule's reading over every draw, on the verdict and on its strict layer (the top level reads it)."""
    verdict.exact, verdict.max_ulp = exact
    if verdict.strict is not None:
        verdict.strict["exact"], verdict.strict["max_ulp"] = exact


def _fails(verdict: Verdict) -> bool:
    """A later draw's verdict that blames Paddle (not: both sides reject its edge values)."""
    if verdict.status not in FAILING_DRAW:
        return False
    return not (verdict.status == Status.PADDLE_ERROR and BOTH_REJECT in verdict.message)


def _run_draw(prepared: "_Prepared", draw: inp.Draw, options: inp.EdgeOptions, atol: float, rtol: float,
              replay: bool, typical: dict | None = None) -> Verdict | None:
    """The verdict of one draw (None: an edge draw where no tensor takes edge values, unless replayed)."""
    if draw.kind == inp.EDGE and not replay and not inp.edge_draw_places(prepared.parsed, prepared.spec.domains,
                                                                          options):
        return None  # what materialising would find out, without drawing every tensor a second time
    with CLOCK.span(Phase.DRAWS):
        materialised, placed = inp.materialise_draw(prepared.parsed, prepared.spec.domains, draw, options, typical)
    if draw.kind == inp.EDGE and not placed and not replay:
        return None
    draw_key = json.dumps(draw.to_dict(), sort_keys=True)
    verdict = _run_layers(replace(prepared, materialised=materialised, draw_format=draw.format, draw_key=draw_key),
                          atol, rtol, draw.seed)
    verdict.draw = draw.to_dict()
    return verdict


def _run_layers(prepared: "_Prepared", atol: float, rtol: float, seed: int) -> Verdict:
    """One draw's verdict: the strict layer and, where the spec adapts, the adapted one."""
    spec = prepared.spec
    visible = spec.visible_adaptations
    if not visible:
        # a plain spec: one computation, the strict layer is the verdict itself
        return _judge(prepared, atol, rtol, seed)
    kinds = [a.kind for a in visible]
    if not spec.has_strict_reference:
        # no plain comparison exists (randomness, output invariants, a composed reference):
        # the adapted check is both layers, and the verdict says so
        verdict = _judge(prepared, atol, rtol, seed)
        verdict.adaptations = [a.to_dict() for a in visible]
        verdict.strict_separate = False
        return verdict
    # strict first, on pristine inputs (Torch shares the numpy arrays it is given)
    strict = _judge(_strict_sides(prepared), atol, rtol, seed)
    prepared.materialised = _copy_inputs(prepared.materialised)
    adapted = _judge(prepared, atol, rtol, seed)
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


def _judge(prep: _Prepared, atol: float, rtol: float, seed: int) -> Verdict:
    """One comparison layer: forward, then backward when the forward agrees."""
    torch_side = _TorchSide(prep)
    try:
        forward = _forward(prep, atol, rtol, torch_side)
        if isinstance(forward, Verdict):
            return forward
        return _backward(prep, forward, seed, torch_side)
    finally:
        torch_side.flush()


def _strict_sides(prep: _Prepared) -> _Prepared:
    """The same prepared config with the spec's strict reference(s) in place of the adapted."""
    spec = prep.spec
    return replace(
        prep,
        torch_side=_keyword_side(spec.strict_torch, prep.sig, Phase.TORCH) if spec.strict_torch else prep.torch_side,
        torch_layer="strict_torch" if spec.strict_torch else prep.torch_layer,
        paddle_side=(_keyword_side(spec.strict_paddle, prep.sig, Phase.PADDLE) if spec.strict_paddle
                     else prep.paddle_side),
    )


def _copy_inputs(materialised: dict) -> dict:
    return {k: _map_tensors(v, lambda t: inp.InputTensor(t.array.copy(), t.dtype)) for k, v in materialised.items()}


def _prepare(config: str, device: str) -> _Prepared | Verdict:
    """Parse, find the spec, bind to Paddle's signature (the inputs are drawn per draw).

    Returns a Verdict when the config cannot be run (syntax, no spec, no such Paddle API,
    arguments that do not bind).
    """
    try:
        call = parse_config(config)
    except ConfigSyntaxError as exc:
        return Verdict("unsupported", message=f"config syntax error: {exc}")
    spec = get_spec(call.api)
    if spec is None:
        return Verdict("unsupported", api=call.api, message=f"no spec for {call.api} in the engine registry")
    reason = _set_device(device)
    if reason:
        return Verdict("unsupported", api=call.api, message=reason)
    paddle_fn = None  # the spec supplies its own Paddle side
    if spec.paddle is None:
        try:
            paddle_fn = resolve_paddle(call.api)
        except AttributeError as exc:
            return Verdict("paddle_error", api=call.api, message=f"this Paddle build has no {call.api}: {exc}")
    try:
        sig = _signature(spec, call.api)
    except (TypeError, ValueError) as exc:
        return Verdict("unsupported", api=call.api,
                       message=f"cannot read Paddle's signature of {call.api} ({exc}); the spec needs signature=")
    if paddle_fn is None:
        paddle_side = _keyword_side(spec.paddle, sig, Phase.PADDLE)
    else:
        paddle_side = _signature_side(paddle_fn, sig)
    try:
        bound_args = _bind(sig, call)
    except TypeError as exc:
        return Verdict("unsupported", api=call.api,
                       message=f"arguments do not bind to Paddle's signature {call.api}{sig}: {exc}")
    parsed = {k: _plain(v) for k, v in bound_args.arguments.items()}
    return _Prepared(
        call=call, spec=spec, sig=sig, parsed=parsed,
        materialised={},
        want_grad=spec.backward and not spec.random and not _is_inplace(call.api),
        paddle_side=paddle_side, torch_side=_keyword_side(spec.torch, sig, Phase.TORCH),
        share_inputs=_shares_inputs(call.api, parsed), config=config,
    )


def _keyword_side(fn: Callable, sig: inspect.Signature, phase: Phase) -> Callable:
    """A reference or spec-supplied Paddle side: called with keyword arguments."""
    return lambda values: CLOCK.call(phase, fn, **_reference_kwargs(values, sig))


def _signature_side(fn: Callable, sig: inspect.Signature) -> Callable:
    """Paddle's own API: positional parameters passed positionally (builtins take no kwargs)."""
    return lambda values: CLOCK.call(Phase.PADDLE, _call_with_signature, fn, sig, values)


def _forward(prep: _Prepared, atol: float, rtol: float, torch_side: "_TorchSide") -> _Forward | Verdict:
    """Run both sides and compare their outputs.

    Returns the final Verdict when the forward step decides it (an error on either side, a
    random API's statistical check, a forward disagreement); otherwise the state the
    backward step needs.
    """
    spec, api = prep.spec, prep.call.api
    with CLOCK.span(Phase.CONVERT):
        p_values, p_leaves = _convert(prep.materialised, _to_paddle, prep.want_grad, prep.share_inputs)
    try:
        p_raw = prep.paddle_side(p_values)
        if spec.outputs is not None:
            p_raw = spec.outputs(p_raw)
    except Exception as exc:
        message = _short(exc)
        # Does the reference accept this config?  Both rejecting it is worth knowing.
        try:
            t_values, _ = _convert(prep.materialised, _to_torch, False)
            prep.torch_side(t_values)
        except Exception as texc:
            message += f"{BOTH_REJECT}{_short(texc)[:200]})"
        return Verdict("paddle_error", direction="forward", api=api, message=message)

    try:
        outs_t = torch_side.forward()
    except TorchRaised as exc:
        return Verdict("torch_error", direction="forward", api=api, message=exc.message)

    p_flat = _flatten_outputs(p_raw)
    with CLOCK.span(Phase.CONVERT):
        outs_p = [_paddle_out(v) for v in p_flat]
    _capture(outs_p, outs_t)
    f_atol, f_rtol = (0.0, 0.0) if prep.bitwise else _tolerance(spec, outs_t, prep.materialised, atol, rtol)

    if spec.random:
        if spec.check is None:
            return Verdict("unsupported", api=api, statistical=True,
                           message="random API without a check= function in its spec")
        ok, message = spec.check([o.array for o in outs_p] if len(outs_p) != 1 else outs_p[0].array,
                                 [o.array for o in outs_t] if len(outs_t) != 1 else outs_t[0].array,
                                 prep.parsed)
        return Verdict("pass" if ok else "accuracy_error", direction=None if ok else "forward",
                       statistical=True, api=api, message=message, atol=f_atol, rtol=f_rtol)

    with CLOCK.span(Phase.COMPARE):
        forward = compare_outputs(outs_p, outs_t, f_atol, f_rtol, "forward")
    forward.api, forward.atol, forward.rtol = api, f_atol, f_rtol
    if not forward.ok:
        return forward
    if not prep.want_grad or not p_leaves.tensors:
        forward.message = "forward agrees" + ("" if prep.want_grad else " (backward not compared for this API)")
        return forward
    return _Forward(forward, p_flat, p_leaves)


def _backward(prep: _Prepared, fwd: _Forward, seed: int, torch_side: "_TorchSide") -> Verdict:
    """Feed the same random output-gradient to both sides and compare the input gradients.

    The backward tolerance is the forward one (the output dtype's).
    """
    paddle, _ = frameworks()
    api, forward = prep.call.api, fwd.verdict
    p_leaves = fwd.p_leaves
    pairs, grad_notes = torch_side.grad_pairs(fwd.p_flat)
    note = f" [{'; '.join(grad_notes)}]" if grad_notes else ""
    if not pairs:
        forward.message = "forward agrees; backward not compared: no output differentiable on both sides" + note
        return forward
    if len(p_leaves.tensors) != torch_side.leaf_count:
        forward.message = "backward not compared: the sides have different differentiable inputs"
        return forward
    grads_np = [_random_grad(t.array.shape, t.dtype, seed, i, prep.draw_format) for i, _, t in pairs]
    try:
        g_p = [_as_dtype(_paddle_tensor(g, True), p.dtype) for g, (_, p, _) in zip(grads_np, pairs)]
        p_grads = CLOCK.call(Phase.PADDLE_BACKWARD, paddle.grad, [p for _, p, _ in pairs], p_leaves.tensors,
                             grad_outputs=g_p, allow_unused=True)
    except Exception as exc:
        return Verdict("paddle_error", direction="backward", api=api, message=_short(exc))
    try:
        gt_outs = torch_side.grads([i for i, _, _ in pairs], grads_np, seed)
    except TorchRaised as exc:
        return Verdict("torch_error", direction="backward", api=api, message=exc.message)

    with CLOCK.span(Phase.CONVERT):
        gp_outs = [_grad_out(gp, leaf, _paddle_out) for leaf, gp in zip(p_leaves.tensors, p_grads)]
    _capture(gp_outs, gt_outs)
    with CLOCK.span(Phase.COMPARE):
        backward = compare_outputs(gp_outs, gt_outs, forward.atol, forward.rtol, "backward",
                                   labels=[f"grad {label}" for label in p_leaves.labels])
    backward.api, backward.atol, backward.rtol = api, forward.atol, forward.rtol
    both = merge_exactness((forward.exact, forward.max_ulp), (backward.exact, backward.max_ulp))
    forward.exact, forward.max_ulp = backward.exact, backward.max_ulp = both
    if backward.ok:
        # report the forward figures for a full pass
        forward.message = (f"forward and backward agree (grads of {', '.join(p_leaves.labels)}; "
                           f"backward max abs diff {backward.max_abs:g})" + note)
        return forward
    backward.message += note
    return backward


class TorchRaised(Exception):
    """Torch's side raised (live, or as the cache recorded it): ``message`` is the verdict's torch_error text."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class _TorchSide:
    """Torch's half of one comparison layer: its forward outputs and the gradients the backward asks for, computed
    here or read from the Torch result cache (``apitester.torch_cache``, on in a release matrix's workers). A
    cached forward has no autograd graph: a backward the entry does not hold runs Torch's forward again first.

    Not cached: random APIs (their check reads fresh samples), configs whose inputs an API may write into (in-place,
    out=: a Torch run changes what the next layer reads), and a run that captures bits for the stability reading
    (a cached second run would always read "stable")."""

    def __init__(self, prep: _Prepared):
        self.prep = prep
        cache = torch_cache.active()
        usable = prep.share_inputs and not prep.spec.random and _CAPTURED is None and bool(prep.draw_key)
        self.cache = cache if usable else None
        self.key = self.cache.key(_cache_parts(prep)) if self.cache is not None else ""
        self.entry: torch_cache.Entry | None = None  # what the outputs are read from
        self.cached: torch_cache.Entry | None = None  # a hit being verified against a fresh run
        self.flat: list | None = None  # the live outputs (with their graph), when Torch ran here
        self.leaves: _Leaves | None = None
        self.dirty = False
        self.live_seconds = 0.0  # Torch's own time in this process (what a kept entry saves the next release)

    # ---------------------------------------------------------------- forward

    def forward(self) -> list[Out]:
        if self.cache is not None:
            with CLOCK.span(Phase.TORCH_CACHE):
                entry = self.cache.get(self.key)
            if entry is not None and not self.cache.should_verify():
                self.entry = entry
                if entry.error is not None:
                    raise TorchRaised(entry.error)
                return self.outs()
            self.cached = entry
        try:
            self._run_live()
        except TorchRaised as exc:
            self._settle(torch_cache.Entry([], [], [], [], error=exc.message, seconds=self.live_seconds))
            raise
        self._settle(self._live_entry())
        return self.outs()

    def _run_live(self) -> None:
        prep = self.prep
        with CLOCK.span(Phase.CONVERT):
            values, self.leaves = _convert(prep.materialised, _to_torch, prep.want_grad)
        started = time.perf_counter()
        try:
            raw = prep.torch_side(values)
            if prep.spec.outputs is not None:
                raw = prep.spec.outputs(raw)
        except Exception as exc:
            raise TorchRaised(_short(exc)) from exc
        finally:
            self.live_seconds += time.perf_counter() - started
        self.flat = _flatten_outputs(raw)

    def _live_entry(self) -> torch_cache.Entry:
        _, torch = frameworks()
        with CLOCK.span(Phase.CONVERT):
            outs = [_torch_out(v) for v in self.flat]
        return torch_cache.Entry(
            arrays=[o.array for o in outs], dtypes=[o.dtype for o in outs], tensors=[o.is_tensor for o in outs],
            differentiable=[isinstance(t, torch.Tensor) and t.requires_grad and dtype_name(t.dtype) in FLOATING
                            for t in self.flat],
            leaves=list(self.leaves.labels), leaf_shapes=[list(t.shape) for t in self.leaves.tensors],
            leaf_dtypes=[dtype_name(t.dtype) for t in self.leaves.tensors], seconds=self.live_seconds)

    def _settle(self, fresh: torch_cache.Entry) -> None:
        """The fresh result is the one used; against a hit being verified it is checked bit for bit."""
        same = False
        if self.cached is not None:
            same = _same_results(self.cached, fresh)
            self.cache.count(torch_cache.CacheEvent.VERIFIED if same else torch_cache.CacheEvent.MISMATCH)
            if not same:
                self.cache.drop(self.key)
            fresh.grads = dict(self.cached.grads) if same else {}
        self.entry = fresh
        self.dirty = self.cache is not None and not same

    def outs(self) -> list[Out]:
        e = self.entry
        return [Out(a, d, t) for a, d, t in zip(e.arrays, e.dtypes, e.tensors)]

    # ---------------------------------------------------------------- backward

    @property
    def leaf_count(self) -> int:
        return len(self.entry.leaves)

    def grad_pairs(self, p_flat: list) -> tuple[list, list[str]]:
        """(index, Paddle output, Torch output as an Out) of the outputs that carry gradients on both sides."""
        paddle, _ = frameworks()
        outs, pairs, notes = self.outs(), [], []
        for i, (p, t_grad) in enumerate(zip(p_flat, self.entry.differentiable)):
            p_grad = isinstance(p, paddle.Tensor) and not p.stop_gradient and dtype_name(p.dtype) in FLOATING
            if t_grad and p_grad:
                pairs.append((i, p, outs[i]))
            elif t_grad != p_grad:
                notes.append(f"output {i} is differentiable only in {'torch' if t_grad else 'paddle'}")
        return pairs, notes

    def grads(self, indices: list[int], grads_np: list[np.ndarray], seed: int) -> list[Out]:
        gkey = json.dumps([indices, seed, self.prep.draw_format])
        held = self.entry.grads.get(gkey)
        if held is not None and self.flat is None:  # a cached forward and its cached gradients
            if held.get("error") is not None:
                raise TorchRaised(held["error"])
            return [Out(a, d, True) for a, d in zip(held["arrays"], held["dtypes"])]
        if self.flat is None:  # the entry has no such backward: Torch's forward again, for its graph
            self._run_live()
        try:
            outs = self._live_grads(indices, grads_np)
        except TorchRaised as exc:
            self._keep_grads(gkey, {"arrays": [], "dtypes": [], "error": exc.message})
            raise
        self._keep_grads(gkey, {"arrays": [o.array for o in outs], "dtypes": [o.dtype for o in outs], "error": None})
        return outs

    def _live_grads(self, indices: list[int], grads_np: list[np.ndarray]) -> list[Out]:
        _, torch = frameworks()
        targets = [self.flat[i] for i in indices]
        try:
            # no copy, though the array is reused by the next draw of the same seed: torch accumulates into a
            # gradient in place only when nothing else references it (InputBuffer: use_count 1), and g_t does until
            # it returns
            g_t = [torch.from_numpy(g).to(t.dtype).to(t.device) for g, t in zip(grads_np, targets)]
            started = time.perf_counter()
            t_grads = CLOCK.call(Phase.TORCH_BACKWARD, torch.autograd.grad, targets, self.leaves.tensors,
                                 grad_outputs=g_t, allow_unused=True)
            self.entry.seconds += time.perf_counter() - started
        except Exception as exc:
            raise TorchRaised(_short(exc)) from exc
        with CLOCK.span(Phase.CONVERT):
            return [_grad_out(gt, leaf, _torch_out) for leaf, gt in zip(self.leaves.tensors, t_grads)]

    def _keep_grads(self, gkey: str, grads: dict) -> None:
        if self.cache is None:
            return
        old = self.cached.grads.get(gkey) if self.cached is not None else None
        if old is not None and not _same_grads(old, grads):
            self.cache.count(torch_cache.CacheEvent.MISMATCH)
            self.cache.drop(self.key)
        self.entry.grads[gkey] = grads
        self.dirty = self.dirty or old is None or not _same_grads(old, grads)

    def flush(self) -> None:
        if self.dirty and self.entry is not None:
            with CLOCK.span(Phase.TORCH_CACHE):
                self.cache.put(self.key, self.entry)
            self.dirty = False


def _cache_parts(prep: _Prepared) -> dict:
    """What Torch's result for this comparison depends on (apitester.torch_cache)."""
    _, torch = frameworks()
    return {"config": prep.config, "draw": prep.draw_key, "layer": prep.torch_layer, "grad": prep.want_grad,
            "device": _torch_device(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "numpy": np.__version__}


def _same_arrays(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if (x is None) != (y is None):
            return False
        if x is not None and (x.dtype != y.dtype or x.shape != y.shape or not _same_bits(x, y)):
            return False
    return True


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal bytes (NaN payloads and -0.0 included), without copying contiguous arrays."""
    if x.dtype.hasobject:
        return bool(np.array_equal(x, y))
    bx = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    by = np.ascontiguousarray(y).reshape(-1).view(np.uint8)
    return bool(np.array_equal(bx, by))


def _same_results(a: torch_cache.Entry, b: torch_cache.Entry) -> bool:
    return (a.error == b.error and a.dtypes == b.dtypes and a.differentiable == b.differentiable
            and a.leaves == b.leaves and _same_arrays(a.arrays, b.arrays))


def _same_grads(a: dict, b: dict) -> bool:
    return a.get("error") == b.get("error") and a["dtypes"] == b["dtypes"] and _same_arrays(a["arrays"], b["arrays"])


def _as_dtype(tensor, dtype):
    """The Paddle tensor in ``dtype`` (astype copies even when it is already that dtype)."""
    return tensor if tensor.dtype == dtype else tensor.astype(dtype)


def _grad_out(grad, leaf, to_out) -> Out:
    """An input's gradient as an Out; an unused input has a zero gradient (frameworks
    differ in returning None or zeros)."""
    if grad is not None:
        return to_out(grad)
    name = dtype_name(leaf.dtype)
    return Out(np.zeros(tuple(leaf.shape), dtype=inp.numpy_dtype(name)), name)

def _call_with_signature(fn, sig: inspect.Signature, values: dict):
    """Call fn with bound values: positional params positionally (builtins take no kwargs)."""
    args: list = []
    kwargs: dict = {}
    for name, param in sig.parameters.items():
        if name not in values:
            continue
        value = values[name]
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            args.append(value)
        elif param.kind == param.VAR_POSITIONAL:
            args.extend(value)
        elif param.kind == param.KEYWORD_ONLY:
            kwargs[name] = value
        elif param.kind == param.VAR_KEYWORD:
            kwargs.update(value)
    return fn(*args, **kwargs)


__all__ = ["run_config", "frameworks", "gpu_available", "resolve_paddle"]
