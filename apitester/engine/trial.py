"""The engine's core: one config prepared once, as a ``Trial``, and everything that runs it.

``prepare(config, device)`` parses the config, finds its spec, binds it to Paddle's signature and returns a
``Trial`` (or raises ``NotRunnable`` carrying the verdict of a config that cannot be run: syntax, no spec, no such
Paddle API, arguments that do not bind). The Trial owns what every reader of a config needs, in one definition:

* the parsed call, the spec, the bound arguments and both sides (``paddle_side``, ``torch_side``; the strict layer's
  with ``strict()``);
* the edge options of the spec's draws (``edge_options``: NaN/inf, overflow, magnitudes, extra edges and ties);
* ``materialise(draw)``: the inputs of one draw; ``on(materialised, draw)``: the trial judging those inputs;
* each side's run (``run_side``), conversion, flattening, the output gradients and the backward;
* its clock (``Trial.clock``, a ``phases.PhaseClock``) and the output gradients drawn so far (``Trial.state``).

``apitester.engine.execute`` keeps the verdict policy (the draw plan, the layers, the stability reading); the diagnosis
(oracle, shrink, readings, ties, repro) runs the Trial's sides and reads only its public names.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import time
import zlib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from .. import inputs as inp
from . import torch_cache
from .compare import Out, Verdict, compare_outputs, merge_exactness
from ..config import Call, ConfigSyntaxError, TensorSpec, parse_config, walk
from .phases import Phase, PhaseClock
from ..specs import get_spec
from ..specs.base import Spec, dtype_name
from ..vocab import Device, Side, Status

FLOATING = ("float16", "bfloat16", "float32", "float64")


MESSAGE_LIMIT = 500


_frameworks: dict[str, Any] = {}


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

        paddle.set_device(str(Device.CPU))
        try:
            paddle.disable_static()
        except Exception:  # already dynamic
            pass
        _frameworks["paddle"] = paddle
        _frameworks["torch"] = torch
        _frameworks["device"] = Device.CPU
    return _frameworks["paddle"], _frameworks["torch"]


def gpu_available() -> bool:
    paddle, _ = frameworks()
    return bool(paddle.is_compiled_with_cuda())


def set_device(device: Device | str) -> str | None:
    """Switch both frameworks to device; returns a reason string when impossible."""
    paddle, torch = frameworks()
    if device not in tuple(Device):
        return f"unknown device {device!r} (use {' or '.join(repr(str(d)) for d in Device)})"
    device = Device(device)
    if device == Device.GPU and not paddle.is_compiled_with_cuda():
        return ("GPU lane needs a CUDA build of Paddle; the installed Paddle "
                f"{paddle.__version__} is CPU-only, so this config waits for a GPU worker")
    if _frameworks["device"] != device:
        paddle.set_device(str(device))
        _frameworks["device"] = device
    return None


# torch's names of the devices (torch.device types)
TORCH_CPU, TORCH_CUDA = str(Device.CPU), "cuda"  # Paddle's and torch's name of the CPU are one


def torch_device() -> str:
    _, torch = frameworks()
    if _frameworks["device"] == Device.GPU and torch.cuda.is_available():
        return TORCH_CUDA
    return TORCH_CPU


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
def signature(spec: Spec, api: str) -> inspect.Signature:
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


def bind(sig: inspect.Signature, call: Call) -> inspect.BoundArguments:
    bound = sig.bind(*call.args, **call.kwargs)
    bound.apply_defaults()
    return bound


def map_tensors(value, leaf):
    """``leaf`` applied to every InputTensor inside lists, tuples and **kwargs dicts."""
    return walk(value, lambda item, _path: leaf(item) if isinstance(item, inp.InputTensor) else item,
                into=(list, tuple, dict))


def is_inplace(api: str) -> bool:
    """x.add_(...), paddle.nn.functional.relu_, Tensor.__setitem__, __iadd__ ...: the input
    is overwritten, so it cannot be an autograd leaf on either side."""
    last = api.rsplit(".", 1)[-1]
    if last.startswith("__"):
        return last == "__setitem__" or (last.startswith("__i") and last not in ("__invert__", "__index__", "__int__"))
    return last.endswith("_")


def reference_kwargs(values: dict, sig: inspect.Signature) -> dict:
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


def plain_arguments(value):
    """Parsed non-tensor values as plain Python (dtype constructors -> name strings)."""
    return walk(value, lambda item, _path: item if isinstance(item, TensorSpec) else inp.plain_value(item))


class Leaves:
    """Collects the differentiable leaf tensors of one side, in a fixed order. ``share``: Paddle may read big inputs
    in place (``paddle_tensor``), as torch always does."""

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


def paddle_tensor(array: np.ndarray, share: bool):
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


def shares_inputs(api: str, parsed: dict) -> bool:
    """Whether Paddle may read this config's inputs in place: not when the API writes into an argument (in-place,
    or a tensor passed as out=/output=), which would change what the Torch side reads -- and with out= make both
    sides' outputs one buffer, a comparison that always agrees."""
    if is_inplace(api):
        return False
    return not any(isinstance(parsed.get(name), TensorSpec) for name in ("out", "output"))


