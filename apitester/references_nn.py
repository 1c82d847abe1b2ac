"""Independent references (a spec's ``ref``) for the nn.functional, vision, indexing, fused and geometric specs.

Each function computes the API's documented semantics with NumPy (and mpmath where float64 rounding
matters), never with torch or paddle: it is the third opinion that settles which framework computes the
documented function when their float64 results disagree (issue 34, item 1).

Calling convention (the ``Spec.ref`` interface): the same keyword arguments as the spec's torch
reference, every tensor a NumPy array -- float inputs upcast to float64 / complex128, integer and bool
arrays unchanged, Python scalars / lists / strings as the config gives them.  A function returns an
array, or a tuple of arrays in the order of the flattened outputs; it raises ``NotImplementedError`` for
an argument combination it does not cover.

Precision: sums whose float64 rounding would matter on a float64 config are computed exactly
(``math.fsum``, or mpmath at ``MP_DIGITS`` digits for norms and square roots) when the work is small
(``EXACT_LIMIT`` terms); larger inputs are float64 configs nowhere on the board (they are float32 /
float16 configs, where float64 arithmetic is already far below the config's rounding).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .specs._helpers import graph_message as _message, ntuple as _ntuple, paddle_padding as _pads

MP_DIGITS = 40
EXACT_LIMIT = 200_000  # terms summed exactly (fsum / mpmath) before falling back to float64 NumPy
RATIONAL_LIMIT = 20_000  # terms computed as exact rationals (fractions.Fraction), rounded once


# ---------------------------------------------------------------- small helpers


def _arr(value: Any) -> np.ndarray:
    return np.asarray(value)


def _f64(value: Any) -> np.ndarray:
    array = np.asarray(value)
    return array if array.dtype.kind in "fc" and array.dtype.itemsize >= 8 else array.astype(np.float64)


def _channel_last(data_format: Any) -> bool:
    return isinstance(data_format, str) and data_format.upper() in ("NLC", "NWC", "NHWC", "NDHWC")


def _how(text: str):
    """Say how a reference computes (read by the oracle as the reading's evidence: ``ref.how``)."""

    def mark(fn):
        fn.how = text
        return fn

    return mark


def _mp():
    import mpmath

    return mpmath


# ---------------------------------------------------------------- nn.functional: activations, similarity


@_how("NumPy float64, one rounding per operation")
def hardsigmoid(x, slope=0.1666667, offset=0.5, **_):
    """clamp(x * slope + offset, 0, 1) (Paddle's documented formula; slope and offset as given)."""
    return np.clip(_f64(x) * float(slope) + float(offset), 0.0, 1.0)


@_how("NumPy float64 (eval mode)")
def rrelu(x, lower=0.125, upper=1.0 / 3.0, training=True, **_):
    """Eval mode only (training draws random slopes): x where x >= 0, else x * (lower + upper) / 2.
    Returns (out, x) as the spec's sides do."""
    if training:
        raise NotImplementedError("rrelu in training mode draws random slopes: no element-wise reference")
    x = _f64(x)
    return np.where(x >= 0, x, x * ((float(lower) + float(upper)) / 2)), x


@_how("mpmath at 40 digits, rounded once (NumPy float64 above EXACT_LIMIT elements)")
def cosine_similarity(x1, x2, axis=1, eps=1e-8, **_):
    """Paddle's formula (python/paddle/nn/functional/common.py): x1 and x2 broadcast to a common shape,
    w12 = sum(x1 * x2), w1 = sum(x1^2), w2 = sum(x2^2) along ``axis``,
    out = w12 / sqrt(max(w1 * w2, eps^2)) = x1 . x2 / max(|x1| |x2|, eps).

    Computed with mpmath at MP_DIGITS digits (rounded to float64 at the end) when small; an all-zero
    vector gives the documented finite 0 (0 / eps), never NaN.  Torch documents a different clamp,
    x1 . x2 / (max(|x1|, eps) max(|x2|, eps)): the two differ (values and gradients) wherever
    |x1| |x2| < eps while a norm is above eps -- a convention between the frameworks, not an error."""
    a, b = np.broadcast_arrays(_f64(x1), _f64(x2))
    if a.ndim == 0:
        raise NotImplementedError("cosine_similarity of 0-d inputs")
    ax = int(axis) % a.ndim
    a, b = np.moveaxis(a, ax, -1), np.moveaxis(b, ax, -1)
    eps = float(eps)
    if a.size > EXACT_LIMIT or a.dtype.kind == "c":
        w12 = (a * b).sum(-1)
        w1 = (a * a).sum(-1)
        w2 = (b * b).sum(-1)
        return w12 / np.sqrt(np.maximum(w1 * w2, eps * eps))
    mp = _mp()
    out = np.empty(a.shape[:-1], dtype=np.float64)
    with mp.workdps(MP_DIGITS):
        floor = mp.mpf(eps) ** 2
        rows_a, rows_b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
        flat = out.reshape(-1)
        for i in range(rows_a.shape[0]):
            va = [mp.mpf(float(v)) for v in rows_a[i]]
            vb = [mp.mpf(float(v)) for v in rows_b[i]]
            w12 = mp.fsum(p * q for p, q in zip(va, vb))
            w1 = mp.fsum(p * p for p in va)
            w2 = mp.fsum(q * q for q in vb)
            flat[i] = float(w12 / mp.sqrt(max(w1 * w2, floor)))
    return out


@_how("NumPy float64 matmul")
def linear(x, weight, bias=None, **_):
    """x @ weight + bias; Paddle's weight is [in_features, out_features]."""
    out = np.matmul(_f64(x), _f64(weight))
    return out + _f64(bias) if bias is not None else out


@_how("NumPy row gather (exact)")
def embedding(x, weight, padding_idx=None, max_norm=None, norm_type=2.0, sparse=False, scale_grad_by_freq=False,
              **_):
    """weight[x], with an all-zero row wherever the id equals padding_idx (Paddle's documented output;
    a negative padding_idx counts from the end).  max_norm: the looked-up rows whose p-norm exceeds it
    are scaled by max_norm / (norm + 1e-7) first (paddle.nn.functional.input.embedding_renorm_)."""
    ids = _arr(x).astype(np.int64)
    table = _f64(weight).copy()
    rows = table.shape[0]
    if max_norm:
        used = np.unique(ids)
        norms = np.linalg.norm(table[used], ord=float(norm_type), axis=1, keepdims=True)
        scale = np.where(norms > float(max_norm), float(max_norm) / (norms + 1e-7), 1.0)
        table[used] = table[used] * scale
    out = table[ids]
    if padding_idx is not None:
        pad = int(padding_idx) if int(padding_idx) >= 0 else rows + int(padding_idx)
        out[ids == pad] = 0.0
    return out


# ---------------------------------------------------------------- convolution


def _conv_nd(x, weight, strides, dilations, groups, pads):
    """Cross-correlation of channel-first x [N, C, *S] with weight [O, C/g, *K] after zero padding
    ``pads`` ((before, after) per spatial dim): a sum over the kernel taps of BLAS products."""
    n = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    batch, channels = x.shape[:2]
    out_ch, per_group = weight.shape[:2]
    kernel = weight.shape[2:]
    sizes = [(xp.shape[2 + i] - (dilations[i] * (kernel[i] - 1) + 1)) // strides[i] + 1 for i in range(n)]
    if any(s <= 0 for s in sizes):
        raise NotImplementedError("an empty convolution output")
    xg = xp.reshape(batch, groups, channels // groups, *xp.shape[2:])
    wg = weight.reshape(groups, out_ch // groups, per_group, *kernel)
    out = np.zeros((batch, groups, out_ch // groups, *sizes))
    for tap in np.ndindex(*kernel):
        index = tuple(slice(tap[i] * dilations[i], tap[i] * dilations[i] + (sizes[i] - 1) * strides[i] + 1,
                            strides[i]) for i in range(n))
        patch = xg[(slice(None), slice(None), slice(None), *index)]  # [N, g, C/g, *sizes]
        w = wg[(slice(None), slice(None), slice(None), *tap)]  # [g, O/g, C/g]
        out += np.einsum("goc,ngc...->ngo...", w, patch, optimize=True)
    return out.reshape(batch, out_ch, *sizes)


@_how("NumPy float64 sums over kernel taps")
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL", **_):
    """Paddle's conv1d: cross-correlation after Paddle's padding forms ("SAME" ignores dilation)."""
    return _conv(1, x, weight, bias, stride, padding, dilation, groups, data_format)


@_how("NumPy float64 sums over kernel taps")
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", **_):
    return _conv(2, x, weight, bias, stride, padding, dilation, groups, data_format)


def _conv(n, x, weight, bias, stride, padding, dilation, groups, data_format):
    x, weight = _f64(x), _f64(weight)
    channel_last = _channel_last(data_format)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    strides, dilations = _ntuple(stride, n, "stride"), _ntuple(dilation, n, "dilation")
    pads, algo = _pads(padding, n, channel_last, x.shape[2:], weight.shape[2:], strides)
    if algo == "SAME":
        dilations = (1,) * n
    out = _conv_nd(x, weight, strides, dilations, int(groups), pads)
    if bias is not None:
        out = out + _f64(bias).reshape(1, -1, *([1] * n))
    return np.moveaxis(out, 1, -1) if channel_last else out


@_how("NumPy float64 scatter over kernel taps")
def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                     output_size=None, data_format="NCHW", **_):
    """The transposed convolution: every input cell scatters x[n, c, i, j] * weight[c, o, ki, kj] to
    (i*s + ki*d, j*s + kj*d) of the full map, which Paddle crops by its (possibly asymmetric) padding
    to the natural size + output_padding, or to ``output_size``; then + bias."""
    n = 2
    x, weight = _f64(x), _f64(weight)
    channel_last = _channel_last(data_format)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    groups = int(groups)
    strides, dilations = _ntuple(stride, n, "stride"), _ntuple(dilation, n, "dilation")
    kernel = weight.shape[2:]
    pads, algo = _pads(padding, n, channel_last, x.shape[2:], kernel, strides)
    if algo == "SAME":
        dilations = (1,) * n
    extra = _ntuple(output_padding, n, "output_padding")
    batch, channels, height, width = x.shape
    out_per_group = weight.shape[1]
    full_h = (height - 1) * strides[0] + dilations[0] * (kernel[0] - 1) + 1
    full_w = (width - 1) * strides[1] + dilations[1] * (kernel[1] - 1) + 1
    sizes = [(x.shape[2 + i] - 1) * strides[i] - pads[i][0] - pads[i][1] + dilations[i] * (kernel[i] - 1) + 1
             + extra[i] for i in range(n)]
    if output_size is not None:
        sizes = list(_ntuple(output_size, n, "output_size"))
    full = np.zeros((batch, groups, out_per_group,
                     max(full_h, pads[0][0] + sizes[0]), max(full_w, pads[1][0] + sizes[1])))
    xg = x.reshape(batch, groups, channels // groups, height, width)
    wg = weight.reshape(groups, channels // groups, out_per_group, *kernel)
    for ki in range(kernel[0]):
        for kj in range(kernel[1]):
            contrib = np.einsum("gco,ngchw->ngohw", wg[:, :, :, ki, kj], xg, optimize=True)
            r0, c0 = ki * dilations[0], kj * dilations[1]
            full[:, :, :, r0:r0 + (height - 1) * strides[0] + 1:strides[0],
                 c0:c0 + (width - 1) * strides[1] + 1:strides[1]] += contrib
    full = full.reshape(batch, groups * out_per_group, *full.shape[3:])
    out = full[:, :, pads[0][0]:pads[0][0] + sizes[0], pads[1][0]:pads[1][0] + sizes[1]]
    if bias is not None:
        out = out + _f64(bias).reshape(1, -1, 1, 1)
    return np.moveaxis(out, 1, -1) if channel_last else out


# ---------------------------------------------------------------- losses


@_how("NumPy float64 alpha recursion (logaddexp)")
def rnnt_loss(input, label, input_lengths, label_lengths, blank=0, fastemit_lambda=0.001, reduction="mean", **_):
    """RNN-T loss over the T x (U+1) lattice, ``input`` taken as log-probabilities as Paddle documents:
    alpha[0,0] = 0, alpha[t,u] = logaddexp(alpha[t-1,u] + blank[t-1,u], alpha[t,u-1] + emit[t,u-1]),
    loss_b = -(alpha[T_b-1, U_b] + blank[T_b-1, U_b]); mean = sum / batch.  FastEmit changes only the
    gradient, not the value."""
    logp = _f64(input)
    batch, steps, width, vocab = logp.shape
    lab = _arr(label).astype(np.int64)
    t_len, u_len = _arr(input_lengths).astype(np.int64), _arr(label_lengths).astype(np.int64)
    losses = np.empty(batch)
    for b in range(batch):
        alpha = np.full((steps, width), -np.inf)
        alpha[0, 0] = 0.0
        for t in range(steps):
            for u in range(width):
                if t == 0 and u == 0:
                    continue
                terms = []
                if t > 0:
                    terms.append(alpha[t - 1, u] + logp[b, t - 1, u, blank])
                if u > 0:
                    terms.append(alpha[t, u - 1] + logp[b, t, u - 1, int(lab[b, u - 1])])
                alpha[t, u] = np.logaddexp.reduce(terms)
        t_last, u_last = int(t_len[b]) - 1, int(u_len[b])
        losses[b] = -(alpha[t_last, u_last] + logp[b, t_last, u_last, blank])
    if reduction == "mean":
        return np.asarray(math.fsum(losses) / batch)
    if reduction == "sum":
        return np.asarray(math.fsum(losses))
    if reduction == "none":
        return losses
    raise NotImplementedError(f"reduction {reduction!r}")


# ---------------------------------------------------------------- sampling & resizing


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


@_how("NumPy float64 bilinear / nearest sampling")
def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True, **_):
    """4-D grid_sample (Paddle's documentation): grid[..., 0] indexes W and grid[..., 1] H in [-1, 1];
    align_corners maps -1/1 to the corner pixels' centres (True) or edges (False).  bilinear weights
    the four neighbours; nearest takes the nearest pixel (an exact half-way tie rounds half to even, as
    numpy's rint: ties are a convention, see issue 34 item 7).  padding_mode zeros: a neighbour outside
    the map reads 0; border: coordinates clamped to the map."""
    x, grid = _f64(x), _f64(grid)
    if x.ndim != 4:
        raise NotImplementedError("grid_sample reference: 4-D inputs only")
    if padding_mode not in ("zeros", "border"):
        raise NotImplementedError(f"padding_mode {padding_mode!r}")
    batch, channels, height, width = x.shape
    gx = _unnormalize(grid[..., 0], width, align_corners)  # [N, Ho, Wo]
    gy = _unnormalize(grid[..., 1], height, align_corners)
    if padding_mode == "border":
        gx, gy = np.clip(gx, 0, width - 1), np.clip(gy, 0, height - 1)
    bidx = np.arange(batch)[:, None, None]

    def read(iy, ix):
        valid = (iy >= 0) & (iy < height) & (ix >= 0) & (ix < width)
        vals = x[bidx, :, np.clip(iy, 0, height - 1), np.clip(ix, 0, width - 1)]  # [N, Ho, Wo, C]
        return vals * valid[..., None]

    if mode == "nearest":
        out = read(np.rint(gy).astype(np.int64), np.rint(gx).astype(np.int64))
    elif mode == "bilinear":
        x0, y0 = np.floor(gx), np.floor(gy)
        fx, fy = gx - x0, gy - y0
        x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
        out = (read(y0, x0) * ((1 - fy) * (1 - fx))[..., None] + read(y0, x0 + 1) * ((1 - fy) * fx)[..., None]
               + read(y0 + 1, x0) * (fy * (1 - fx))[..., None] + read(y0 + 1, x0 + 1) * (fy * fx)[..., None])
    else:
        raise NotImplementedError(f"mode {mode!r}")
    return np.moveaxis(out, -1, 1)


def _linear_axis(x, axis, out_len, ratio, align_corners, align_mode):
    """1-D linear resize along ``axis`` (Paddle's interpolate kernels): src = dst * ratio with
    align_corners (ratio = (in-1)/(out-1)); align_mode 0: src = (dst + 0.5) * ratio - 0.5 clamped at 0;
    align_mode 1: src = dst * ratio."""
    length = x.shape[axis]
    dst = np.arange(out_len, dtype=np.float64)
    if align_corners:
        src = dst * ((length - 1) / (out_len - 1) if out_len > 1 else 0.0)
    elif align_mode == 0:
        src = np.maximum((dst + 0.5) * ratio - 0.5, 0.0)
    else:
        src = np.maximum(dst * ratio, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), length - 1)
    hi = np.minimum(lo + 1, length - 1)
    frac = src - lo
    shape = [1] * x.ndim
    shape[axis] = out_len
    frac = frac.reshape(shape)
    return np.take(x, lo, axis=axis) * (1 - frac) + np.take(x, hi, axis=axis) * frac


@_how("NumPy float64, separable per axis")
def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                data_format=None, recompute_scale_factor=None, antialias=False, **_):
    """Paddle's interpolate for nearest, area (adaptive average pooling) and the (bi/tri)linear modes,
    separable per spatial axis.
    The scale along an axis is 1 / scale_factor when scale_factor is given (and not recomputed), else
    in / out.  nearest: src = floor(dst * scale)."""
    if antialias:
        raise NotImplementedError("antialias")
    x = _f64(x)
    n = x.ndim - 2
    channel_last = _channel_last(data_format)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    mode = str(mode).lower()
    if hasattr(size, "tolist"):
        size = np.asarray(size).reshape(-1).tolist()
    if hasattr(scale_factor, "tolist"):
        scale_factor = np.asarray(scale_factor).reshape(-1).tolist()
        scale_factor = scale_factor[0] if len(scale_factor) == 1 else scale_factor
    if size is not None:
        size = [int(s) for s in size] if isinstance(size, (list, tuple)) else [int(size)] * n
        scales = None
    else:
        scales = ([float(s) for s in scale_factor] if isinstance(scale_factor, (list, tuple))
                  else [float(scale_factor)] * n)
    if mode == "area":  # Paddle's area resize is adaptive average pooling to the output size
        if size is None:
            raise NotImplementedError("area mode needs a size (Paddle refuses a scale_factor)")
        out = _adaptive(x, size, n, False)[0]
        return np.moveaxis(out, 1, -1) if channel_last else out
    out = x
    for i in range(n):
        length = x.shape[2 + i]
        out_len = size[i] if size is not None else int(math.floor(length * scales[i]))
        ratio = 1.0 / scales[i] if scales is not None and not recompute_scale_factor else length / out_len
        if mode == "nearest":
            if align_corners:
                raise NotImplementedError("nearest with align_corners (Paddle and Torch both refuse it)")
            src = np.floor(np.arange(out_len, dtype=np.float64) * ratio)
            out = np.take(out, np.minimum(src.astype(np.int64), length - 1), axis=2 + i)
        elif mode in ("linear", "bilinear", "trilinear"):
            if out_len == length and not align_corners and ratio == 1.0:
                continue
            out = _linear_axis(out, 2 + i, out_len, ratio, bool(align_corners), int(align_mode))
        else:
            raise NotImplementedError(f"interpolate mode {mode!r}")
    return np.moveaxis(out, 1, -1) if channel_last else out


# ---------------------------------------------------------------- vision


def _bilinear_dcn(img, py, px):
    """img [G, C, H, W], positions py/px [G, P] -> [G, C, P] (Paddle's DmcnIm2colBilinear): a sample
    outside (-1, H) x (-1, W) is 0; corners outside the map read 0."""
    groups, channels, height, width = img.shape
    flat = img.reshape(groups, channels, height * width)
    inside = (py > -1) & (px > -1) & (py < height) & (px < width)
    y0f, x0f = np.floor(py), np.floor(px)
    ly, lx = py - y0f, px - x0f
    hy, hx = 1 - ly, 1 - lx
    y0, x0 = y0f.astype(np.int64), x0f.astype(np.int64)
    out = 0.0
    gidx = np.arange(groups)[:, None, None]
    cidx = np.arange(channels)[None, :, None]
    for yy, xx, weight in ((y0, x0, hy * hx), (y0, x0 + 1, hy * lx), (y0 + 1, x0, ly * hx), (y0 + 1, x0 + 1, ly * lx)):
        valid = inside & (yy >= 0) & (yy <= height - 1) & (xx >= 0) & (xx <= width - 1)
        idx = np.clip(yy, 0, height - 1) * width + np.clip(xx, 0, width - 1)
        vals = flat[gidx, cidx, idx[:, None, :]]
        out = out + vals * (weight * valid)[:, None, :]
    return out


@_how("NumPy float64 bilinear sampling and grouped matmul")
def deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1, deformable_groups=1, groups=1,
                  mask=None, **_):
    """Deformable convolution v1 (mask None) / v2: kernel tap (i, j) of output (ho, wo) samples x
    bilinearly at (ho*stride - pad + i*dil + dy, wo*stride - pad + j*dil + dx), offsets laid out
    [N, dg*kh*kw*2 (dy, dx), Ho, Wo], times the mask; then a grouped product with the weight, + bias."""
    x, offset, weight = _f64(x), _f64(offset), _f64(weight)
    sh, sw = _ntuple(stride, 2, "stride")
    ph, pw = _ntuple(padding, 2, "padding")
    dh, dw = _ntuple(dilation, 2, "dilation")
    n, c, height, width = x.shape
    c_out, c_per_group, kh, kw = weight.shape
    ho = (height + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    wo = (width + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    taps, dg, groups = kh * kw, int(deformable_groups), int(groups)
    base_y = (np.arange(ho) * sh - ph)[None, :, None] + np.repeat(np.arange(kh) * dh, kw)[:, None, None]
    base_x = (np.arange(wo) * sw - pw)[None, None, :] + np.tile(np.arange(kw) * dw, kh)[:, None, None]
    w = weight.reshape(groups, c_out // groups, c_per_group * taps)
    out = np.empty((n, c_out, ho, wo))
    for b in range(n):
        off = offset[b].reshape(dg, taps, 2, ho, wo)
        py = (base_y + off[:, :, 0]).reshape(dg, -1)
        px = (base_x + off[:, :, 1]).reshape(dg, -1)
        cols = _bilinear_dcn(x[b].reshape(dg, c // dg, height, width), py, px).reshape(dg, c // dg, taps, ho * wo)
        if mask is not None:
            cols = cols * _f64(mask)[b].reshape(dg, 1, taps, ho * wo)
        cols = cols.reshape(groups, (c // groups) * taps, ho * wo)
        out[b] = np.matmul(w, cols).reshape(c_out, ho, wo)
    if bias is not None:
        out = out + _f64(bias).reshape(1, -1, 1, 1)
    return out


# ---------------------------------------------------------------- indexing


@_how("NumPy scatter (exact)")
def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True, **_):
    """Paddle's put_along_axis: with broadcast, indices broadcast to arr's shape (the axis dim taken from
    indices) unless larger somewhere, values broadcast to indices; then for every index position p,
    out[p with p[axis] = indices[p]] receives values[p] -- assigned, or reduced (add, mul/multiply,
    mean, amin, amax; include_self keeps arr's own value in the reduction)."""
    arr = np.asarray(arr)
    out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
    idx = _arr(indices).astype(np.int64)
    vals = np.asarray(values, dtype=out.dtype)
    ax = int(axis) % arr.ndim if arr.ndim else 0
    if broadcast:
        if all(a >= i for a, i in zip(arr.shape, idx.shape)):
            shape = list(arr.shape)
            shape[ax] = idx.shape[ax]
            idx = np.broadcast_to(idx, shape)
        vals = np.broadcast_to(vals, idx.shape)
    elif vals.size == 1:
        vals = np.broadcast_to(vals.reshape([1] * idx.ndim), idx.shape)
    else:
        vals = vals[tuple(slice(0, s) for s in idx.shape)]
    idx = np.where(idx < 0, idx + arr.shape[ax], idx)
    grids = list(np.indices(idx.shape, sparse=False))
    grids[ax] = idx
    target = tuple(g.reshape(-1) for g in grids)
    flat_vals = np.asarray(vals).reshape(-1)
    if reduce == "assign":
        if len(set(zip(*[t.tolist() for t in target]))) != flat_vals.size:
            raise NotImplementedError("assign through repeated indices: no defined winner")
        out[target] = flat_vals
        return out
    ops = {"add": np.add, "mul": np.multiply, "multiply": np.multiply, "amin": np.minimum, "amax": np.maximum}
    if reduce == "mean":
        total = out.astype(np.float64) if include_self else np.zeros_like(out, dtype=np.float64)
        count = np.ones(out.shape) if include_self else np.zeros(out.shape)
        np.add.at(total, target, flat_vals)
        np.add.at(count, target, 1.0)
        touched = np.zeros(out.shape, dtype=bool)
        touched[target] = True
        mean = total / np.maximum(count, 1)
        if out.dtype.kind != "f":
            mean = np.floor(mean)  # integer mean rounds down (torch's scatter_reduce convention)
        return np.where(touched, mean, out).astype(out.dtype)
    if reduce not in ops:
        raise NotImplementedError(f"reduce {reduce!r}")
    if not include_self:
        touched = np.zeros(out.shape, dtype=bool)
        touched[target] = True
        identity = {"add": 0, "mul": 1, "multiply": 1, "amin": np.inf, "amax": -np.inf}[reduce]
        if out.dtype.kind != "f" and reduce in ("amin", "amax"):
            info = np.iinfo(out.dtype)
            identity = info.max if reduce == "amin" else info.min
        out = np.where(touched, np.asarray(identity).astype(out.dtype), out)
    ops[reduce].at(out, target, flat_vals)
    return out


@_how("NumPy flat positions (exact)")
def fill_diagonal_(x, value, offset=0, wrap=False, **_):
    """Paddle's Tensor.fill_diagonal_: the flat positions k * (sum of the strides) (numpy's
    fill_diagonal; ``wrap`` restarts after a gap on tall 2-D matrices), shifted ``offset`` columns and
    skipped where that leaves the row."""
    arr = np.asarray(x)
    out = arr.copy()
    if arr.ndim < 2 or arr.size == 0:
        return out
    last = arr.shape[-1]
    step = sum(math.prod(arr.shape[i + 1:]) for i in range(arr.ndim))
    limit = arr.size if (wrap and arr.ndim == 2) else min(arr.size, last ** 2 if arr.ndim == 2 else arr.size)
    positions = [i + int(offset) for i in range(0, limit, step) if 0 <= i % last + int(offset) < last]
    flat = out.reshape(-1)
    flat[positions] = value
    return flat.reshape(arr.shape)


@_how("NumPy strided view (exact)")
def set_(x, source=None, shape=None, stride=None, offset=0, **_):
    """x becomes a view of source's storage with ``shape`` and ``stride`` (elements).  ``offset`` is in
    bytes of source's dtype, which the upcast arrays no longer carry: only offset 0 is covered."""
    if source is None:
        return np.empty(0, dtype=np.asarray(x).dtype)
    if offset:
        raise NotImplementedError("a byte offset needs the source's original element size")
    src = np.asarray(source).reshape(-1)
    shape = list(np.asarray(source).shape) if shape is None else [int(s) for s in shape]
    if stride is None:
        stride = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    stride = [int(s) for s in stride]
    grid = np.indices(shape)
    flat = sum(g * s for g, s in zip(grid, stride)) if shape else np.zeros((), dtype=np.int64)
    if np.size(flat) and int(np.max(flat)) >= src.size:
        raise NotImplementedError("the view reads past the end of the source")
    return src[flat]


@_how("NumPy slicing (exact)")
def strided_slice(x, axes, starts, ends, strides, **_):
    """Python / numpy slicing per axis: start and end clamped to the axis, negative strides walk
    backwards (Paddle documents strided_slice as numpy's x[start:end:stride])."""
    arr = np.asarray(x)
    index = [slice(None)] * arr.ndim
    for axis, start, end, step in zip(axes, starts, ends, strides):
        index[int(axis) % arr.ndim] = slice(int(start), int(end), int(step))
    return arr[tuple(index)].copy()


# ---------------------------------------------------------------- fused


@_how("NumPy float64")
def fused_layer_norm(x, norm_weight, norm_bias, epsilon, residual_alpha=1.0, begin_norm_axis=1, bias=None,
                     residual=None, quant_scale=-1, **_):
    """h = x + bias + residual_alpha * residual; out = (h - mean) / sqrt(var + epsilon) * weight + bias
    over the dims from begin_norm_axis (population variance); h itself when there is neither weight
    nor bias.  Returns (out, h) when a residual is fused into a normalisation, else (out,)."""
    if quant_scale is not None and quant_scale > 0:
        raise NotImplementedError("quantised output")
    h = _f64(x)
    if bias is not None:
        h = h + _f64(bias)
    if residual is not None:
        h = h + float(residual_alpha) * _f64(residual)
    if norm_weight is None and norm_bias is None:
        return (h,)
    axes = tuple(range(int(begin_norm_axis) % h.ndim, h.ndim))
    mean = h.mean(axis=axes, keepdims=True)
    var = ((h - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (h - mean) / np.sqrt(var + float(epsilon))
    norm_shape = h.shape[int(begin_norm_axis) % h.ndim:]
    if norm_weight is not None:
        out = out * _f64(norm_weight).reshape(norm_shape)
    if norm_bias is not None:
        out = out + _f64(norm_bias).reshape(norm_shape)
    return (out, h) if residual is not None else (out,)


# ---------------------------------------------------------------- geometric


@_how("NumPy float64, one rounding per message (correctly rounded)")
def send_uv(x, y, src_index, dst_index, message_op="add", **_):
    """Per edge e: x[src[e]] (op) y[dst[e]], broadcast over the feature dims (one rounding: the float64
    result is the correctly rounded one)."""
    src, dst = _arr(src_index).astype(np.int64).reshape(-1), _arr(dst_index).astype(np.int64).reshape(-1)
    return _message(message_op, _f64(x)[src], _f64(y)[dst])


@_how("exact rational messages and sums rounded once (fsum of float64 messages when large)")
def send_ue_recv(x, y, src_index, dst_index, message_op="add", reduce_op="sum", out_size=None, **_):
    """Messages x[src[e]] (op) y[e] per edge, reduced into out[dst[e]] (sum, mean, max, min); rows that
    receive nothing are 0; output rows = out_size when > 0, else x's rows.  Small sums (RATIONAL_LIMIT)
    are exact rationals of the exact messages, rounded once; larger ones fsum the float64 messages."""
    if hasattr(out_size, "reshape"):
        out_size = int(np.asarray(out_size).reshape(-1)[0])
    x, y = _f64(x), _f64(y)
    src, dst = _arr(src_index).astype(np.int64).reshape(-1), _arr(dst_index).astype(np.int64).reshape(-1)
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


# ---------------------------------------------------------------- nn.functional: normalisation, lookups, losses
# (APIs of GPU tasks: the same documented semantics, declared where a CPU run can check them)


def _reduce(loss: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "mean":
        return np.asarray(loss.mean())
    if reduction == "sum":
        return np.asarray(loss.sum())
    if reduction == "none":
        return loss
    raise NotImplementedError(f"reduction {reduction!r}")


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return x - top - np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True))


@_how("NumPy float64, max-shifted log-sum-exp")
def log_softmax(x, axis=-1, dtype=None, **_):
    """x - log(sum(exp(x))) along ``axis`` (``dtype`` casts the input first; the cast is exact upward)."""
    x = _f64(x)
    if x.ndim == 0:
        return np.zeros_like(x)
    return _log_softmax(x, int(axis) % x.ndim)


@_how("NumPy (exact)")
def one_hot(x, num_classes=-1, **_):
    """out[..., c] = 1 where x == c, for c < num_classes (values; Paddle's dtype float32 vs Torch's int64 is a
    dtype convention, not a value)."""
    ids = _arr(x).astype(np.int64)
    classes = int(num_classes)
    if classes <= 0:
        classes = int(ids.max()) + 1 if ids.size else 0
    return (ids[..., None] == np.arange(classes)).astype(np.float64)


@_how("NumPy (exact)")
def temporal_shift(x, seg_num, shift_ratio=0.25, data_format="NCHW", **_):
    """Per segment of ``seg_num`` frames: the first C*ratio channels come from frame t-1, the next C*ratio from
    t+1 (zero beyond the ends), the rest stay."""
    x = _f64(x)
    channel_last = _channel_last(data_format)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    nt, c, h, w = x.shape
    v = x.reshape(nt // int(seg_num), int(seg_num), c, h, w)
    c1, c2 = int(c * shift_ratio), int(c * 2 * shift_ratio)
    out = np.zeros_like(v)
    out[:, 1:, :c1] = v[:, :-1, :c1]
    out[:, :-1, c1:c2] = v[:, 1:, c1:c2]
    out[:, :, c2:] = v[:, :, c2:]
    out = out.reshape(nt, c, h, w)
    return np.moveaxis(out, 1, -1) if channel_last else out


@_how("NumPy float64")
def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.9, epsilon=1e-5,
               data_format="NCHW", use_global_stats=None, **_):
    """(x - mean) / sqrt(var + epsilon) * weight + bias per channel: the running statistics when global
    statistics are used (use_global_stats, else not training), else the batch's (population variance)."""
    x = _f64(x)
    global_stats = (not training) if use_global_stats is None else bool(use_global_stats)
    channel_last = _channel_last(data_format)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    shape = [1, -1] + [1] * (x.ndim - 2)
    if global_stats:
        mean, var = _f64(running_mean).reshape(shape), _f64(running_var).reshape(shape)
    else:
        axes = tuple(d for d in range(x.ndim) if d != 1)
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + float(epsilon))
    if weight is not None:
        out = out * _f64(weight).reshape(shape)
    if bias is not None:
        out = out + _f64(bias).reshape(shape)
    return np.moveaxis(out, 1, -1) if channel_last else out


@_how("NumPy float64")
def dice_loss(input, label, epsilon=1e-5, **_):
    """1 - 2 |X.Y| / (|X| + |Y| + epsilon) per sample, Y = one_hot(label), averaged over the batch."""
    x = _f64(input)
    hot = one_hot(_arr(label)[..., 0], x.shape[-1])
    dims = tuple(range(1, x.ndim))
    inter = (x * hot).sum(axis=dims)
    denom = x.sum(axis=dims) + hot.sum(axis=dims)
    return np.asarray((1 - inter * 2 / (denom + float(epsilon))).mean())


@_how("NumPy float64")
def smooth_l1_loss(input, label, reduction="mean", delta=1.0, is_huber=True, **_):
    """Paddle's documented loss is Huber's: 0.5 d^2 where |d| < delta, else delta (|d| - delta / 2);
    is_huber=False divides it by delta (smooth L1 with beta = delta)."""
    d = np.abs(_f64(input) - _f64(label))
    delta = float(delta)
    loss = np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if not is_huber:
        loss = loss / delta
    return _reduce(loss, reduction)


@_how("NumPy float64")
def kl_div(input, label, reduction="mean", log_target=False, **_):
    """label * (log(label) - input), 0 where label = 0 (log_target: exp(label) * (label - input));
    batchmean = sum / batch size (a 0-d input: the sum)."""
    x, y = np.broadcast_arrays(_f64(input), _f64(label))
    if log_target:
        loss = np.exp(y) * (y - x)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = np.where(y > 0, y * (np.log(np.where(y > 0, y, 1.0)) - x), np.where(y == 0, 0.0, np.nan))
    if reduction == "batchmean":
        return np.asarray(loss.sum() / (x.shape[0] if x.ndim else 1))
    return _reduce(loss, reduction)


@_how("NumPy float64")
def gaussian_nll_loss(input, label, variance, full=False, epsilon=1e-6, reduction="mean", **_):
    """0.5 (log(max(var, eps)) + (input - label)^2 / max(var, eps)) (+ 0.5 log(2 pi) when full); a variance
    with one dimension fewer (or a last dimension of 1) is broadcast over the last dimension."""
    x, y, var = _f64(input), _f64(label), _f64(variance)
    if var.ndim == x.ndim - 1:
        var = var[..., None]
    var = np.maximum(var, float(epsilon))
    loss = 0.5 * (np.log(var) + (x - y) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@_how("NumPy float64")
def binary_cross_entropy(input, label, weight=None, reduction="mean", **_):
    """-(y log x + (1 - y) log(1 - x)), each log clamped at -100 (Paddle's and Torch's documented clamp), * weight."""
    x, y = _f64(input), _f64(label)
    with np.errstate(divide="ignore"):
        loss = -(y * np.maximum(np.log(x), -100.0) + (1 - y) * np.maximum(np.log1p(-x), -100.0))
    if weight is not None:
        loss = loss * _f64(weight)
    return _reduce(loss, reduction)


@_how("NumPy float64")
def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None, **_):
    """(1 - y) x + (1 + (pos_weight - 1) y) log(1 + exp(-x)), * weight."""
    x, y = _f64(logit), _f64(label)
    softplus_neg = np.logaddexp(0.0, -x)
    scale = 1.0 if pos_weight is None else 1 + (_f64(pos_weight) - 1) * y
    loss = (1 - y) * x + scale * softplus_neg
    if weight is not None:
        loss = loss * _f64(weight)
    return _reduce(loss, reduction)


@_how("NumPy float64")
def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum", **_):
    """alpha_t (1 - p_t)^gamma BCE-with-logits, / normalizer, reduced (default sum)."""
    x, y = _f64(logit), _f64(label)
    bce = (1 - y) * x + np.logaddexp(0.0, -x)
    p = 1 / (1 + np.exp(-x))
    p_t = p * y + (1 - p) * (1 - y)
    alpha_t = float(alpha) * y + (1 - float(alpha)) * (1 - y)
    loss = alpha_t * bce * (1 - p_t) ** float(gamma)
    if normalizer is not None:
        loss = loss / _f64(normalizer)
    return _reduce(loss, reduction)


@_how("NumPy float64")
def multi_margin_loss(input, label, p=1, margin=1.0, weight=None, reduction="mean", **_):
    """sum over j != y of w[y] max(0, margin - x[y] + x[j])^p, / C, per sample."""
    x = _f64(input)
    lab = _arr(label).astype(np.int64).reshape(-1)
    target = x[np.arange(x.shape[0]), lab][:, None]
    terms = np.maximum(float(margin) - target + x, 0.0) ** int(p)
    terms[np.arange(x.shape[0]), lab] = 0.0
    if weight is not None:
        terms = terms * _f64(weight)[lab][:, None]
    return _reduce(terms.sum(axis=1) / x.shape[1], reduction)


@_how("NumPy float64")
def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, numeric_stable_mode=True,
                               return_softmax=False, axis=-1, **_):
    """-sum(label * log_softmax) (soft) or -log_softmax[label] (hard; 0 at ignore_index), class axis kept."""
    x = _f64(logits)
    ax = int(axis) % x.ndim
    logp = _log_softmax(x, ax)
    if soft_label:
        loss = -(_f64(label) * logp).sum(axis=ax, keepdims=True)
    else:
        lab = _arr(label).astype(np.int64)
        lab = lab if lab.ndim == x.ndim else np.expand_dims(lab, ax)
        valid = lab != int(ignore_index)
        loss = -np.take_along_axis(logp, np.where(valid, lab, 0), axis=ax) * valid
    return (loss, np.exp(logp)) if return_softmax else loss


@_how("NumPy float64")
def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  use_softmax=True, label_smoothing=0.0, **_):
    """Paddle's cross_entropy (python/paddle/nn/functional/loss.py): per position -sum(label log p) (soft) or
    -log p[label] (hard; 0 at ignore_index), p = softmax(input) or the input (use_softmax=False);
    label_smoothing turns hard labels into (1 - e) one_hot + e / C; weight scales hard labels by
    weight[label], soft ones by label . weight; mean divides by the summed weights (ignore_index >= 0:
    of the labels kept), else by the count; 'none' keeps the class axis unless the label had none."""
    x = _f64(input)
    nd = x.ndim
    ax = int(axis) % nd
    classes = x.shape[ax]
    lab_in = np.asarray(label)
    squeezed = lab_in.ndim == nd - 1
    with np.errstate(divide="ignore"):
        logp = _log_softmax(x, ax) if use_softmax else np.log(x)
    if label_smoothing and float(label_smoothing) > 0:
        soft_label = True
        if squeezed:
            lab_in = np.moveaxis(one_hot(lab_in, classes), -1, ax)
        lab_in = _f64(lab_in) * (1 - float(label_smoothing)) + float(label_smoothing) / classes
        squeezed = False
    gathered = valid = None
    if soft_label:
        soft = _f64(lab_in)
        out = -(soft * logp).sum(axis=ax, keepdims=True)
        if weight is not None:
            gathered = np.expand_dims(np.moveaxis(soft, ax, -1) @ _f64(weight), ax)
            out = out * gathered
    else:
        lab = lab_in.astype(np.int64)
        lab = np.expand_dims(lab, ax) if squeezed else lab
        valid = lab != int(ignore_index)
        safe = np.where(valid, lab, 0)
        out = -np.take_along_axis(logp, safe, axis=ax) * valid
        if weight is not None:
            gathered = _f64(weight)[safe] * valid
            out = out * gathered
    if reduction == "sum":
        return np.asarray(out.sum())
    if reduction == "mean":
        if int(ignore_index) >= 0:
            mask = (np.asarray(label) != int(ignore_index)) if valid is None else valid
            count = mask.sum() if gathered is None else (mask * gathered).sum()
            return np.asarray(out.sum() / (count if count != 0 else 1))
        if gathered is not None:
            total = gathered.sum()
            return np.asarray(out.sum() / (total if total != 0 else 1))
        return np.asarray(out.mean())
    if reduction != "none":
        raise NotImplementedError(f"reduction {reduction!r}")
    return np.squeeze(out, ax) if squeezed else out


# ---------------------------------------------------------------- adaptive pooling


def _adaptive_windows(length: int, out: int) -> list[tuple[int, int]]:
    """Adaptive pooling's window i: [floor(i L / out), ceil((i + 1) L / out))."""
    return [((i * length) // out, -(-((i + 1) * length) // out)) for i in range(out)]


def _adaptive(x, output_size, n, reduce_max, data_format=None):
    x = _f64(x)
    channel_last = _channel_last(data_format)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    spatial = x.shape[-n:]
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * n
    sizes = [spatial[i] if s is None else int(s) for i, s in enumerate(sizes)]
    windows = [_adaptive_windows(spatial[i], sizes[i]) for i in range(n)]
    lead = x.shape[:-n]
    out = np.empty((*lead, *sizes))
    mask = np.empty((*lead, *sizes), dtype=np.int64)
    for cell in np.ndindex(*sizes):
        bounds = [windows[i][cell[i]] for i in range(n)]
        block = x[(Ellipsis, *(slice(a, b) for a, b in bounds))]
        flat = block.reshape(*lead, -1)
        if reduce_max:
            arg = np.argmax(flat, axis=-1)  # the first maximum
            out[(Ellipsis, *cell)] = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
            local = np.unravel_index(arg, block.shape[-n:])
            index = np.zeros(arg.shape, dtype=np.int64)
            for i in range(n):
                index = index * spatial[i] + (local[i] + bounds[i][0])
            mask[(Ellipsis, *cell)] = index
        else:
            out[(Ellipsis, *cell)] = flat.mean(axis=-1)
    if channel_last:
        out, mask = np.moveaxis(out, 1, -1), np.moveaxis(mask, 1, -1)
    return out, mask


@_how("NumPy float64 window means")
def adaptive_avg_pool2d(x, output_size, data_format="NCHW", **_):
    """Mean over window [floor(i L / out), ceil((i + 1) L / out)) per spatial dim."""
    return _adaptive(x, output_size, 2, False, data_format)[0]


@_how("NumPy float64 window means")
def adaptive_avg_pool3d(x, output_size, data_format="NCDHW", **_):
    return _adaptive(x, output_size, 3, False, data_format)[0]


def _adaptive_max(n):
    @_how("NumPy window maxima (exact); the mask is the flat spatial index of the first maximum")
    def reference(x, output_size, return_mask=False, **_):
        out, mask = _adaptive(x, output_size, n, True)
        return (out, mask) if return_mask else out

    reference.__name__ = reference.__qualname__ = f"adaptive_max_pool{n}d"
    return reference


adaptive_max_pool1d = _adaptive_max(1)
adaptive_max_pool2d = _adaptive_max(2)
adaptive_max_pool3d = _adaptive_max(3)


# ---------------------------------------------------------------- indexing: scatter, index_put


@_how("NumPy, Paddle's documented sequential loop (exact)")
def scatter(x, index, updates, overwrite=True, **_):
    """overwrite: out[index[i]] = updates[i] in order (the last update of a repeated row wins);
    otherwise the indexed rows are zeroed and every update added."""
    arr = np.asarray(x)
    out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
    idx = _arr(index).astype(np.int64).reshape(-1)
    upd = np.asarray(updates, dtype=out.dtype)
    if overwrite:
        for i, row in enumerate(idx):
            out[row] = upd[i]
        return out
    out[idx] = 0
    np.add.at(out, idx, upd)
    return out


@_how("NumPy advanced indexing (exact)")
def index_put(x, indices, value, accumulate=False, **_):
    """out[indices] = value (accumulate: += value, every repeated position counted)."""
    arr = np.asarray(x)
    out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
    idx = tuple(np.asarray(i) if np.asarray(i).dtype == bool else np.asarray(i).astype(np.int64) for i in indices)
    val = np.asarray(value, dtype=out.dtype)
    if accumulate:
        np.add.at(out, idx, val)
    else:
        positions = np.broadcast_arrays(*[np.nonzero(i)[0] if i.dtype == bool else i for i in idx])
        if len(set(zip(*[p.reshape(-1).tolist() for p in positions]))) != positions[0].size:
            raise NotImplementedError("index_put through repeated positions: no defined winner")
        out[idx] = val
    return out


# ---------------------------------------------------------------- diagonal scatters


def _diagonal_scatter(x, y, offset, dim1, dim2):
    arr = np.asarray(x)
    out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
    a1, a2 = int(dim1) % arr.ndim, int(dim2) % arr.ndim
    view = np.moveaxis(out, (a1, a2), (-2, -1))
    rows, cols = view.shape[-2:]
    k = int(offset)
    count = max(0, min(rows, cols - k) if k >= 0 else min(rows + k, cols))
    i = np.arange(count)
    r, c = (i, i + k) if k >= 0 else (i - k, i)
    view[..., r, c] = np.asarray(y)
    return out


@_how("NumPy (exact)")
def diagonal_scatter(x, y, offset=0, axis1=0, axis2=1, **_):
    """x with its diagonal (offset, axis1, axis2; numpy.diagonal's layout, diagonal last) replaced by y."""
    return _diagonal_scatter(x, y, offset, axis1, axis2)


@_how("NumPy (exact)")
def fill_diagonal_tensor(x, y, offset=0, dim1=0, dim2=1, **_):
    """x with its diagonal (offset, dim1, dim2) replaced by y (the diagonal as the last dimension of y)."""
    return _diagonal_scatter(x, y, offset, dim1, dim2)


# ---------------------------------------------------------------- pooling


def _pool_windows(size, k, s, before, after, ceil_mode):
    """Per output index, the window [start, start + k) in input coordinates (may reach into the padding):
    floor / ceil((size + before + after - k) / s) + 1 windows, a ceil-mode window that would start in the
    trailing padding dropped (Torch's documented rule, which the spec's reference follows)."""
    span = size + before + after - k
    count = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (count - 1) * s >= size + before:
        count -= 1
    return [(o * s - before, o * s - before + k) for o in range(count)]


def _pool_setup(x, n, kernel_size, stride, padding, data_format):
    x = _f64(x)
    channel_last = _channel_last(data_format)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    kernel = _ntuple(kernel_size, n, "kernel_size")
    strides = kernel if stride is None else _ntuple(stride, n, "stride")
    pads, algo = _pads(padding, n, channel_last, x.shape[2:], kernel, strides)
    return x, channel_last, kernel, strides, pads, algo


def _max_pool(n: int):
    @_how("NumPy window maxima (exact); the mask is the flat index of the first maximum in the input map")
    def reference(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format=None, **_):
        """Max over each window of the input (padding cells never win: -inf), mask = the flat spatial index
        of the window's first maximum in the unpadded input."""
        x, channel_last, kernel, strides, pads, algo = _pool_setup(x, n, kernel_size, stride, padding, data_format)
        ceil = bool(ceil_mode) and algo != "SAME"
        sizes = x.shape[2:]
        windows = [_pool_windows(sizes[i], kernel[i], strides[i], pads[i][0], pads[i][1], ceil) for i in range(n)]
        lead = x.shape[:2]
        out = np.empty((*lead, *(len(w) for w in windows)))
        mask = np.empty(out.shape, dtype=np.int64)
        for cell in np.ndindex(*out.shape[2:]):
            bounds = [(max(windows[i][cell[i]][0], 0), min(windows[i][cell[i]][1], sizes[i])) for i in range(n)]
            block = x[(slice(None), slice(None), *(slice(a, b) for a, b in bounds))]
            flat = block.reshape(*lead, -1)
            if flat.shape[-1] == 0:
                out[(Ellipsis, *cell)], mask[(Ellipsis, *cell)] = -np.inf, -1
                continue
            arg = np.argmax(flat, axis=-1)
            out[(Ellipsis, *cell)] = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
            local = np.unravel_index(arg, block.shape[2:])
            index = np.zeros(arg.shape, dtype=np.int64)
            for i in range(n):
                index = index * sizes[i] + (local[i] + bounds[i][0])
            mask[(Ellipsis, *cell)] = index
        if channel_last:
            out, mask = np.moveaxis(out, 1, -1), np.moveaxis(mask, 1, -1)
        return (out, mask) if return_mask else out

    reference.__name__ = reference.__qualname__ = f"max_pool{n}d"
    return reference


max_pool1d = _max_pool(1)
max_pool2d = _max_pool(2)
max_pool3d = _max_pool(3)


@_how("NumPy float64 window sums / counts")
def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCDHW", **_):
    """Window sums of the zero-padded input divided by divisor_override, else by the window's input cells
    (exclusive) or its cells inside the padded map (the ceil-mode overhang not counted)."""
    x, channel_last, kernel, strides, pads, algo = _pool_setup(x, 3, kernel_size, stride, padding, data_format)
    ceil = bool(ceil_mode) and algo != "SAME"
    sizes = x.shape[2:]
    windows = [_pool_windows(sizes[i], kernel[i], strides[i], pads[i][0], pads[i][1], ceil) for i in range(3)]
    out = np.empty((*x.shape[:2], *(len(w) for w in windows)))
    for cell in np.ndindex(*out.shape[2:]):
        raw = [windows[i][cell[i]] for i in range(3)]
        inner = [(max(a, 0), min(b, sizes[i])) for i, (a, b) in enumerate(raw)]
        total = x[(slice(None), slice(None), *(slice(a, b) for a, b in inner))].sum(axis=(2, 3, 4))
        if divisor_override:
            count = float(divisor_override)
        elif exclusive:
            count = math.prod(max(b - a, 0) for a, b in inner)
        else:
            count = math.prod(min(b, sizes[i] + pads[i][1]) - max(a, -pads[i][0]) for i, (a, b) in enumerate(raw))
        out[(Ellipsis, *cell)] = total / count
    return np.moveaxis(out, 1, -1) if channel_last else out


# ---------------------------------------------------------------- CTC


@_how("NumPy float64 CTC forward recursion in log space")
def ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean", norm_by_times=False,
             zero_infinity=False, **_):
    """Paddle's warp-ctc normalises ``log_probs`` [T, B, C] with softmax itself; the loss of a sequence is
    -log of the summed probability of every alignment of its label (blanks between repeats) over its
    input_length frames.  mean: each loss divided by its label length, then averaged; norm_by_times
    scales only the gradient."""
    logp = _log_softmax(_f64(log_probs), 2)
    steps, batch, _classes = logp.shape
    labs = _arr(labels).astype(np.int64)
    t_len, l_len = _arr(input_lengths).astype(np.int64), _arr(label_lengths).astype(np.int64)
    losses = np.empty(batch)
    for b in range(batch):
        lab = labs[b, : int(l_len[b])] if labs.ndim == 2 else labs[int(l_len[:b].sum()):int(l_len[: b + 1].sum())]
        ext = np.full(2 * len(lab) + 1, int(blank))
        ext[1::2] = lab
        alpha = np.full(len(ext), -np.inf)
        alpha[0] = logp[0, b, ext[0]]
        if len(ext) > 1:
            alpha[1] = logp[0, b, ext[1]]
        for t in range(1, int(t_len[b])):
            prev = alpha.copy()
            shifted1 = np.concatenate([[-np.inf], prev[:-1]])
            shifted2 = np.concatenate([[-np.inf, -np.inf], prev[:-2]])
            skip = np.zeros(len(ext), dtype=bool)
            skip[2:] = (ext[2:] != int(blank)) & (ext[2:] != ext[:-2])
            alpha = np.logaddexp(prev, shifted1)
            alpha = np.where(skip, np.logaddexp(alpha, shifted2), alpha) + logp[t, b, ext]
        total = np.logaddexp(alpha[-1], alpha[-2]) if len(ext) > 1 else alpha[-1]
        losses[b] = -total
    if zero_infinity:
        losses = np.where(np.isinf(losses), 0.0, losses)
    if reduction == "mean":
        return np.asarray((losses / l_len).mean())
    return _reduce(losses, reduction)


# ---------------------------------------------------------------- vision: RoIAlign, FPN levels


def _roi_bilinear(img, y, x):
    """RoIAlign's sample of img [C, H, W] at (y, x): 0 outside [-1, H] x [-1, W]; clamped at 0; on the last
    row / column both corners collapse onto it."""
    _c, height, width = img.shape
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return np.zeros(img.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    if y0 >= height - 1:
        y0 = y1 = height - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= width - 1:
        x0 = x1 = width - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return (img[:, y0, x0] * hy * hx + img[:, y0, x1] * hy * lx + img[:, y1, x0] * ly * hx + img[:, y1, x1] * ly * lx)


@_how("NumPy float64 bilinear samples averaged per bin")
def roi_align(x, boxes, boxes_num, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=True, **_):
    """RoIAlign (Paddle's documentation and CPU kernel): per box a pooled_h x pooled_w grid of bins, each the
    mean of a grid of bilinear samples at the sub-bin centres -- sampling_ratio per side, or
    ceil(roi size / pooled size) when <= 0; aligned shifts the box by -0.5 pixel, an unaligned box is at
    least 1 x 1."""
    feats = _f64(x)
    rois_in = _f64(boxes)
    pooled_h, pooled_w = _ntuple(output_size, 2, "output_size")
    counts = _arr(boxes_num).astype(np.int64).reshape(-1)
    image_of = np.repeat(np.arange(counts.size), counts)
    out = np.zeros((rois_in.shape[0], feats.shape[1], pooled_h, pooled_w))
    for r, box in enumerate(rois_in):
        x0, y0, x1, y1 = (box * float(spatial_scale) - (0.5 if aligned else 0.0)).tolist()
        roi_w, roi_h = x1 - x0, y1 - y0
        if not aligned:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / pooled_h, roi_w / pooled_w
        gh = int(sampling_ratio) if sampling_ratio > 0 else int(math.ceil(roi_h / pooled_h))
        gw = int(sampling_ratio) if sampling_ratio > 0 else int(math.ceil(roi_w / pooled_w))
        if gh <= 0 or gw <= 0:
            continue
        img = feats[image_of[r]]
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                acc = np.zeros(feats.shape[1])
                for iy in range(gh):
                    yy = y0 + ph * bin_h + (iy + 0.5) * bin_h / gh
                    for ix in range(gw):
                        xx = x0 + pw * bin_w + (ix + 0.5) * bin_w / gw
                        acc += _roi_bilinear(img, yy, xx)
                out[r, :, ph, pw] = acc / (gh * gw)
    return out


@_how("NumPy float64 (levels exact)")
def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale, pixel_offset=False,
                             rois_num=None, **_):
    """Level of a proposal = clip(floor(log2(sqrt(area) / refer_scale + 1e-8) + refer_level), min_level,
    max_level), area (w + 1)(h + 1) with pixel_offset else w h, 0 for an inverted box.  Returns, flattened:
    the proposals of each level in input order, restore_ind ([N, 1]: the position of each input proposal
    in the concatenation), and with rois_num the per-image count of each level."""
    rois = _f64(fpn_rois)
    w, h = rois[:, 2] - rois[:, 0], rois[:, 3] - rois[:, 1]
    area = (w + 1) * (h + 1) if pixel_offset else w * h
    area = np.where((w < 0) | (h < 0), 0.0, area)
    with np.errstate(divide="ignore"):
        level = np.floor(np.log2(np.sqrt(area) / float(refer_scale) + 1e-8) + int(refer_level))
    level = np.clip(level, int(min_level), int(max_level)).astype(np.int64)
    levels = range(int(min_level), int(max_level) + 1)
    order = [np.nonzero(level == lvl)[0] for lvl in levels]
    concat = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    restore = np.empty_like(concat)
    restore[concat] = np.arange(concat.size)
    outs = [rois[idx] for idx in order] + [restore.reshape(-1, 1)]
    if rois_num is not None:
        counts = _arr(rois_num).astype(np.int64).reshape(-1)
        image = np.repeat(np.arange(counts.size), counts)
        outs += [np.bincount(image[level == lvl], minlength=counts.size) for lvl in levels]
    return tuple(outs)


@_how("NumPy float64, max-shifted softmax")
def softmax_mask_fuse(x, mask, **_):
    """softmax(x + mask) over the last dimension."""
    z = _f64(x) + _f64(mask)
    return np.exp(_log_softmax(z, z.ndim - 1))


# ---------------------------------------------------------------- Tensor.__getitem__


def _numpy_index(item):
    """Paddle's index rules in NumPy terms: a list is ONE advanced index (Paddle calls paddle.to_tensor on
    it; numpy >= 1.23 reads it the same way), a list holding arrays is their stack; tuples index axis by
    axis; integer arrays of any width index, bool arrays mask; ints, slices, None and Ellipsis as Python's."""
    if isinstance(item, list):
        if any(isinstance(v, np.ndarray) for v in item):
            return np.stack([np.asarray(v).astype(np.int64) for v in item])
        return np.asarray(item)
    if isinstance(item, tuple):
        return tuple(_numpy_index(v) for v in item)
    if isinstance(item, np.ndarray) and item.dtype.kind in "iu":
        return item.astype(np.int64)
    return item


@_how("NumPy indexing (exact)")
def getitem(x, item, **_):
    """x[item] under Paddle's documented (numpy-like) indexing, a list read as one advanced index."""
    return np.asarray(x)[_numpy_index(item)].copy()
