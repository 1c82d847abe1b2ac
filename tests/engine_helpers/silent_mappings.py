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
from apitester.engine.compare import compare_outputs
from apitester.engine.trial import NotRunnable, convert as _convert, flatten_outputs as _flatten_outputs, prepare as _prepare
from apitester.engine.trial import reference_kwargs as _reference_kwargs, to_torch as _to_torch, torch_out as _torch_out
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


def _torch():
    return __import__("torch")


def _flat_or_dim(x, axis):
    """Paddle's axis=None scans the flattened tensor: Torch's call on x.reshape(-1), dim 0."""
    return (x.reshape(-1), 0) if axis is None else (x, axis)


def _cumsum(x, axis=None, dtype=None, **_):
    x, dim = _flat_or_dim(x, axis)
    return _torch().cumsum(x, dim=dim, dtype=torch_dtype(dtype) if dtype else None)


def _cum_extreme(name):
    def plain(x, axis=None, dtype="int64", **_):
        x, dim = _flat_or_dim(x, axis)
        values, indices = getattr(_torch(), name)(x, dim=dim)
        return values, indices.to(torch_dtype(dtype))  # dtype= is Paddle's indices dtype
    return plain


def _reduce_with(name, **fixed):
    """torch.NAME(x, dim=..., keepdim=...) with Paddle's axis forms (None, int, list)."""
    def plain(x, axis=None, keepdim=False, dtype=None, **kw):
        dim = _dims(axis)
        extra = {k: kw[k] for k in fixed if k in kw}
        extra = {fixed[k]: v for k, v in extra.items()}
        if dtype is not None:
            extra["dtype"] = torch_dtype(dtype)
        fn = getattr(_torch(), name)
        if dim is None and not keepdim:
            return fn(x, **extra)
        return fn(x, dim=tuple(range(x.dim())) if dim is None else dim, keepdim=keepdim, **extra)
    return plain


def _median(x, axis=None, keepdim=False, **_):
    """torch.median: the lower of the two middle values (Paddle's mode='min')."""
    torch = _torch()
    if axis is None:
        out = torch.median(x)
        return out.reshape([1] * x.dim()) if keepdim else out
    return torch.median(x, dim=axis, keepdim=keepdim).values


def _trace(x, offset=0, axis1=0, axis2=1, **_):
    """torch.trace is 2-D only without an offset: the same sum as torch.diagonal(...).sum(-1)."""
    return _torch().diagonal(x, offset=offset, dim1=axis1, dim2=axis2).sum(-1)


def _diag(x, offset=0, padding_value=0, **_):
    if padding_value not in (0, None):
        raise NotDerivable("padding_value has no torch.diag counterpart")
    return _torch().diag(x, diagonal=offset)


def _trapezoid_with(name):
    def plain(y, x=None, dx=None, axis=-1, **_):
        fn = getattr(_torch(), name)
        return fn(y, x, dim=axis) if x is not None else fn(y, dx=1.0 if dx is None else dx, dim=axis)
    return plain


def _bitwise_right_shift(x, y, is_arithmetic=True, **_):
    if not is_arithmetic:
        raise NotDerivable("a logical shift (is_arithmetic=False) has no torch.bitwise_right_shift counterpart")
    return _torch().bitwise_right_shift(x, y)


def _matmul(x, y, transpose_x=False, transpose_y=False, **_):
    # Paddle's transpose_* swap the last two dims of an operand with two or more
    x = x.mT if transpose_x and x.dim() >= 2 else x
    y = y.mT if transpose_y and y.dim() >= 2 else y
    return _torch().matmul(x, y)


def _channels_first(data_format):
    if data_format not in (None, "NCL", "NCHW", "NCDHW"):
        raise NotDerivable(f"data_format={data_format}: Torch's pools and convolutions are channels-first")


def _padding(padding, dims):
    """Paddle's padding as Torch's (an int or one per spatial dim); Paddle's [before, after] pairs
    (flat or nested) only where each pair is symmetric; "SAME"/"VALID" have no form of the same call."""
    if isinstance(padding, str):
        raise NotDerivable(f"padding={padding!r}: no Torch form of the same call")
    if isinstance(padding, (list, tuple)):
        flat = [q for p in padding for q in (p if isinstance(p, (list, tuple)) else [p])]
        if any(isinstance(p, (list, tuple)) for p in padding):
            flat = flat[-2 * dims:]  # nested pairs include the batch and channel dims
        if len(flat) == 2 * dims:
            pairs = list(zip(flat[0::2], flat[1::2]))
            if any(a != b for a, b in pairs):
                raise NotDerivable(f"padding={padding!r}: asymmetric, no Torch form of the same call")
            return [a for a, _ in pairs]
        return flat
    return padding