def to_paddle(value: inp.InputTensor, leaves: Leaves, label: str):
    paddle, _ = frameworks()
    tensor = paddle_tensor(value.array, leaves.share)
    if value.dtype == "bfloat16":
        tensor = tensor.astype("bfloat16")
    if leaves.grad and value.dtype in FLOATING:
        tensor.stop_gradient = False
        leaves.tensors.append(tensor)
        leaves.labels.append(label)
    else:
        tensor.stop_gradient = True
    return tensor


def to_torch(value: inp.InputTensor, leaves: Leaves, label: str):
    _, torch = frameworks()
    # from_numpy shares the array; Paddle already took its own copy in to_tensor
    tensor = torch.from_numpy(value.array)
    if value.dtype == "bfloat16":
        tensor = tensor.to(torch.bfloat16)
    dev = torch_device()
    if dev != TORCH_CPU:
        tensor = tensor.to(dev)
    if leaves.grad and value.dtype in FLOATING:
        tensor = tensor.detach().requires_grad_(True)
        leaves.tensors.append(tensor)
        leaves.labels.append(label)
    return tensor


def convert(materialised: dict, make, grad: bool, share: bool = False) -> tuple[dict, Leaves]:
    leaves = Leaves(grad, share)
    out = {}
    for key, value in materialised.items():
        counter = [0]

        def leaf(t, key=key, counter=counter):
            label = key if counter[0] == 0 else f"{key}[{counter[0]}]"
            counter[0] += 1
            return make(t, leaves, label)

        out[key] = map_tensors(value, leaf)
    return out, leaves


def flatten_outputs(value) -> list:
    if isinstance(value, (list, tuple)):
        flat = []
        for item in value:
            flat.extend(flatten_outputs(item))
        return flat
    return [value]


def paddle_out(value) -> Out:
    paddle, _ = frameworks()
    if value is None:
        return Out(None)
    if isinstance(value, paddle.Tensor):
        name = dtype_name(value.dtype)
        t = value.detach() if hasattr(value, "detach") else value
        if name == "bfloat16":
            t = t.astype("float32")
        return Out(paddle_array(t), name, True)
    return plain_out(value)


def paddle_array(t) -> np.ndarray:
    """A CPU tensor's values without a copy: numpy reads Paddle's memory through DLPack (the array holds the
    tensor's allocation), as torch's .numpy() already does. Tensor.numpy() copied every output -- on a broadcast
    maximum, a 30-million-element copy per draw. A tensor DLPack can't hand over (another device, a dtype numpy
    has no DLPack name for) is copied as before; the values are the same either way."""
    try:
        return np.from_dlpack(t)
    except (BufferError, TypeError, RuntimeError, ValueError, AttributeError):
        return np.asarray(t.numpy())


def torch_out(value) -> Out:
    _, torch = frameworks()
    if value is None:
        return Out(None)
    if isinstance(value, torch.Tensor):
        name = dtype_name(value.dtype)
        t = value.detach()
        if name == "bfloat16":
            t = t.float()
        if t.device.type != TORCH_CPU:
            t = t.cpu()
        if t.is_conj():
            t = t.resolve_conj()
        if not t.is_contiguous():
            # an expanded gradient (sum's: one value with stride 0) is made whole by torch's copy; numpy would
            # copy it element by element at every comparison (0.2 s for 38 million float16)
            t = t.contiguous()
        return Out(t.numpy(), name, True)
    return plain_out(value)


