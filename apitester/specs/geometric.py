"""Graph message-passing specs (paddle.geometric.*), composed from index_select and
scatter_reduce."""

from __future__ import annotations

import math

import numpy as np

from ..inputs import precondition
from ._helpers import graph_message as _message
from .base import Spec, maps_arguments, register
from ..references import EXACT_LIMIT, RATIONAL_LIMIT, as_array, as_float64, reference as how


# ---------------------------------------------------------------- independent references (Spec.ref)
# NumPy / mpmath, never torch or paddle (apitester.references: the calling convention and the helpers)


@how("NumPy float64, one rounding per message (correctly rounded)")
def _ref_send_uv(x, y, src_index, dst_index, message_op="add", **_):
    """Per edge e: x[src[e]] (op) y[dst[e]], broadcast over the feature dims (one rounding: the float64
    result is the correctly rounded one)."""
    src, dst = as_array(src_index).astype(np.int64).reshape(-1), as_array(dst_index).astype(np.int64).reshape(-1)
    return _message(message_op, as_float64(x)[src], as_float64(y)[dst])


@how("exact rational messages and sums rounded once (fsum of float64 messages when large)")
def _ref_send_ue_recv(x, y, src_index, dst_index, message_op="add", reduce_op="sum", out_size=None, **_):
    """Messages x[src[e]] (op) y[e] per edge, reduced into out[dst[e]] (sum, mean, max, min); rows that
    receive nothing are 0; output rows = out_size when > 0, else x's rows.  Small sums (RATIONAL_LIMIT)
    are exact rationals of the exact messages, rounded once; larger ones fsum the float64 messages."""
    if hasattr(out_size, "reshape"):
        out_size = int(np.asarray(out_size).reshape(-1)[0])
    x, y = as_float64(x), as_float64(y)
    src, dst = as_array(src_index).astype(np.int64).reshape(-1), as_array(dst_index).astype(np.int64).reshape(-1)
    rows = int(out_size) if out_size is not None and int(out_size) > 0 else x.shape[0]
    msg = _message(message_op, x[src], y)
    out = np.zeros((rows, *msg.shape[1:]))
    count = np.bincount(dst, minlength=rows)[:rows]
    if reduce_op in ("sum", "mean"):
        if msg.size <= RATIONAL_LIMIT and np.isfinite(msg).all():
            # every message exact as a rational (x (op) y of two floats), summed exactly, rounded once
            from fractions import Fraction

            xs, ys = np.broadcast_arrays(x[src], y)
            xs, ys = xs.reshape(len(dst), -1), ys.reshape(len(dst), -1)
            ops = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                   "div": lambda a, b: a / b}
            combine = ops[message_op]
            flat_out = out.reshape(rows, -1)
            for r in np.nonzero(count)[0]:
                edges = np.nonzero(dst == r)[0]
                for j in range(xs.shape[1]):
                    total = sum((combine(Fraction(float(xs[e, j])), Fraction(float(ys[e, j]))) for e in edges),
                                Fraction(0))
                    flat_out[r, j] = float(total / int(count[r]) if reduce_op == "mean" else total)
            return out
        if msg.size <= EXACT_LIMIT:
            for r in np.nonzero(count)[0]:
                part = msg[dst == r]
                flat = part.reshape(part.shape[0], -1)
                total = [math.fsum(flat[:, j]) for j in range(flat.shape[1])]
                if reduce_op == "mean":  # exact sum / count, rounded once
                    from fractions import Fraction

                    total = [float(Fraction(t) / int(count[r])) if math.isfinite(t) else t / int(count[r])
                             for t in total]
                out[r] = np.asarray(total).reshape(msg.shape[1:])
            return out
        np.add.at(out, dst, msg)
        return out / np.maximum(count, 1).reshape(-1, *([1] * (msg.ndim - 1))) if reduce_op == "mean" else out
    if reduce_op in ("max", "min"):
        fill = -np.inf if reduce_op == "max" else np.inf
        acc = np.full(out.shape, fill)
        (np.maximum if reduce_op == "max" else np.minimum).at(acc, dst, msg)
        touched = (count > 0).reshape(-1, *([1] * (msg.ndim - 1)))
        return np.where(touched, acc, 0.0)
    raise NotImplementedError(f"reduce_op {reduce_op!r}")



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
        ref=_ref_send_ue_recv,
        domains={"src_index": node_index("x"), "dst_index": node_index("x")},
        note="Composed: index_select(x, src) (op) y, then index_add / scatter_reduce(amax, "
        "amin, include_self=False) into zeros by dst; mean = sum / max(count, 1).", adaptations=maps_arguments("x, y, src_index, dst_index, message_op, reduce_op, out_size -> index_select(x, src) (op) y reduced into zeros by dst (index_add / scatter_reduce; mean = sum / max(count, 1))"),
    ),
    Spec(
        api="paddle.geometric.send_uv",
        torch=_send_uv,
        ref=_ref_send_uv,
        domains={"src_index": node_index("x"), "dst_index": node_index("y")},
        note="Composed: index_select(x, src) (op) index_select(y, dst).", adaptations=maps_arguments("x, y, src_index, dst_index, message_op -> index_select(x, src) (op) index_select(y, dst)"),
    ),
)
