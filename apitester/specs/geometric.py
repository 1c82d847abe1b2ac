"""Graph message-passing specs (paddle.geometric.*), composed from index_select and
scatter_reduce."""

from __future__ import annotations

from ..inputs import precondition
from .. import references_nn as R
from ._helpers import graph_message as _message
from .base import Spec, maps_arguments, register


def node_index(of: str = "x"):
    """Valid node ids: rows of argument ``of`` (for send_ue_recv's dst_index: the output
    rows, out_size when given, else x's rows)."""

    def domain(ctx):
        rows = ctx.args[of].shape[0] if ctx.args[of].shape else 1
        if of == "x" and ctx.name == "dst_index":
            size = ctx.args.get("out_size")
            if isinstance(size, int) and size > 0:
                rows = size
        return ctx.rng.integers(0, max(int(rows), 1), ctx.shape).astype(ctx.dtype)

    return precondition("valid node ids (rows of another argument)")(domain)


def _send_ue_recv(x, y, src_index, dst_index, message_op="add", reduce_op="sum", out_size=None, **_):
    """message = x[src] (op) y per edge (broadcast over feature dims); out[dst] reduces the
    messages (sum / mean / max / min); rows that receive nothing are 0. Output rows:
    out_size when > 0, else x's rows."""
    import torch

    if hasattr(out_size, "reshape"):  # a Tensor out_size
        out_size = int(out_size.reshape(-1)[0])
    rows = out_size if out_size is not None and out_size > 0 else x.shape[0]
    msg = _message(message_op, x.index_select(0, src_index.long()), y)
    dst = dst_index.long()
    out = torch.zeros((rows, *msg.shape[1:]), dtype=msg.dtype)
    index = dst.reshape(-1, *([1] * (msg.ndim - 1))).expand_as(msg)
    if reduce_op == "sum":
        return out.index_add(0, dst, msg)
    if reduce_op == "mean":
        total = out.index_add(0, dst, msg)
        count = torch.zeros(rows, dtype=msg.dtype).index_add(0, dst, torch.ones_like(dst, dtype=msg.dtype))
        return total / count.clamp(min=1).reshape(-1, *([1] * (msg.ndim - 1)))
    if reduce_op in ("max", "min"):
        return out.scatter_reduce(0, index, msg, reduce="amax" if reduce_op == "max" else "amin", include_self=False)
    raise ValueError(f"unknown reduce_op {reduce_op!r}")


def _send_uv(x, y, src_index, dst_index, message_op="add", **_):
    """Per edge: x[src] (op) y[dst], broadcast over feature dims."""
    return _message(message_op, x.index_select(0, src_index.long()), y.index_select(0, dst_index.long()))


register(
    Spec(
        api="paddle.geometric.send_ue_recv",
        torch=_send_ue_recv,
        ref=R.send_ue_recv,
        domains={"src_index": node_index("x"), "dst_index": node_index("x")},
        note="Composed: index_select(x, src) (op) y, then index_add / scatter_reduce(amax, "
        "amin, include_self=False) into zeros by dst; mean = sum / max(count, 1).", adaptations=maps_arguments("x, y, src_index, dst_index, message_op, reduce_op, out_size -> index_select(x, src) (op) y reduced into zeros by dst (index_add / scatter_reduce; mean = sum / max(count, 1))"),
    ),
    Spec(
        api="paddle.geometric.send_uv",
        torch=_send_uv,
        ref=R.send_uv,
        domains={"src_index": node_index("x"), "dst_index": node_index("y")},
        note="Composed: index_select(x, src) (op) index_select(y, dst).", adaptations=maps_arguments("x, y, src_index, dst_index, message_op -> index_select(x, src) (op) index_select(y, dst)"),
    ),
)