def plain_out(value) -> Out:
    """A non-tensor output: numbers as 0-d arrays; dtype objects as their name; other
    objects compared by their string form."""
    paddle, torch = frameworks()
    if isinstance(value, (paddle.dtype, torch.dtype, np.dtype)):
        return Out(np.asarray(dtype_name(value)), None, False)
    if isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
        return Out(np.asarray(value), None, False)
    return Out(np.asarray(str(value)), None, False)


_HINT = re.compile(r"\s*\[Hint:.*?\]\s*|\s*\(at /[^)]*\)")


def _real_error(exc: BaseException) -> BaseException:
    # "SystemError: <built-in ...> returned a result with an exception set": the real error is the chained one.
    while isinstance(exc, SystemError) and (exc.__cause__ or exc.__context__):
        exc = exc.__cause__ or exc.__context__
    return exc


def error_type(exc: BaseException) -> str:
    """The type name ``short_error`` starts its line with (a verdict's ``facts["error_type"]``)."""
    return type(_real_error(exc)).__name__


def raised_facts(side: Side, exc: BaseException | None) -> dict:
    facts = {"raised": str(side)}
    if exc is not None:
        facts["error_type"] = error_type(exc)
    return facts


def short_error(exc: BaseException) -> str:
    """One clear line from a Paddle/Torch exception (C++ stacks and hints dropped)."""
    exc = _real_error(exc)
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


def tolerance(spec: Spec, outs: list[Out], materialised: dict, atol: float, rtol: float):
    names = [o.dtype for o in outs if o.dtype in (*FLOATING, "complex64", "complex128")]
    if not names:
        for value in materialised.values():
            for t in flatten_outputs(value):
                if isinstance(t, inp.InputTensor):
                    names.append(t.dtype)
    for name in names:
        if name in spec.tolerances:
            return spec.tolerances[name]
    return atol, rtol


def grad_outputs(outs_p, outs_t):
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


def output_gradient(shape, dtype: str, seed: int, index: int, fmt: int, cache: dict | None = None) -> np.ndarray:
    """Output ``index``'s gradient: uniform in [-1, 1), from its own generator. Drawn once per trial (``cache``: the
    trial's) and key (the typical and the edge draw share a seed, the strict and the adapted layer their outputs); the
    array is the same every time it is asked for and nobody writes to it: both sides read the array itself
    (paddle_tensor; Paddle's backward does not write to its output gradients, and torch's autograd does not write
    to a gradient the caller still holds). ``fmt``: the draw's format (inputs.DRAW_FORMATS)."""
    key = (tuple(shape), dtype, seed, index, fmt)
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        return cached
    rng = np.random.default_rng([seed, zlib.crc32(b"grad_output"), index])
    arr = inp.uniform_array(rng, -1.0, 1.0, shape, inp.numpy_dtype(dtype), fmt=fmt)
    if dtype == "bfloat16":
        arr = inp.round_to_bfloat16(arr)
    if cache is not None:
        cache[key] = arr
    return arr


class NotRunnable(Exception):
    """``prepare`` could not make a Trial of the config: ``verdict`` says why (unsupported, paddle_error)."""

    def __init__(self, verdict: Verdict):
        super().__init__(verdict.message)
        self.verdict = verdict


@dataclass
class TrialState:
    """What one trial accumulates while it runs, shared by every view of it (``strict()``, ``on(...)``): its clock,
    the output gradients drawn so far, and the outputs captured for the stability reading."""

    clock: PhaseClock = field(default_factory=PhaseClock)
    # The output gradients drawn, by (shape, dtype, seed, index, format): the typical and the edge draw of one seed,
    # and the strict and the adapted layer, share them. They go with the trial (a worker runs many configs, and one
    # big output's gradient should not outlive its config).
    grads: dict = field(default_factory=dict)
    # The Out lists of the draw being run, each (paddle outs, torch outs) as run_forward and run_backward compare
    # them (one entry per forward and per backward of each layer); None when nobody reads them.
    captured: list | None = None

    def capture(self, outs_p: list[Out], outs_t: list[Out]) -> None:
        if self.captured is not None:
            self.captured.append((outs_p, outs_t))

    def start_capture(self, on: bool) -> None:
        self.captured = [] if on else None

    def stop_capture(self) -> list:
        captured, self.captured = self.captured or [], None
        return captured


