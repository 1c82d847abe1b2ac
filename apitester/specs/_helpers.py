"""Helpers shared by the spec families (not a family itself: auto-discovery skips ``_`` modules).

Torch is imported lazily, inside the references, so spec modules import without it.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..vocab import AdaptationKind


class UnsupportedForm(ValueError, NotImplementedError):
    """An argument form the shared argument helpers below do not read: a ValueError to a spec's Torch reference (the
    config is refused with why) and a NotImplementedError to an independent reference (Spec.ref: "does not cover
    these arguments"), so both sides of one helper keep their own contract."""


def ntuple(value: Any, n: int, what: str = "value") -> tuple[int, ...]:
    """An int, a 1-list or an n-list (or array) -> n ints."""
    if hasattr(value, "tolist"):
        value = [int(v) for v in np.asarray(value).reshape(-1).tolist()]
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return (int(value[0]),) * n
        if len(value) != n:
            raise UnsupportedForm(f"{what} needs {n} values, got {value!r}")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def paddle_padding(padding: Any, n: int, channel_last: bool, sizes: Sequence[int], kernel: Sequence[int],
                   stride: Sequence[int]) -> tuple[list[tuple[int, int]], str]:
    """Paddle's padding forms (python/paddle/nn/functional/conv.py, _update_padding_nd) -> per spatial dim
    (before, after) and the algorithm. Forms: "SAME"/"VALID"; an int; [p_d1, ...]; [before_d1, after_d1,
    before_d2, ...]; [[0,0],[0,0],[b,a],...] (batch & channel pairs included). "SAME" pads like TensorFlow: output =
    ceil(in / stride), the odd cell goes after (the kernel sees the raw kernel size: Paddle sets dilation to 1)."""
    if isinstance(padding, str):
        algo = padding.upper()
        if algo == "VALID":
            return [(0, 0)] * n, algo
        if algo != "SAME":
            raise UnsupportedForm(f"unknown padding {padding!r}")
        pads = []
        for size, k, s in zip(sizes, kernel, stride):
            out = -(-int(size) // s)
            total = max((out - 1) * s + k - int(size), 0)
            pads.append((total // 2, total - total // 2))
        return pads, algo
    if isinstance(padding, (list, tuple)):
        if len(padding) == n + 2 and isinstance(padding[0], (list, tuple)):
            pairs = padding[1:-1] if channel_last else padding[2:]
            return [(int(a), int(b)) for a, b in pairs], "EXPLICIT"
        if len(padding) == 2 * n:
            return [(int(padding[2 * i]), int(padding[2 * i + 1])) for i in range(n)], "EXPLICIT"
        return [(p, p) for p in ntuple(padding, n, "padding")], "EXPLICIT"
    return [(int(padding), int(padding))] * n, "EXPLICIT"


def graph_message(op: str, a, b):
    """The message of paddle.geometric's send_* APIs, x (op) y, for NumPy arrays and Torch tensors alike. ("div" is
    x / y as documented; Paddle's implementation multiplies by 1 / (y + 1e-12),
    python/paddle/geometric/message_passing/send_recv.py, an undocumented epsilon.)"""
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    raise UnsupportedForm(f"unknown message_op {op!r}")


def load_torch():
    """The torch module (imported on first use)."""
    import torch

    return torch


def load_functional():
    """``torch.nn.functional`` (imported on first use)."""
    import torch.nn.functional as F

    return F


def is_tensor(value: Any) -> bool:
    """A torch tensor (checked without importing torch)."""
    return type(value).__module__.startswith("torch") and hasattr(value, "dtype")


def promote(*values: Any) -> tuple:
    """The values with every tensor among them cast to the tensors' common Torch result type.

    Paddle promotes mixed float16/float32 (and the other real pairs) the same way.  Values that
    are not tensors (None, Python scalars) are returned unchanged; so is a single tensor.
    """
    tensors = [v for v in values if is_tensor(v)]
    if len(tensors) < 2:
        return values
    torch = load_torch()
    common = tensors[0].dtype
    for t in tensors[1:]:
        common = torch.promote_types(common, t.dtype)
    return tuple(v.to(common) if is_tensor(v) and v.dtype != common else v for v in values)


PADDLE_TYPE_PROMOTION = "https://www.paddlepaddle.org.cn/documentation/docs/en/guides/advanced/auto_type_promotion_en.html"


def promotes_mixed_floats(torch_name: str):
    """The declaration of a reference that promotes mixed float16/bfloat16/float32 operands.

    ``torch_name`` refuses operands of two floating dtypes, so a mixed config has no plain Torch
    call: both layers compute on the operands cast to their common type (what Paddle's type
    promotion documents), and the verdict says so.  Configs of one dtype are the plain call.
    """
    from .base import Adaptation

    return Adaptation(
        AdaptationKind.REFERENCE_PRECISION,
        f"mixed float16/bfloat16/float32 operands: {torch_name} refuses two floating dtypes, so there is no "
        "plain Torch call; both layers cast the operands to their common type first, as Paddle's type "
        "promotion does (configs of one dtype are the plain call)", link=PADDLE_TYPE_PROMOTION)