def _adaptive_avg_pool(dims):
    def plain(x, output_size, data_format=None, **_):
        _channels_first(data_format)
        return getattr(_torch().nn.functional, f"adaptive_avg_pool{dims}d")(x, output_size)
    return plain


def _avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                data_format=None, **_):
    _channels_first(data_format)
    return _torch().nn.functional.avg_pool3d(x, kernel_size, stride, _padding(padding, 3), ceil_mode,
                                             count_include_pad=not exclusive, divisor_override=divisor_override)


def _max_pool(dims):
    def plain(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format=None, **_):
        _channels_first(data_format)
        return getattr(_torch().nn.functional, f"max_pool{dims}d")(
            x, kernel_size, stride, _padding(padding, dims), ceil_mode=ceil_mode, return_indices=return_mask)
    return plain


def _interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                 data_format=None, **_):
    _channels_first(data_format)
    if align_mode == 1 and mode in ("linear", "bilinear", "trilinear") and not align_corners:
        raise NotDerivable("align_mode=1 (asymmetric source index) has no torch interpolate counterpart")
    linear = mode in ("linear", "bilinear", "trilinear", "bicubic")
    return _torch().nn.functional.interpolate(x, size=size, scale_factor=scale_factor, mode=mode,
                                              align_corners=align_corners if linear else None)


def _conv(dims):
    def plain(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format=None, **_):
        _channels_first(data_format)
        return getattr(_torch().nn.functional, f"conv{dims}d")(x, weight, bias, stride, _padding(padding, dims),
                                                              dilation, groups)
    return plain


def _histogram(input, bins=100, min=0, max=0, weight=None, density=False, **_):
    if weight is not None or density:
        raise NotDerivable("weight/density have no torch.histc counterpart")
    return _torch().histc(input, bins=bins, min=min, max=max)


def _put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True, **_):
    torch = _torch()
    if not torch.is_tensor(values):
        values = torch.full(indices.shape, values, dtype=arr.dtype)
    if reduce == "assign":
        return torch.scatter(arr, axis, indices, values.expand(indices.shape) if broadcast else values)
    torch_reduce = {"add": "sum", "mul": "prod", "multiply": "prod", "mean": "mean", "amax": "amax", "amin": "amin"}
    if reduce not in torch_reduce:
        raise NotDerivable(f"reduce={reduce!r}")
    return torch.scatter_reduce(arr, axis, indices, values.expand(indices.shape), torch_reduce[reduce],
                                include_self=include_self)


def _batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.9,
                epsilon=1e-5, data_format=None, use_global_stats=None, **_):
    _channels_first(data_format)
    if use_global_stats is not None:  # Paddle: the running statistics are used iff use_global_stats
        training = not use_global_stats
    # Paddle's momentum weighs the running value, Torch's the batch statistic
    return _torch().nn.functional.batch_norm(x, running_mean, running_var, weight, bias, training, 1 - momentum,
                                             epsilon)


def _hardsigmoid(x, slope=1 / 6, offset=0.5, **_):
    if abs(slope - 1 / 6) > 1e-12 or offset != 0.5:
        raise NotDerivable(f"slope={slope}, offset={offset}: torch's hardsigmoid is relu6(x + 3) / 6")
    return _torch().nn.functional.hardsigmoid(x)