@dataclass
class Trial:
    """One config, parsed and bound once: its call, spec, sides and edge options, and (``on``) the inputs of the
    draw being judged."""

    call: Call
    spec: Spec
    sig: inspect.Signature
    parsed: dict
    materialised: dict
    want_grad: bool
    paddle_side: Callable  # values (by Paddle parameter name) -> Paddle's raw output
    torch_side: Callable   # values -> the reference's raw output
    share_inputs: bool = False  # Paddle may read big inputs in place (shares_inputs)
    bitwise: bool = False  # judge with atol = rtol = 0, the spec's tolerances set aside (run_config)
    draw_format: int = inp.DRAW_FORMAT  # the format of the draw being judged (its output gradients follow it)
    config: str = ""  # the config string (the Torch result cache's key)
    draw_key: str = ""  # the draw being judged, as its dict in JSON (the Torch result cache's key)
    torch_layer: str = "torch"  # which of the spec's Torch sides this is: "torch" or "strict_torch"
    device: Device = Device.CPU
    state: TrialState = field(default_factory=TrialState)

    @property
    def api(self) -> str:
        return self.call.api

    @property
    def clock(self) -> PhaseClock:
        return self.state.clock

    @property
    def edge_options(self) -> inp.EdgeOptions:
        """The spec's edge options: the one definition every draw of this config is made with (verdict, readings,
        shrink, oracle alike)."""
        spec = self.spec
        return inp.EdgeOptions(nan_inf=spec.nan_inf, overflow=spec.overflow, magnitudes=spec.magnitudes,
                               extra=dict(spec.edges),
                               ties={spec.ties.param: spec.ties.values} if spec.ties else {})

    @property
    def elements(self) -> int:
        return sum(t.numel for t in self.call.tensors())

    def edge_draw_places(self) -> bool:
        """Whether an edge draw of this config places any edge value (without drawing the tensors)."""
        return inp.edge_draw_places(self.parsed, self.spec.domains, self.edge_options)

    def materialise(self, draw: inp.Draw, typical: dict | None = None) -> tuple[dict, bool]:
        """The inputs of one draw, and whether an edge draw placed any edge value (``inputs.materialise_draw``)."""
        with self.clock.span(Phase.DRAWS):
            return inp.materialise_draw(self.parsed, self.spec.domains, draw, self.edge_options, typical)

    def inputs_of(self, draw: inp.Draw) -> dict:
        return self.materialise(draw)[0]

    def on(self, materialised: dict, draw: inp.Draw) -> "Trial":
        """This trial judging ``materialised``, the inputs of ``draw``."""
        return replace(self, materialised=materialised, draw_format=draw.format,
                       draw_key=json.dumps(draw.to_dict(), sort_keys=True))

    def strict(self) -> "Trial":
        """The same trial with the spec's strict reference(s) in place of the adapted."""
        spec, clock = self.spec, self.clock
        return replace(
            self,
            torch_side=(keyword_side(spec.strict_torch, self.sig, Phase.TORCH, clock) if spec.strict_torch
                        else self.torch_side),
            torch_layer="strict_torch" if spec.strict_torch else self.torch_layer,
            paddle_side=(keyword_side(spec.strict_paddle, self.sig, Phase.PADDLE, clock) if spec.strict_paddle
                         else self.paddle_side),
        )

    def strict_layer(self) -> "Trial":
        """The layer "fix verified" reads: the strict sides where the spec has a plain comparison, else itself."""
        return self.strict() if self.spec.has_strict_reference else self

    def output_gradient(self, shape, dtype: str, seed: int, index: int, fmt: int) -> np.ndarray:
        return output_gradient(shape, dtype, seed, index, fmt, cache=self.state.grads)

    def with_bitwise(self) -> "Trial":
        return replace(self, bitwise=True)


@dataclass
class Forward:
    """Step 2's result when the forward outputs agree: what the backward step needs."""

    verdict: Verdict
    p_flat: list
    p_leaves: Leaves


