"""Helpers shared by the spec families (not a family itself: auto-discovery skips ``_`` modules).

Torch is imported lazily, inside the references, so spec modules import without it.
"""

from __future__ import annotations

from typing import Any

from ..vocab import AdaptationKind


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
