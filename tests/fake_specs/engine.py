"""Test-only specs for the engine's own paths (`import tests.fake_specs.engine`, or
APITESTER_EXTRA_SPECS=tests.fake_specs.engine).  API names start with ``apitester_test.``
so they can never collide with a real Paddle API."""

from apitester.specs.base import Adaptation, Spec, maps_arguments, register

from . import die_once, hang, segfault


def _paddle_tanh(x):
    import paddle

    return paddle.tanh(x)


def _torch_tanh_double_grad(x, **_):
    import torch

    class TanhDoubleGrad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            out = torch.tanh(inp)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            (out,) = ctx.saved_tensors
            return 2 * grad * (1 - out * out)  # deliberately twice the true gradient

    return TanhDoubleGrad.apply(x)


def _broken_domain(ctx):
    raise RuntimeError("domain bug on purpose")


def _slow_paddle_tanh(x):
    import time

    time.sleep(0.2)  # known time inside the Paddle call
    return _paddle_tanh(x)


def _slow_torch_tanh(x, **_):
    import time

    import torch

    time.sleep(0.1)  # known time inside the Torch call
    return torch.tanh(x)


def _slow_domain(ctx):
    import time

    time.sleep(0.3)  # input generation: engine time, not framework time
    return ctx.rng.uniform(-1.0, 1.0, ctx.shape).astype("float32")


def _torch_float64(x, **_):
    import torch

    return torch.tanh(x).to(torch.float64)


def _check_uniform(paddle_out, torch_out, args):
    ok = paddle_out.shape == torch_out.shape and 0 <= paddle_out.min() and paddle_out.max() < 1
    return ok, f"shape {paddle_out.shape}, range [{paddle_out.min():.3f}, {paddle_out.max():.3f})"


def _paddle_rand_like(x):
    import paddle

    return paddle.rand(x.shape)


def _torch_rand_like(x, **_):
    import torch

    return torch.rand(x.shape)


_stub = lambda x: None  # noqa: E731  (signature of every test API: one tensor x)

register(
    Spec(api="apitester_test.tanh_wrong_grad", paddle=_paddle_tanh, torch=_torch_tanh_double_grad, signature=_stub),
    Spec(api="apitester_test.tanh", paddle=_paddle_tanh, torch=lambda x, **_: __import__("torch").tanh(x),
         signature=_stub),
    Spec(api="apitester_test.double", paddle=lambda x: x * 2, torch=lambda x, **_: x * 2, signature=_stub),
    Spec(api="apitester_test.scale_", paddle=lambda x: x.scale_(2.0), torch=lambda x, **_: x.mul_(2),
         signature=_stub),
    # wrong on purpose, and writing into an argument: only separate input buffers on the two sides can tell
    Spec(api="apitester_test.scale_wrong_", paddle=lambda x: x.scale_(3.0), torch=lambda x, **_: x.mul_(2),
         signature=_stub),
    Spec(api="apitester_test.assign_wrong", paddle=lambda x, output: __import__("paddle").assign(x * 2, output=output),
         torch=lambda x, output, **_: output.copy_(x), signature=lambda x, output: None, backward=False),
    Spec(api="apitester_test.dtype_of", paddle=lambda x: x.dtype, torch=lambda x, **_: x.dtype, signature=_stub),
    Spec(api="apitester_test.broken_domain", paddle=_paddle_tanh, torch=lambda x, **_: x,
         domains={"x": _broken_domain}, signature=_stub),
    Spec(api="apitester_test.slow_sides", paddle=_slow_paddle_tanh, torch=_slow_torch_tanh,
         domains={"x": _slow_domain}, signature=_stub, backward=False),
    Spec(api="apitester_test.segfault", paddle=segfault, torch=lambda x, **_: x, signature=_stub),
    Spec(api="apitester_test.die_once", paddle=die_once, torch=lambda x, marker, **_: x * 2,
         signature=lambda x, marker: None, backward=False),
    Spec(api="apitester_test.hang", paddle=hang, torch=lambda x, **_: x, signature=_stub),
    Spec(api="apitester_test.dtype_differs", paddle=_paddle_tanh, torch=_torch_float64, signature=_stub),
    Spec(api="apitester_test.rand", paddle=_paddle_rand_like, torch=_torch_rand_like, random=True,
         check=_check_uniform, signature=_stub),
)



# ---------------------------------------------------------------- a reference-precision adaptation


def _sum_float64(x, **_):
    return x.double().sum().to(x.dtype)


def _sum_accumulated_in_float16(x, **_):
    """A real low-precision Torch computation: the sum accumulated element by element in float16
    (each addition rounds to float16), standing in for a plain Torch call that is off."""
    import torch

    acc = torch.zeros((), dtype=torch.float16)
    for value in x.detach().to(torch.float16).reshape(-1):
        acc = acc + value
    return acc.to(x.dtype)


def _paddle_sum(x):
    import paddle

    return paddle.sum(x)


register(
    Spec(api="apitester_test.precise_sum", paddle=_paddle_sum, torch=_sum_float64, signature=_stub,
         strict_torch=_sum_accumulated_in_float16, backward=False,
         domains={"x": lambda ctx: ctx.rng.uniform(0.5, 1.0, ctx.shape).astype(ctx.dtype)},
         adaptations=(Adaptation("reference_precision", "test-only: the reference sums in float64, "
                                 "the 'plain' call accumulates in float16"),)),
)


# ---------------------------------------------------------------- a difference only outside the typical domain


def _paddle_logit(x):
    import paddle

    return paddle.logit(x)


def _logit_with_finite_gradient_outside(x, **_):
    """log(x) - log1p(-x): logit's values everywhere (NaN outside [0, 1]), but its gradient
    1/x + 1/(1 - x) stays finite outside (0, 1), where paddle.logit's is NaN (3.3.1) or 0 (3.0.0):
    a difference only an input outside (0, 1) reaches."""
    import torch

    return torch.log(x) - torch.log1p(-x)


def _logit_rejecting_outside(x, **_):
    """torch.logit, but raising for inputs outside [0, 1]: a reference that cannot judge edge values."""
    import torch

    if bool(((x < 0) | (x > 1)).any()):
        raise ValueError("test-only: this reference takes x in [0, 1] only")
    return torch.logit(x)


register(
    Spec(api="apitester_test.logit_reference_rejects_outside", paddle=_paddle_logit,
         torch=_logit_rejecting_outside, signature=_stub, edges={"x": (0.0, 1.0, -0.5, 1.5)},
         note="test-only: paddle.logit against a reference that raises outside [0, 1]"),
    Spec(api="apitester_test.logit_finite_gradient_outside", paddle=_paddle_logit,
         torch=_logit_with_finite_gradient_outside, signature=_stub, edges={"x": (0.0, 1.0, -0.5, 1.5)},
         note="test-only: paddle.logit against a reference whose gradient differs only outside (0, 1)"),
)


# ---------------------------------------------------------------- a "silent" mapping that changes the result


def _paddle_cumsum(x, axis):
    import paddle

    return paddle.cumsum(x, axis)


def _cumsum_cast_back(x, axis, **_):
    """Deliberately wrong: the plain torch.cumsum promotes int32 to int64, this casts back and
    calls it an argument mapping (the shape of cumprod's old declaration)."""
    import torch

    return torch.cumsum(x, dim=axis).to(x.dtype)


register(
    Spec(api="apitester_test.cumsum", paddle=_paddle_cumsum, torch=_cumsum_cast_back,
         signature=lambda x, axis: None, backward=False,
         adaptations=maps_arguments("test-only: axis -> dim (and, undeclared, the result cast back to x's dtype)")),
)