def judge(prep: Trial, atol: float, rtol: float, seed: int) -> Verdict:
    """One comparison layer: forward, then backward when the forward agrees."""
    torch_side = TorchSide(prep)
    try:
        forward = run_forward(prep, atol, rtol, torch_side)
        if isinstance(forward, Verdict):
            return forward
        return run_backward(prep, forward, seed, torch_side)
    finally:
        torch_side.flush()


def copy_inputs(materialised: dict) -> dict:
    return {k: map_tensors(v, lambda t: inp.InputTensor(t.array.copy(), t.dtype)) for k, v in materialised.items()}


def prepare(config: str, device: Device | str = Device.CPU, clock: PhaseClock | None = None) -> Trial:
    """Parse, find the spec, bind to Paddle's signature (the inputs are drawn per draw).

    Raises ``NotRunnable`` (its ``verdict`` says why) when the config cannot be run: syntax, no spec, no such Paddle
    API, arguments that do not bind. ``clock``: where the trial's phases are counted (a new one by default)."""
    state = TrialState(clock=clock if clock is not None else PhaseClock())
    try:
        call = parse_config(config)
    except ConfigSyntaxError as exc:
        raise NotRunnable(Verdict(Status.UNSUPPORTED, message=f"config syntax error: {exc}")) from None
    spec = get_spec(call.api)
    if spec is None:
        raise NotRunnable(Verdict(Status.UNSUPPORTED, api=call.api,
                                  message=f"no spec for {call.api} in the engine registry"))
    reason = set_device(device)
    if reason:
        raise NotRunnable(Verdict(Status.UNSUPPORTED, api=call.api, message=reason))
    paddle_fn = None if spec.paddle is not None else _paddle_api(call.api)  # None: the spec supplies its own side
    sig = _signature_or_raise(spec, call.api)
    paddle_side = (keyword_side(spec.paddle, sig, Phase.PADDLE, state.clock) if paddle_fn is None
                   else signature_side(paddle_fn, sig, state.clock))
    try:
        bound_args = bind(sig, call)
    except TypeError as exc:
        raise NotRunnable(Verdict(Status.UNSUPPORTED, api=call.api,
                                  message=f"arguments do not bind to Paddle's signature {call.api}{sig}: {exc}"))
    parsed = {k: plain_arguments(v) for k, v in bound_args.arguments.items()}
    return Trial(
        call=call, spec=spec, sig=sig, parsed=parsed,
        materialised={},
        want_grad=spec.backward and not spec.random and not is_inplace(call.api),
        paddle_side=paddle_side, torch_side=keyword_side(spec.torch, sig, Phase.TORCH, state.clock),
        share_inputs=shares_inputs(call.api, parsed), config=config, device=Device(device), state=state,
    )


def _paddle_api(api: str) -> Callable:
    try:
        return resolve_paddle(api)
    except AttributeError as exc:
        raise NotRunnable(Verdict(Status.PADDLE_ERROR, api=api,
                                  message=f"this Paddle build has no {api}: {exc}")) from None


def _signature_or_raise(spec: Spec, api: str) -> inspect.Signature:
    try:
        return signature(spec, api)
    except (TypeError, ValueError) as exc:
        raise NotRunnable(Verdict(Status.UNSUPPORTED, api=api, message=f"cannot read Paddle's signature of {api} "
                                                                       f"({exc}); the spec needs signature=")) from None


def keyword_side(fn: Callable, sig: inspect.Signature, phase: Phase, clock: PhaseClock) -> Callable:
    """A reference or spec-supplied Paddle side: called with keyword arguments."""
    return lambda values: clock.call(phase, fn, **reference_kwargs(values, sig))


def signature_side(fn: Callable, sig: inspect.Signature, clock: PhaseClock) -> Callable:
    """Paddle's own API: positional parameters passed positionally (builtins take no kwargs)."""
    return lambda values: clock.call(Phase.PADDLE, _call_with_signature, fn, sig, values)