# The plain call where the same-named Torch callable takes Paddle's arguments in another form
# (written in Torch's own terms, with no other mapping than the argument forms).  A Paddle
# argument with no Torch counterpart raises NotDerivable: there is no plain call to compare with.
PLAIN_CALLS = {
    "paddle.all": _reduce("all"),
    "paddle.any": _reduce("any"),
    "paddle.count_nonzero": _count_nonzero,
    "paddle.sort": lambda x, axis=-1, descending=False, stable=False, **_: __import__("torch").sort(
        x, dim=axis, descending=descending, stable=stable).values,
    "paddle.tensordot": _tensordot,
    "paddle.cumsum": _cumsum,
    "paddle.cummax": _cum_extreme("cummax"),
    "paddle.cummin": _cum_extreme("cummin"),
    "paddle.sum": _reduce_with("sum"),
    "paddle.Tensor.mean": _reduce_with("mean"),
    "paddle.max": _reduce_with("amax"),  # torch.max takes one dim; torch.amax is its several-dims form
    "paddle.std": _reduce_with("std", unbiased="unbiased"),
    "paddle.Tensor.median": _median,
    "paddle.trace": _trace,
    "paddle.diag": _diag,
    "paddle.trapezoid": _trapezoid_with("trapezoid"),
    "paddle.cumulative_trapezoid": _trapezoid_with("cumulative_trapezoid"),
    "paddle.bitwise_right_shift": _bitwise_right_shift,
    "paddle.matmul": _matmul,
    "paddle.Tensor.__matmul__": lambda x, y, **_: __import__("torch").matmul(x, y),
    "paddle.outer": lambda x, y, **_: __import__("torch").outer(x.reshape(-1), y.reshape(-1)),
    "paddle.nn.functional.linear": lambda x, weight, bias=None, **_: __import__("torch").nn.functional.linear(
        x, weight.T, bias),  # Paddle's weight is [in, out], Torch's [out, in]
    "paddle.nn.functional.adaptive_avg_pool2d": _adaptive_avg_pool(2),
    "paddle.nn.functional.adaptive_avg_pool3d": _adaptive_avg_pool(3),
    "paddle.nn.functional.avg_pool3d": _avg_pool3d,
    "paddle.nn.functional.max_pool1d": _max_pool(1),
    "paddle.nn.functional.max_pool2d": _max_pool(2),
    "paddle.nn.functional.max_pool3d": _max_pool(3),
    "paddle.nn.functional.interpolate": _interpolate,
    "paddle.nn.functional.upsample": _interpolate,
    "paddle.nn.functional.conv1d": _conv(1),
    "paddle.nn.functional.conv2d": _conv(2),
    "paddle.histogram": _histogram,
    "paddle.cast": lambda x, dtype, **_: x.to(torch_dtype(dtype)),
    "paddle.linalg.lstsq": lambda x, y, rcond=None, driver=None, **_: __import__("torch").linalg.lstsq(
        x, y, rcond=rcond, driver=driver),
    "paddle.nn.utils.parameters_to_vector": lambda parameters, **_: __import__("torch").nn.utils.parameters_to_vector(
        parameters),
    "paddle.nn.functional.batch_norm": _batch_norm,
    "paddle.nn.functional.hardsigmoid": _hardsigmoid,
    "paddle.put_along_axis": _put_along_axis,
}

# What Torch says when it refuses a call's dtypes (mixed float16/float32 operands, integer
# inputs of a floating-point op): the plain call has no result, so a mapping that makes it run
# (a cast) changes the result and may not be silent.
DTYPE_REFUSALS = ("same dtype", "scalar type", "not implemented for", "must be either a floating point",
                  "could not infer output dtype", "should be the same")


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
    try:
        prep = _prepare(config)
    except NotRunnable as exc:
        raise NotDerivable(f"config does not run: {exc.verdict.status} {exc.verdict.message[:80]}") from None
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
    try:
        if spec.strict_torch is not None:
            plain = spec.strict_torch(**kwargs)
        elif spec.api in PLAIN_CALLS:
            plain = PLAIN_CALLS[spec.api](**kwargs)
        else:
            plain = plain_call(spec.api, kwargs)
    except (NotDerivable, RuntimeError, TypeError, ValueError) as exc:
        if any(word in str(exc) for word in DTYPE_REFUSALS):
            return f"torch_error: the plain Torch call refuses these dtypes ({str(exc).splitlines()[0][:160]}); the mapping makes it run"
        if isinstance(exc, NotDerivable):
            raise
        raise NotDerivable(f"the plain call raises {type(exc).__name__}: {str(exc)[:80]}") from exc
    if spec.outputs is not None:
        reference, plain = spec.outputs(reference), spec.outputs(plain)
    ours = [_torch_out(v) for v in _flatten_outputs(reference)]
    theirs = [_torch_out(v) for v in _flatten_outputs(plain)]
    verdict = compare_outputs(ours, theirs, 1e-2, 1e-2, "forward")
    return None if verdict.ok else f"{verdict.status}: {verdict.message.splitlines()[0]}"
