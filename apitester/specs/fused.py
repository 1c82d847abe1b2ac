"""Incubate fused-op specs (paddle.incubate.*).

Torch has no fused equivalents: each reference composes the unfused Torch ops the Paddle
docstring describes (its ``note`` says which).  Most of these kernels exist only in CUDA
builds of Paddle; on a CPU build the verdict is ``paddle_error`` with Paddle's "kernel not
registered" message — an honest answer, kept as is.  Low-precision inputs are computed in
float32 and cast back, as the fused kernels do.
"""

from __future__ import annotations

import math

import numpy as np

from ..inputs import precondition
from ..vocab import AdaptationKind
from .base import Adaptation, Comparison, Spec, low_precision, maps_arguments, register
from ..references import as_float64, reference as how, stable_log_softmax


# ---------------------------------------------------------------- independent references (Spec.ref)
# NumPy / mpmath, never torch or paddle (apitester.references: the calling convention and the helpers)


@how("NumPy float64")
def _ref_fused_layer_norm(x, norm_weight, norm_bias, epsilon, residual_alpha=1.0, begin_norm_axis=1, bias=None,
                     residual=None, quant_scale=-1, **_):
    """h = x + bias + residual_alpha * residual; out = (h - mean) / sqrt(var + epsilon) * weight + bias
    over the dims from begin_norm_axis (population variance); h itself when there is neither weight
    nor bias.  Returns (out, h) when a residual is fused into a normalisation, else (out,)."""
    if quant_scale is not None and quant_scale > 0:
        raise NotImplementedError("quantised output")
    h = as_float64(x)
    if bias is not None:
        h = h + as_float64(bias)
    if residual is not None:
        h = h + float(residual_alpha) * as_float64(residual)
    if norm_weight is None and norm_bias is None:
        return (h,)
    axes = tuple(range(int(begin_norm_axis) % h.ndim, h.ndim))
    mean = h.mean(axis=axes, keepdims=True)
    var = ((h - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (h - mean) / np.sqrt(var + float(epsilon))
    norm_shape = h.shape[int(begin_norm_axis) % h.ndim:]
    if norm_weight is not None:
        out = out * as_float64(norm_weight).reshape(norm_shape)
    if norm_bias is not None:
        out = out + as_float64(norm_bias).reshape(norm_shape)
    return (out, h) if residual is not None else (out,)


@how("NumPy float64, max-shifted softmax")
def _ref_softmax_mask_fuse(x, mask, **_):
    """softmax(x + mask) over the last dimension."""
    z = as_float64(x) + as_float64(mask)
    return np.exp(stable_log_softmax(z, z.ndim - 1))


# Torch has no fused ops: each reference composes the unfused ops Paddle's docstring names
# (a call mapping), and computes float16/bfloat16 inputs in float32 as the fused kernels do.
# No plain Torch call exists, so the strict layer is this composed reference, and says so.
_FUSED_ADAPTATIONS = maps_arguments("composed from the unfused Torch ops Paddle's docstring describes") + (
    Adaptation(AdaptationKind.REFERENCE_PRECISION, "float16/bfloat16 inputs are computed in float32 and cast back, as "
               "the fused kernels do; Torch has no fused op to call at the inputs' dtype"),
)

# ---------------------------------------------------------------- helpers


def _f32(t):
    import torch

    return t.float() if t is not None and t.dtype in (torch.float16, torch.bfloat16) else t


def _activation(name, x):
    import torch.nn.functional as F

    name = (name or "none").lower()
    if name in ("none", "identity", "linear"):
        return x
    if name == "gelu":
        return F.gelu(x)
    if name in ("gelu_tanh", "fast_gelu"):
        return F.gelu(x, approximate="tanh")
    if name == "relu":
        return F.relu(x)
    if name in ("silu", "swish"):
        return F.silu(x)
    if name == "sigmoid":
        return x.sigmoid()
    if name in ("swiglu", "geglu"):
        a, b = x.chunk(2, dim=-1)
        return (F.silu(a) if name == "swiglu" else F.gelu(a)) * b
    raise ValueError(f"unknown activation {name!r}")


def _dropout_free(rate, training, what):
    """Dropout in training mode is random; only the deterministic case is compared."""
    if training and rate:
        raise NotImplementedError(f"{what}: dropout rate {rate} in training mode is random; not comparable")


# ---------------------------------------------------------------- references


def _fused_bias_act(
    x, bias=None, dequant_scales=None, shift=None, smooth=None, act_method="gelu",
    compute_dtype="default", quant_scale=-1, quant_round_type=0, quant_max_bound=0,
    quant_min_bound=0, **_,
):
    """int32 x: dequantised (x * dequant_scales) in compute_dtype; + bias; activation;
    (+ shift) * smooth; quant_scale > 0: round(quant_max_bound * quant_scale * y) (ties
    to even for round type 0, away from zero for 1) clipped to the bounds, as int8."""
    import torch

    compute = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}.get(compute_dtype)
    out_dtype = compute if (x.dtype == torch.int32 and compute is not None) else x.dtype
    y = x.double() if x.dtype == torch.float64 else x.float()
    if dequant_scales is not None:
        y = y * dequant_scales.float()
    if bias is not None:
        y = y + _f32(bias)
    y = _activation(act_method, y)
    if shift is not None:
        y = y + _f32(shift)
    if smooth is not None:
        y = y * _f32(smooth)
    if quant_scale is not None and quant_scale > 0:
        q = quant_max_bound * quant_scale * y
        q = torch.round(q) if quant_round_type == 0 else torch.sign(q) * torch.floor(q.abs() + 0.5)
        return q.clamp(quant_min_bound, quant_max_bound).to(torch.int8)
    return y.to(out_dtype)


def _fused_bias_dropout_residual_layer_norm(
    x, residual, bias=None, ln_scale=None, ln_bias=None, dropout_rate=0.5, ln_epsilon=1e-05,
    training=True, mode="upscale_in_train", **_,
):
    """layer_norm(residual + dropout(x + bias)) over the last dim, scaled by ln_scale and
    shifted by ln_bias (downscale_in_infer at inference multiplies by 1 - p)."""
    import torch.nn.functional as F

    _dropout_free(dropout_rate, training, "fused_bias_dropout_residual_layer_norm")
    h = _f32(x) if bias is None else _f32(x) + _f32(bias)
    if not training and mode == "downscale_in_infer":
        h = h * (1.0 - dropout_rate)
    h = h + _f32(residual)
    out = F.layer_norm(h, h.shape[-1:], _f32(ln_scale), _f32(ln_bias), ln_epsilon)
    return out.to(x.dtype)


def _fused_layer_norm_paddle(x, norm_weight, norm_bias, epsilon, residual_alpha=1.0, begin_norm_axis=1,
                             bias=None, residual=None, **rest):
    """Paddle call, keeping `out` and (when a residual is fused into a normalisation)
    `residual_out`. mean / inverse std are kernel scratch for backward; residual_out is
    left uninitialised by the CPU kernel when no residual is given, or when there is no
    normalisation (out is then the fused sum itself)."""
    import paddle

    outs = paddle.incubate.nn.functional.fused_layer_norm(
        x, norm_weight, norm_bias, epsilon, residual_alpha, begin_norm_axis, bias, residual,
        **{k: v for k, v in rest.items() if k.startswith("quant")},
    )
    return (outs[0], outs[1]) if _has_residual_out(norm_weight, norm_bias, residual) else (outs[0],)


def _has_residual_out(norm_weight, norm_bias, residual):
    return residual is not None and (norm_weight is not None or norm_bias is not None)


def _fused_layer_norm(x, norm_weight, norm_bias, epsilon, residual_alpha=1.0, begin_norm_axis=1,
                      bias=None, residual=None, quant_scale=-1, quant_round_type=0,
                      quant_max_bound=0, quant_min_bound=0, **_):
    """h = x + bias + residual_alpha * residual; out = layer_norm over dims >= begin_norm_axis
    of h, * norm_weight + norm_bias (flattened over those dims); with neither weight nor
    bias Paddle returns h itself. Returns (out, h) when a residual is fused into a
    normalisation."""
    import torch

    h = _f32(x)
    if bias is not None:
        h = h + _f32(bias)
    if residual is not None:
        h = h + residual_alpha * _f32(residual)
    if norm_weight is None and norm_bias is None:
        out = h
    else:
        axes = tuple(range(begin_norm_axis % x.ndim, x.ndim))
        mean = h.mean(dim=axes, keepdim=True)
        var = ((h - mean) ** 2).mean(dim=axes, keepdim=True)
        out = (h - mean) / torch.sqrt(var + epsilon)
        norm_shape = h.shape[begin_norm_axis % x.ndim:]
        if norm_weight is not None:
            out = out * _f32(norm_weight).reshape(norm_shape)
        if norm_bias is not None:
            out = out + _f32(norm_bias).reshape(norm_shape)
    if quant_scale is not None and quant_scale > 0:
        q = quant_max_bound * quant_scale * out
        q = torch.round(q) if quant_round_type == 0 else torch.sign(q) * torch.floor(q.abs() + 0.5)
        out = q.clamp(quant_min_bound, quant_max_bound).to(torch.int8)
    else:
        out = out.to(x.dtype)
    return (out, h.to(x.dtype)) if _has_residual_out(norm_weight, norm_bias, residual) else (out,)


def _fused_linear(x, weight, bias=None, transpose_weight=False, **_):
    import torch.nn.functional as F

    w = weight if transpose_weight else weight.t()  # F.linear wants [out, in]
    return F.linear(_f32(x), _f32(w), _f32(bias)).to(x.dtype)


def _fused_linear_activation(x, y, bias, trans_x=False, trans_y=False, activation=None, **_):
    """act(op(x) @ op(y) + bias); "gelu" is the tanh approximation of the cuBLASLt
    GELU epilogue behind fused_gemm_epilogue."""
    import torch.nn.functional as F

    a = x.transpose(-1, -2) if trans_x else x
    b = y.transpose(-1, -2) if trans_y else y
    out = _f32(a) @ _f32(b) + _f32(bias)
    if activation == "gelu":
        out = F.gelu(out, approximate="tanh")
    elif activation == "relu":
        out = F.relu(out)
    return out.to(x.dtype)


def _fused_multi_head_attention(
    x, qkv_weight, linear_weight, pre_layer_norm=False, pre_ln_scale=None, pre_ln_bias=None,
    ln_scale=None, ln_bias=None, pre_ln_epsilon=1e-05, qkv_bias=None, linear_bias=None,
    cache_kv=None, attn_mask=None, dropout_rate=0.5, attn_dropout_rate=0.5, ln_epsilon=1e-05,
    training=True, mode="upscale_in_train", ring_id=-1, add_residual=True, num_heads=-1,
    transpose_qkv_wb=False, **_,
):
    """The docstring's pseudo code: [pre-LN] -> qkv projection -> per-head softmax(q k^T /
    sqrt(d) + mask) v -> output projection -> [+ residual] -> [post-LN]."""
    import torch
    import torch.nn.functional as F

    _dropout_free(dropout_rate, training, "fused_multi_head_attention dropout")
    _dropout_free(attn_dropout_rate, training, "fused_multi_head_attention attn_dropout")
    if cache_kv is not None:
        raise NotImplementedError("cache_kv (decoder step) is not modelled by the reference")
    scale_out = (1.0 - dropout_rate) if (not training and mode == "downscale_in_infer") else 1.0
    scale_attn = (1.0 - attn_dropout_rate) if (not training and mode == "downscale_in_infer") else 1.0
    h_in = _f32(x)
    batch, seq, embed = h_in.shape
    h = F.layer_norm(h_in, (embed,), _f32(pre_ln_scale), _f32(pre_ln_bias), pre_ln_epsilon) if pre_layer_norm else h_in
    if transpose_qkv_wb:  # qkv_weight [embed, 3*embed], qkv_bias [3*embed]
        heads = num_heads
        head_dim = embed // heads
        qkv = h @ _f32(qkv_weight)
        if qkv_bias is not None:
            qkv = qkv + _f32(qkv_bias)
    else:  # qkv_weight [3, heads, head_dim, embed], qkv_bias [3, heads, head_dim]
        _, heads, head_dim, _ = qkv_weight.shape
        qkv = h @ _f32(qkv_weight).reshape(3 * heads * head_dim, embed).t()
        if qkv_bias is not None:
            qkv = qkv + _f32(qkv_bias).reshape(-1)
    qkv = qkv.reshape(batch, seq, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0] * head_dim ** -0.5, qkv[1], qkv[2]
    scores = q @ k.transpose(-1, -2)
    if attn_mask is not None:
        scores = scores + _f32(attn_mask)
    attn = torch.softmax(scores, dim=-1) * scale_attn
    ctx = (attn @ v).permute(0, 2, 1, 3).reshape(batch, seq, heads * head_dim)
    out = ctx @ _f32(linear_weight)
    if linear_bias is not None:
        out = out + _f32(linear_bias)
    out = out * scale_out
    if add_residual:
        out = h_in + out
    if not pre_layer_norm:
        out = F.layer_norm(out, (embed,), _f32(ln_scale), _f32(ln_bias), ln_epsilon)
    return out.to(x.dtype)


def _rotate(x, neox):
    import torch

    if neox:  # Paddle's "neox" style rotates adjacent pairs (x0, x1) -> (-x1, x0)
        pairs = x.reshape(*x.shape[:-1], -1, 2)
        return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).reshape(x.shape)
    half = x.shape[-1] // 2  # otherwise the front and back halves pair up
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _fused_rotary_position_embedding(
    q, k=None, v=None, sin=None, cos=None, position_ids=None, use_neox_rotary_style=True,
    time_major=False, rotary_emb_base=10000.0, **_,
):
    """out = t * cos + rotate(t) * sin for each given t of q, k, v ([batch, seq, heads,
    dim], or [seq, batch, ...] when time_major). rotate pairs adjacent elements when
    use_neox_rotary_style, else the two halves. sin/cos ([seq, dim] or [1, seq, 1, dim])
    are gathered by position_ids [batch, seq]; absent, they are built from
    rotary_emb_base with one frequency per adjacent pair."""
    import torch

    ref = q if q is not None else (k if k is not None else v)
    if time_major:
        seq, batch = ref.shape[0], ref.shape[1]
    else:
        batch, seq = ref.shape[0], ref.shape[1]
    dim = ref.shape[-1]
    if sin is None or cos is None:
        inv = rotary_emb_base ** (-(torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        theta = torch.arange(seq, dtype=torch.float64)[:, None] * inv[None, :]
        theta = theta.repeat_interleave(2, dim=-1)
        sin_t, cos_t = theta.sin().float(), theta.cos().float()
    else:
        sin_t = _f32(sin).reshape(-1, dim)
        cos_t = _f32(cos).reshape(-1, dim)
    if position_ids is not None:
        sin_b, cos_b = sin_t[position_ids.long()], cos_t[position_ids.long()]  # [batch, seq, dim]
    else:
        sin_b, cos_b = sin_t[:seq].expand(batch, seq, dim), cos_t[:seq].expand(batch, seq, dim)
    sin_b, cos_b = sin_b[:, :, None, :], cos_b[:, :, None, :]
    if time_major:
        sin_b, cos_b = sin_b.transpose(0, 1), cos_b.transpose(0, 1)
    outs = []
    for t in (q, k, v):
        if t is None:
            continue
        tf = _f32(t)
        outs.append((tf * cos_b + _rotate(tf, use_neox_rotary_style) * sin_b).to(t.dtype))
    return tuple(outs)


def _rope_paddle(**kwargs):
    import paddle

    outs = paddle.incubate.nn.functional.fused_rotary_position_embedding(**kwargs)
    return tuple(o for o in outs if o is not None)


def _variable_length_memory_efficient_attention(
    query, key, value, seq_lens, kv_seq_lens, mask=None, scale=None, causal=False,
    pre_cache_length=0, **_,
):
    """softmax(q k^T * scale + mask) v per batch over its valid lengths ([batch, heads,
    seq, dim]; key/value heads shared by groups of query heads). Keys past kv_seq_len
    (+ pre_cache_length) are masked out, query rows past seq_len are zero; causal masks
    keys after the query's position (offset by pre_cache_length)."""
    import torch

    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    q, k, v = _f32(query), _f32(key), _f32(value)
    groups = q.shape[1] // k.shape[1]
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    sq, sk = q.shape[2], k.shape[2]
    scores = (q @ k.transpose(-1, -2)) * scale
    if mask is not None:
        scores = scores + _f32(mask)[:, :, :sq, :sk]
    q_len = seq_lens.reshape(-1).long()
    kv_len = kv_seq_lens.reshape(-1).long() + pre_cache_length
    key_pos = torch.arange(sk)
    query_pos = torch.arange(sq)
    keep = key_pos[None, None, :] < kv_len[:, None, None]  # [batch, 1, sk]
    if causal:
        keep = keep & (key_pos[None, None, :] <= query_pos[None, :, None] + pre_cache_length)
    scores = scores.masked_fill(~keep[:, None, :, :], float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    rows = (query_pos[None, :] < q_len[:, None])[:, None, :, None]
    out = torch.where(rows, out, torch.zeros((), dtype=out.dtype))
    return out.to(query.dtype)


def seq_len_full(of: str, dim: int = 2):
    """Sequence lengths equal to the full length of another argument (every row valid)."""
    import numpy as np

    def domain(ctx):
        shape = tuple(ctx.args[of].shape)
        return np.full(ctx.shape, shape[dim] if len(shape) > dim else 1, dtype=ctx.dtype)

    return precondition("sequence lengths equal to the full length: every row valid")(domain)


@precondition("valid positions into the sin/cos tables")
def position_index(ctx):
    """Positions valid for the sin/cos tables (their seq dim), else for q's seq dim."""
    sin = ctx.args.get("sin")
    if sin is not None:
        shape = tuple(sin.shape)
        rows = shape[-3] if len(shape) == 4 else shape[0]
    else:
        q = ctx.args["q"]
        rows = q.shape[0] if ctx.args.get("time_major") else q.shape[1]
    return ctx.rng.integers(0, max(int(rows), 1), ctx.shape).astype(ctx.dtype)


def _softmax_mask_fuse(x, mask, **_):
    import torch

    return torch.softmax(_f32(x) + _f32(mask), dim=-1).to(x.dtype)


def _softmax_mask_fuse_plain(x, mask, **_):
    import torch

    return torch.softmax(x + mask, dim=-1)


# ---------------------------------------------------------------- entries

_F = "paddle.incubate.nn.functional."

# The tolerance decisions of the fused ops (all GPU-only kernels: a CPU build gives paddle_error).
_PINNED_LOW_PRECISION = Comparison(
    "float16/bfloat16 outputs compared at atol = rtol = 1e-2 whatever --atol/--rtol a run passes: the "
    "reference is the unfused float32 composition cast back, whose rounding a tighter run tolerance "
    "would judge instead of the kernel; float32/float64 follow the run's tolerance")
_ATTENTION_LOW_PRECISION = Comparison(
    "float16/bfloat16 outputs compared at atol = rtol = 2e-2 (the engine default is 1e-2): two matmuls "
    "and a softmax composed in float32 and cast back, where the fused kernel rounds its float16 "
    "intermediates (q k^T, the probabilities) along the chain; float32/float64 follow the run's tolerance")

register(
    Spec(
        api=_F + "fused_bias_act",
        torch=_fused_bias_act,
        tolerances=low_precision(1e-2), comparison=_PINNED_LOW_PRECISION,
        note="Composed: dequant (x * dequant_scales) -> + bias -> activation (gelu=erf, "
        "swiglu/geglu split the last dim) -> (+ shift) * smooth -> optional int8 quantisation. "
        "GPU-only kernel: paddle_error on CPU builds.", adaptations=_FUSED_ADAPTATIONS,
    ),
    Spec(
        api=_F + "fused_bias_dropout_residual_layer_norm",
        torch=_fused_bias_dropout_residual_layer_norm,
        note="Composed: layer_norm(residual + dropout(x + bias)) over the last dim; only "
        "deterministic dropout (rate 0 or inference) is compared. GPU-only kernel.", adaptations=_FUSED_ADAPTATIONS,
    ),
    Spec(
        api=_F + "fused_layer_norm",
        torch=_fused_layer_norm,
        ref=_ref_fused_layer_norm,
        paddle=_fused_layer_norm_paddle,
        note="Composed: h = x + bias + residual_alpha * residual; layer_norm over dims >= "
        "begin_norm_axis with flattened weight/bias (h itself when both are None). Compares "
        "out and, when a residual is fused into a normalisation, residual_out (= h); "
        "mean/inv-std (backward scratch) are not compared. CPU kernel: float32 only.", adaptations=_FUSED_ADAPTATIONS,
    ),
    Spec(
        api=_F + "fused_linear",
        torch=_fused_linear,
        tolerances=low_precision(1e-2), comparison=_PINNED_LOW_PRECISION,
        note="Composed: x @ weight (+ bias), weight [in, out] (transposed when "
        "transpose_weight). GPU-only kernel (fused_gemm_epilogue).", adaptations=_FUSED_ADAPTATIONS,
    ),
    Spec(
        api=_F + "fused_linear_activation",
        torch=_fused_linear_activation,
        note="Composed: act(op(x) @ op(y) + bias), gelu = tanh approximation (cuBLASLt "
        "epilogue). GPU-only kernel.", adaptations=_FUSED_ADAPTATIONS,
    ),
    Spec(
        api=_F + "fused_multi_head_attention",
        torch=_fused_multi_head_attention,
        tolerances=low_precision(2e-2), comparison=_ATTENTION_LOW_PRECISION,
        note="Composed from the docstring: [pre-LN] -> qkv projection (both weight layouts) "
        "-> softmax(q k^T / sqrt(d) + mask) v -> out projection -> [+ residual] -> [post-LN]; "
        "dropout compared only when deterministic. GPU-only kernel.", adaptations=_FUSED_ADAPTATIONS,
    ),
    Spec(
        api=_F + "fused_rotary_position_embedding",
        torch=_fused_rotary_position_embedding,
        paddle=_rope_paddle,
        domains={"position_ids": position_index},
        note="Composed: t * cos + rotate(t) * sin for q, k, v (adjacent pairs when "
        "use_neox_rotary_style, halves otherwise), sin/cos gathered by position_ids or "
        "built from rotary_emb_base. Absent q/k/v outputs (None) are dropped on both sides. "
        "GPU-only kernel.", adaptations=_FUSED_ADAPTATIONS,
    ),
    Spec(
        api=_F + "variable_length_memory_efficient_attention",
        torch=_variable_length_memory_efficient_attention,
        domains={"seq_lens": seq_len_full("query"), "kv_seq_lens": seq_len_full("key")},
        tolerances=low_precision(2e-2), comparison=_ATTENTION_LOW_PRECISION,
        note="Composed: per-batch softmax(q k^T * scale + mask[..., :Sq, :Sk]) v with "
        "grouped kv heads, keys past kv_seq_len masked, rows past seq_len zero; lengths "
        "drawn as the full sequence lengths. GPU-only kernel (cutlass).", adaptations=_FUSED_ADAPTATIONS,
    ),
    Spec(
        api="paddle.incubate.softmax_mask_fuse",
        torch=_softmax_mask_fuse,
        ref=_ref_softmax_mask_fuse,
        note="softmax(x + mask, -1), computed in float32 for float16 inputs.",
        strict_torch=_softmax_mask_fuse_plain,
        adaptations=(Adaptation(AdaptationKind.REFERENCE_PRECISION,
                                "the reference computes in float32 for float16 inputs; the plain "
                                "torch.softmax(x + mask, -1) runs at the inputs' dtype"),),
    ),
)
