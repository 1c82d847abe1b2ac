"""The plain Torch call of a spec, derived generically, and the check that a silent mapping
(an ``argument_mapping`` / ``layout`` adaptation, which claims to change no result) gives the
plain call's result on real report configs.

The plain call of ``paddle[.Tensor|.nn.functional|.linalg|...].NAME`` is the Torch callable of the
same name (``torch.NAME``, ``torch.Tensor.NAME``, ``torch.nn.functional.NAME``, ``torch.linalg.NAME``,
...) called with Paddle's arguments under Torch's usual names (x -> input, y -> other, axis -> dim,
label -> target, dtype strings -> torch dtypes); None-valued arguments are left to Torch's defaults.
A spec that gives ``strict_torch`` names its plain call itself.  Where no same-named callable
accepts the arguments the plain call is not derivable and the config is not checked (the test
reports how many were).
"""
from __future__ import annotations

import dataclasses
import warnings

from apitester import inputs as inp
from apitester.compare import compare_outputs
from apitester.execute import _convert, _flatten_outputs, _prepare, _reference_kwargs, _to_torch, _torch_out
from apitester.specs.base import Spec, resolve_torch, torch_dtype

RENAMES = {"x": "input", "y": "other", "axis": "dim", "label": "target", "epsilon": "eps",
           "perm": "dims", "repeat_times": "dims", "num_or_sections": "split_size_or_sections"}
NAMESPACES = ("torch", "torch.Tensor", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft")


def _dims(axis):
    """Paddle's axis (an int, a list/tuple, a Tensor) as Torch's dim; Paddle's empty axis means every dim."""
    if hasattr(axis, "tolist"):
        axis = axis.tolist()
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) for a in axis) or None
    return axis


def _reduce(name):
    def plain(x, axis=None, keepdim=False, **_):
        dim = _dims(axis)
        fn = getattr(__import__("torch"), name)
        return fn(x, keepdim=keepdim) if dim is None else fn(x, dim=dim, keepdim=keepdim)
    return plain


def _count_nonzero(x, axis=None, keepdim=False, **_):
    dim = _dims(axis)
    out = __import__("torch").count_nonzero(x, dim=dim)
    if not keepdim:
        return out
    reduced = set(range(x.dim())) if dim is None else {d % x.dim() for d in ((dim,) if isinstance(dim, int) else dim)}
    return out.reshape([1 if i in reduced else n for i, n in enumerate(x.shape)])


def _tensordot(x, y, axes=2, **_):
    """Paddle's flat axes list contracts the same dims of x and y: Torch's dims=(list, list)."""
    def ints(value):
        if hasattr(value, "tolist"):
            return value.tolist()
        return [ints(v) for v in value] if isinstance(value, (list, tuple)) else value

    axes = ints(axes)
    if isinstance(axes, list) and axes and all(isinstance(a, int) for a in axes):
        axes = (axes, axes)
    elif isinstance(axes, list):
        axes = tuple(axes)
    return __import__("torch").tensordot(x, y, dims=axes)


# The plain call where the same-named Torch callable takes Paddle's arguments in another form
# (written in Torch's own terms, with no other mapping than the argument forms).
PLAIN_CALLS = {
    "paddle.all": _reduce("all"),
    "paddle.any": _reduce("any"),
    "paddle.count_nonzero": _count_nonzero,
    "paddle.sort": lambda x, axis=-1, descending=False, stable=False, **_: __import__("torch").sort(
        x, dim=axis, descending=descending, stable=stable).values,
    "paddle.tensordot": _tensordot,
}


class NotDerivable(Exception):
    """No same-named Torch callable takes this config's arguments."""


def _torch_value(key, value):
    if key == "dtype" and isinstance(value, str):
        return torch_dtype(value)
    return value


def _candidates(api: str):
    leaf = api.rsplit(".", 1)[-1]
    for space in NAMESPACES:
        try:
            yield resolve_torch(f"{space}.{leaf}")
        except (AttributeError, ModuleNotFoundError):
            continue


def plain_call(api: str, kwargs: dict):
    """The same-named Torch callable's result on Paddle's (renamed) arguments; NotDerivable if none takes them."""
    named = {RENAMES.get(k, k): _torch_value(k, v) for k, v in kwargs.items() if v is not None}
    positional = [_torch_value(k, v) for k, v in kwargs.items() if v is not None]
    errors = []
    for fn in _candidates(api):
        for args, kw in (((), named), (positional, {})):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return fn(*args, **kw)
            except (TypeError, RuntimeError, ValueError, IndexError) as exc:
                errors.append(f"{getattr(fn, '__name__', fn)}: {str(exc)[:80]}")
    raise NotDerivable("; ".join(errors) or f"no torch callable named {api.rsplit('.', 1)[-1]}")


def check_config(spec: Spec, config: str) -> str | None:
    """None when the spec's reference equals the plain Torch call on this config's inputs;
    otherwise what differs.  Raises NotDerivable when there is no plain call to compare with."""
    prep = _prepare(config, "cpu")
    if not hasattr(prep, "torch_side"):
        raise NotDerivable(f"config does not run: {prep.status} {prep.message[:80]}")
    # the spec's typical inputs (seed 0): the sample both references are run on
    materialised, _ = inp.materialise_draw(prep.parsed, prep.spec.domains, inp.Draw("typical", 0))
    prep = dataclasses.replace(prep, materialised=materialised)
    values, _ = _convert(prep.materialised, _to_torch, False)
    kwargs = _reference_kwargs(values, prep.sig)
    try:
        reference = prep.torch_side(values)
    except Exception as exc:  # the reference refuses the config: nothing to compare
        raise NotDerivable(f"the reference raises {type(exc).__name__}") from exc
    values, _ = _convert(prep.materialised, _to_torch, False)  # fresh tensors (in-place references)
    kwargs = _reference_kwargs(values, prep.sig)
    if spec.strict_torch is not None:
        plain = spec.strict_torch(**kwargs)
    elif spec.api in PLAIN_CALLS:
        plain = PLAIN_CALLS[spec.api](**kwargs)
    else:
        plain = plain_call(spec.api, kwargs)
    if spec.outputs is not None:
        reference, plain = spec.outputs(reference), spec.outputs(plain)
    ours = [_torch_out(v) for v in _flatten_outputs(reference)]
    theirs = [_torch_out(v) for v in _flatten_outputs(plain)]
    verdict = compare_outputs(ours, theirs, 1e-2, 1e-2, "forward")
    return None if verdict.ok else f"{verdict.status}: {verdict.message.splitlines()[0]}"