def run_forward(prep: Trial, atol: float, rtol: float, torch_side: "TorchSide") -> Forward | Verdict:
    """Run both sides and compare their outputs.

    Returns the final Verdict when the forward step decides it (an error on either side, a
    random API's statistical check, a forward disagreement); otherwise the state the
    backward step needs.
    """
    spec, api = prep.spec, prep.call.api
    with prep.clock.span(Phase.CONVERT):
        p_values, p_leaves = convert(prep.materialised, to_paddle, prep.want_grad, prep.share_inputs)
    try:
        p_raw = prep.paddle_side(p_values)
        if spec.outputs is not None:
            p_raw = spec.outputs(p_raw)
    except Exception as exc:
        message, facts = short_error(exc), raised_facts(Side.PADDLE, exc)
        # Does the reference accept this config?  Both rejecting it is worth knowing.
        try:
            t_values, _ = convert(prep.materialised, to_torch, False)
            prep.torch_side(t_values)
        except Exception as texc:
            message += f"{BOTH_REJECT}{short_error(texc)[:200]})"
            facts["both_reject"] = True
        return Verdict(Status.PADDLE_ERROR, direction="forward", api=api, message=message, facts=facts)

    try:
        outs_t = torch_side.forward()
    except TorchRaised as exc:
        return Verdict(Status.TORCH_ERROR, direction="forward", api=api, message=exc.message, facts=exc.facts)

    p_flat = flatten_outputs(p_raw)
    with prep.clock.span(Phase.CONVERT):
        outs_p = [paddle_out(v) for v in p_flat]
    prep.state.capture(outs_p, outs_t)
    f_atol, f_rtol = (0.0, 0.0) if prep.bitwise else tolerance(spec, outs_t, prep.materialised, atol, rtol)

    if spec.random:
        if spec.check is None:
            return Verdict(Status.UNSUPPORTED, api=api, statistical=True,
                           message="random API without a check= function in its spec")
        ok, message = spec.check([o.array for o in outs_p] if len(outs_p) != 1 else outs_p[0].array,
                                 [o.array for o in outs_t] if len(outs_t) != 1 else outs_t[0].array,
                                 prep.parsed)
        return Verdict(Status.PASS if ok else "accuracy_error", direction=None if ok else "forward",
                       statistical=True, api=api, message=message, atol=f_atol, rtol=f_rtol)

    with prep.clock.span(Phase.COMPARE):
        forward = compare_outputs(outs_p, outs_t, f_atol, f_rtol, "forward", clock=prep.clock)
    forward.api, forward.atol, forward.rtol = api, f_atol, f_rtol
    if not forward.ok:
        return forward
    if not prep.want_grad or not p_leaves.tensors:
        forward.message = "forward agrees" + ("" if prep.want_grad else " (backward not compared for this API)")
        return forward
    return Forward(forward, p_flat, p_leaves)


def run_backward(prep: Trial, fwd: Forward, seed: int, torch_side: "TorchSide") -> Verdict:
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
    grads_np = [prep.output_gradient(t.array.shape, t.dtype, seed, i, prep.draw_format) for i, _, t in pairs]
    try:
        g_p = [_as_dtype(paddle_tensor(g, True), p.dtype) for g, (_, p, _) in zip(grads_np, pairs)]
        p_grads = prep.clock.call(Phase.PADDLE_BACKWARD, paddle.grad, [p for _, p, _ in pairs], p_leaves.tensors,
                             grad_outputs=g_p, allow_unused=True)
    except Exception as exc:
        return Verdict(Status.PADDLE_ERROR, direction="backward", api=api, message=short_error(exc),
                       facts=raised_facts(Side.PADDLE, exc))
    try:
        gt_outs = torch_side.grads([i for i, _, _ in pairs], grads_np, seed)
    except TorchRaised as exc:
        return Verdict(Status.TORCH_ERROR, direction="backward", api=api, message=exc.message, facts=exc.facts)

    with prep.clock.span(Phase.CONVERT):
        gp_outs = [grad_out(gp, leaf, paddle_out) for leaf, gp in zip(p_leaves.tensors, p_grads)]
    prep.state.capture(gp_outs, gt_outs)
    with prep.clock.span(Phase.COMPARE):
        backward = compare_outputs(gp_outs, gt_outs, forward.atol, forward.rtol, "backward",
                                   labels=[f"grad {label}" for label in p_leaves.labels], clock=prep.clock)
    backward.api, backward.atol, backward.rtol = api, forward.atol, forward.rtol
    if "shapes" in backward.facts:  # a gradient must have its input's shape: the fact that says whose does not
        shapes = {f"grad {label}": list(t.shape) for label, t in zip(p_leaves.labels, p_leaves.tensors)}
        backward.facts["input_shape"] = shapes.get(backward.output)
    both = merge_exactness((forward.exact, forward.max_ulp), (backward.exact, backward.max_ulp))
    forward.exact, forward.max_ulp = backward.exact, backward.max_ulp = both
    forward.inexact_outputs = backward.inexact_outputs = [*forward.inexact_outputs, *backward.inexact_outputs]
    if backward.ok:
        # report the forward figures for a full pass
        forward.message = (f"forward and backward agree (grads of {', '.join(p_leaves.labels)}; "
                           f"backward max abs diff {backward.max_abs:g})" + note)
        return forward
    backward.message += note
    return backward


class TorchRaised(Exception):
    """Torch's side raised (live, or as the cache recorded it): ``message`` is the verdict's torch_error text,
    ``facts`` its facts (the exception's type when Torch raised here; a cached error keeps its text only)."""

    def __init__(self, message: str, cause: BaseException | None = None):
        super().__init__(message)
        self.message = message
        self.facts = raised_facts(Side.TORCH, cause)


class TorchSide:
    """Torch's half of one comparison layer: its forward outputs and the gradients the backward asks for, computed
    here or read from the Torch result cache (``apitester.engine.torch_cache``, on in a release matrix's workers). A
    cached forward has no autograd graph: a backward the entry does not hold runs Torch's forward again first.

    Not cached: random APIs (their check reads fresh samples), configs whose inputs an API may write into (in-place,
    out=: a Torch run changes what the next layer reads), and a run that captures bits for the stability reading
    (a cached second run would always read "stable")."""

    def __init__(self, prep: Trial):
        self.prep = prep
        cache = torch_cache.active()
        usable = prep.share_inputs and not prep.spec.random and prep.state.captured is None and bool(prep.draw_key)
        self.cache = cache if usable else None
        self.key = self.cache.key(cache_parts(prep)) if self.cache is not None else ""
        self.entry: torch_cache.Entry | None = None  # what the outputs are read from
        self.cached: torch_cache.Entry | None = None  # a hit being verified against a fresh run
        self.flat: list | None = None  # the live outputs (with their graph), when Torch ran here
        self.leaves: Leaves | None = None
        self.dirty = False
        self.live_seconds = 0.0  # Torch's own time in this process (what a kept entry saves the next release)

    # ---------------------------------------------------------------- forward

    def forward(self) -> list[Out]:
        if self.cache is not None:
            with self.prep.clock.span(Phase.TORCH_CACHE):
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
        with prep.clock.span(Phase.CONVERT):
            values, self.leaves = convert(prep.materialised, to_torch, prep.want_grad)
        started = time.perf_counter()
        try:
            raw = prep.torch_side(values)
            if prep.spec.outputs is not None:
                raw = prep.spec.outputs(raw)
        except Exception as exc:
            raise TorchRaised(short_error(exc), exc) from exc
        finally:
            self.live_seconds += time.perf_counter() - started
        self.flat = flatten_outputs(raw)

    def _live_entry(self) -> torch_cache.Entry:
        _, torch = frameworks()
        with self.prep.clock.span(Phase.CONVERT):
            outs = [torch_out(v) for v in self.flat]
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
            t_grads = self.prep.clock.call(Phase.TORCH_BACKWARD, torch.autograd.grad, targets, self.leaves.tensors,
                                 grad_outputs=g_t, allow_unused=True)
            self.entry.seconds += time.perf_counter() - started
        except Exception as exc:
            raise TorchRaised(short_error(exc), exc) from exc
        with self.prep.clock.span(Phase.CONVERT):
            return [grad_out(gt, leaf, torch_out) for leaf, gt in zip(self.leaves.tensors, t_grads)]

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
            with self.prep.clock.span(Phase.TORCH_CACHE):
                self.cache.put(self.key, self.entry)
            self.dirty = False


def cache_parts(prep: Trial) -> dict:
    """What Torch's result for this comparison depends on (apitester.engine.torch_cache)."""
    _, torch = frameworks()
    return {"config": prep.config, "draw": prep.draw_key, "layer": prep.torch_layer, "grad": prep.want_grad,
            "device": torch_device(), "torch": torch.__version__, "threads": torch.get_num_threads(),
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


def grad_out(grad, leaf, to_out) -> Out:
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
