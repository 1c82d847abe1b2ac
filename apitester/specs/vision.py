"""Vision-op specs (paddle.vision.ops.*), written in plain Torch ops: torchvision does not
import beside the installed torch, so deformable convolution, RoIAlign and FPN proposal
distribution are composed here following Paddle's CPU kernels (the same bilinear rules
as torchvision)."""

from __future__ import annotations

import math

import numpy as np

from ..inputs import precondition
from ..vocab import AdaptationKind
from .base import Adaptation, Spec, maps_arguments, register
from ..references import as_array, as_float64, reference as how
from ._helpers import ntuple as _ntuple


# ---------------------------------------------------------------- independent references (Spec.ref)
# NumPy / mpmath, never torch or paddle (apitester.references: the calling convention and the helpers)


def _bilinear_dcn_ref(img, py, px):
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


@how("NumPy float64 bilinear sampling and grouped matmul")
def _ref_deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1, deformable_groups=1, groups=1,
                  mask=None, **_):
    """Deformable convolution v1 (mask None) / v2: kernel tap (i, j) of output (ho, wo) samples x
    bilinearly at (ho*stride - pad + i*dil + dy, wo*stride - pad + j*dil + dx), offsets laid out
    [N, dg*kh*kw*2 (dy, dx), Ho, Wo], times the mask; then a grouped product with the weight, + bias."""
    x, offset, weight = as_float64(x), as_float64(offset), as_float64(weight)
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
        cols = _bilinear_dcn_ref(x[b].reshape(dg, c // dg, height, width), py, px).reshape(dg, c // dg, taps, ho * wo)
        if mask is not None:
            cols = cols * as_float64(mask)[b].reshape(dg, 1, taps, ho * wo)
        cols = cols.reshape(groups, (c // groups) * taps, ho * wo)
        out[b] = np.matmul(w, cols).reshape(c_out, ho, wo)
    if bias is not None:
        out = out + as_float64(bias).reshape(1, -1, 1, 1)
    return out


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


@how("NumPy float64 bilinear samples averaged per bin")
def _ref_roi_align(x, boxes, boxes_num, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=True, **_):
    """RoIAlign (Paddle's documentation and CPU kernel): per box a pooled_h x pooled_w grid of bins, each the
    mean of a grid of bilinear samples at the sub-bin centres -- sampling_ratio per side, or
    ceil(roi size / pooled size) when <= 0; aligned shifts the box by -0.5 pixel, an unaligned box is at
    least 1 x 1."""
    feats = as_float64(x)
    rois_in = as_float64(boxes)
    pooled_h, pooled_w = _ntuple(output_size, 2, "output_size")
    counts = as_array(boxes_num).astype(np.int64).reshape(-1)
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


@how("NumPy float64 (levels exact)")
def _ref_distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale, pixel_offset=False,
                             rois_num=None, **_):
    """Level of a proposal = clip(floor(log2(sqrt(area) / refer_scale + 1e-8) + refer_level), min_level,
    max_level), area (w + 1)(h + 1) with pixel_offset else w h, 0 for an inverted box.  Returns, flattened:
    the proposals of each level in input order, restore_ind ([N, 1]: the position of each input proposal
    in the concatenation), and with rois_num the per-image count of each level."""
    rois = as_float64(fpn_rois)
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
        counts = as_array(rois_num).astype(np.int64).reshape(-1)
        image = np.repeat(np.arange(counts.size), counts)
        outs += [np.bincount(image[level == lvl], minlength=counts.size) for lvl in levels]
    return tuple(outs)


# ---------------------------------------------------------------- input domains


def _array_dtype(name):
    return "float32" if name == "bfloat16" else name


def roi_boxes(image: str = "x", scale: str | None = "spatial_scale"):
    """Boxes [x1, y1, x2, y2] inside the input image (feature map size / spatial_scale),
    each side between 5% and 60% of the image."""

    def domain(ctx):
        n = ctx.shape[0] if ctx.shape else 0
        fmap = ctx.args[image].shape
        s = float(ctx.args.get(scale) or 1.0) if scale else 1.0
        height, width = fmap[-2] / s, fmap[-1] / s
        w = ctx.rng.uniform(0.05, 0.6, n) * width
        h = ctx.rng.uniform(0.05, 0.6, n) * height
        x1 = ctx.rng.uniform(0, 1, n) * (width - w)
        y1 = ctx.rng.uniform(0, 1, n) * (height - h)
        boxes = np.stack([x1, y1, x1 + w, y1 + h], axis=-1) if n else np.zeros((0, 4))
        return boxes.reshape(ctx.shape).astype(_array_dtype(ctx.dtype))

    return precondition("boxes inside the image")(domain)


@precondition("proposals spread over every FPN level")
def fpn_rois(ctx):
    """Proposals whose sqrt(area) spreads log-uniformly over 16..1024 pixels, so every
    FPN level (refer_scale 224 at refer_level 4 -> levels 2..5+) gets some boxes."""
    n = ctx.shape[0] if ctx.shape else 0
    side = np.exp(ctx.rng.uniform(np.log(16), np.log(1024), n))
    aspect = np.exp(ctx.rng.uniform(-0.7, 0.7, n))
    w, h = side * aspect, side / aspect
    x1 = ctx.rng.uniform(0, 512, n)
    y1 = ctx.rng.uniform(0, 512, n)
    boxes = np.stack([x1, y1, x1 + w, y1 + h], axis=-1) if n else np.zeros((0, 4))
    return boxes.reshape(ctx.shape).astype(_array_dtype(ctx.dtype))


def counts_summing_to(of: str):
    """Per-image box counts: a random split of ``of``'s row count over ctx.shape[0] images."""

    def domain(ctx):
        total = ctx.args[of].shape[0] if ctx.args[of].shape else 0
        parts = ctx.shape[0] if ctx.shape else 1
        cuts = np.sort(ctx.rng.integers(0, total + 1, max(parts - 1, 0)))
        counts = np.diff(np.concatenate([[0], cuts, [total]]))
        return counts.reshape(ctx.shape).astype(ctx.dtype)

    return precondition("per-image counts summing to the box count")(domain)


# ---------------------------------------------------------------- deform_conv2d


def _pair(v):
    if isinstance(v, (list, tuple)):
        return (int(v[0]), int(v[1])) if len(v) > 1 else (int(v[0]), int(v[0]))
    return int(v), int(v)


def _bilinear_dcn(img, py, px):
    """Paddle's DmcnIm2colBilinear: img [G, C, H, W], py/px [G, P] sample positions ->
    [G, C, P]; a sample outside (-1, H) x (-1, W) is 0, corners outside the map are 0."""
    import torch

    groups, channels, height, width = img.shape
    flat = img.reshape(groups, channels, height * width)
    inside = (py > -1) & (px > -1) & (py < height) & (px < width)
    y0f, x0f = torch.floor(py), torch.floor(px)
    ly, lx = py - y0f, px - x0f
    hy, hx = 1 - ly, 1 - lx
    y0, x0 = y0f.long(), x0f.long()
    y1, x1 = y0 + 1, x0 + 1
    out = 0
    for yy, xx, weight in ((y0, x0, hy * hx), (y0, x1, hy * lx), (y1, x0, ly * hx), (y1, x1, ly * lx)):
        valid = inside & (yy >= 0) & (yy <= height - 1) & (xx >= 0) & (xx <= width - 1)
        idx = (yy.clamp(0, height - 1) * width + xx.clamp(0, width - 1))
        vals = torch.gather(flat, 2, idx[:, None, :].expand(groups, channels, idx.shape[-1]))
        out = out + vals * (weight * valid)[:, None, :]
    return out


def _deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1,
                   deformable_groups=1, groups=1, mask=None, **_):
    """Deformable convolution v1 (mask None) / v2: every kernel tap (i, j) of output
    (ho, wo) samples x bilinearly at (ho*stride - pad + i*dil + dy, wo*stride - pad +
    j*dil + dx), offsets laid out [N, dg*kh*kw*2 (dy, dx), Ho, Wo], times the mask; then a
    grouped matmul with the weight. Loops over the batch to bound memory."""
    import torch
    import torch.utils.checkpoint

    dtype = x.dtype
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    n, c, height, width = x.shape
    c_out, c_per_group, kh, kw = weight.shape
    ho = (height + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    wo = (width + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    taps = kh * kw
    dg = deformable_groups
    base_y = (torch.arange(ho) * sh - ph)[None, :, None] + (torch.arange(kh) * dh).repeat_interleave(kw)[:, None, None]
    base_x = (torch.arange(wo) * sw - pw)[None, None, :] + (torch.arange(kw) * dw).repeat(kh)[:, None, None]
    w = weight.to(dtype).reshape(groups, c_out // groups, c_per_group * taps)

    def one_image(img, off, msk, w):
        off = off.to(dtype).reshape(dg, taps, 2, ho, wo)
        py = (base_y.to(dtype) + off[:, :, 0]).reshape(dg, -1)
        px = (base_x.to(dtype) + off[:, :, 1]).reshape(dg, -1)
        cols = _bilinear_dcn(img.reshape(dg, c // dg, height, width), py, px)  # [dg, C/dg, K*Ho*Wo]
        cols = cols.reshape(dg, c // dg, taps, ho * wo)
        if msk is not None:
            cols = cols * msk.to(dtype).reshape(dg, 1, taps, ho * wo)
        cols = cols.reshape(groups, (c // groups) * taps, ho * wo)
        return torch.bmm(w, cols).reshape(c_out, ho, wo)

    # per image, recomputed in backward (checkpoint): the sampled columns are 9x the input
    grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (x, offset, weight, mask))
    outs = []
    for b in range(n):
        args = (x[b], offset[b], None if mask is None else mask[b], w)
        if grad:
            outs.append(torch.utils.checkpoint.checkpoint(one_image, *args, use_reentrant=False))
        else:
            outs.append(one_image(*args))
    out = torch.stack(outs) if outs else x.new_zeros((0, c_out, ho, wo))
    if bias is not None:
        out = out + bias.to(dtype).reshape(1, -1, 1, 1)
    return out


# ---------------------------------------------------------------- roi_align


def _roi_align(x, boxes, boxes_num, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=True, **_):
    """RoIAlign as in Paddle's CPU kernel (= torchvision's): per box, a pooled_h x pooled_w
    grid of bins, each averaging a grid of bilinear samples (sampling_ratio per side, or
    ceil(roi size / pooled size) when <= 0); aligned shifts boxes by -0.5 pixel, unaligned
    boxes are at least 1x1. Computed in float32 for float16 inputs; boxes with the same
    sampling grid are processed together in chunks."""
    import torch

    pooled_h, pooled_w = _pair(output_size)
    work = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    feats = x.to(work)
    batch, channels, height, width = feats.shape
    n_rois = boxes.shape[0]
    batch_of = torch.repeat_interleave(torch.arange(boxes_num.numel()), boxes_num.reshape(-1).long())
    # boxes are constants for RoIAlign: neither Paddle's kernel nor torchvision's gives
    # them a gradient (the sampling grid's dependence on them is not differentiated)
    rois = boxes.detach().to(work) * spatial_scale - (0.5 if aligned else 0.0)
    roi_w, roi_h = rois[:, 2] - rois[:, 0], rois[:, 3] - rois[:, 1]
    if not aligned:
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    bin_h, bin_w = roi_h / pooled_h, roi_w / pooled_w
    if sampling_ratio > 0:
        grid_h = torch.full((n_rois,), sampling_ratio, dtype=torch.long)
        grid_w = grid_h.clone()
    else:
        grid_h = torch.ceil(roi_h / pooled_h).long()
        grid_w = torch.ceil(roi_w / pooled_w).long()
    done_idx, done_vals = [], []
    flat = feats.permute(0, 2, 3, 1).reshape(batch * height * width, channels)  # row gathers
    for gh, gw in sorted(set(zip(grid_h.tolist(), grid_w.tolist()))):
        members = torch.nonzero((grid_h == gh) & (grid_w == gw)).reshape(-1)
        if gh <= 0 or gw <= 0:  # an empty sampling grid averages nothing: the bins are 0
            done_idx.append(members)
            done_vals.append(feats.new_zeros((members.numel(), channels, pooled_h, pooled_w)))
            continue
        samples = pooled_h * gh * pooled_w * gw
        chunk = max(1, (1 << 24) // max(channels * samples, 1))
        for start in range(0, members.numel(), chunk):
            idx = members[start:start + chunk]
            iy = (torch.arange(gh, dtype=work) + 0.5) / gh
            ix = (torch.arange(gw, dtype=work) + 0.5) / gw
            ys = rois[idx, 1, None, None] + (torch.arange(pooled_h, dtype=work)[None, :, None] + iy) * bin_h[idx, None, None]
            xs = rois[idx, 0, None, None] + (torch.arange(pooled_w, dtype=work)[None, :, None] + ix) * bin_w[idx, None, None]
            r = idx.numel()
            yy = ys[:, :, :, None, None].expand(r, pooled_h, gh, pooled_w, gw).reshape(r, -1)
            xx = xs[:, None, None, :, :].expand(r, pooled_h, gh, pooled_w, gw).reshape(r, -1)
            vals = _bilinear_roi(flat, batch_of[idx], yy, xx, height, width)  # [r, P, C]
            vals = vals.reshape(r, pooled_h, gh, pooled_w, gw, channels).sum(dim=(2, 4)) / max(gh * gw, 1)
            done_idx.append(idx)
            done_vals.append(vals.permute(0, 3, 1, 2))
    if not done_idx:
        return feats.new_zeros((0, channels, pooled_h, pooled_w)).to(x.dtype)
    order = torch.argsort(torch.cat(done_idx))
    return torch.cat(done_vals)[order].to(x.dtype)


def _bilinear_roi(flat, image, y, x, height, width):
    """RoIAlign's bilinear rule on flat channels-last features [B*H*W, C] at y, x [R, P]
    of images image [R]: outside [-1, H] x [-1, W] -> 0; clamp to >= 0; at the last
    row/column both corners collapse onto it. Returns [R, P, C]."""
    import torch

    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y = y.clamp(min=0)
    x = x.clamp(min=0)
    y_low = torch.floor(y).long()
    x_low = torch.floor(x).long()
    y_edge = y_low >= height - 1
    x_edge = x_low >= width - 1
    y_low = torch.where(y_edge, torch.full_like(y_low, height - 1), y_low)
    x_low = torch.where(x_edge, torch.full_like(x_low, width - 1), x_low)
    y_high = torch.where(y_edge, y_low, y_low + 1)
    x_high = torch.where(x_edge, x_low, x_low + 1)
    y = torch.where(y_edge, y_low.to(y.dtype), y)
    x = torch.where(x_edge, x_low.to(x.dtype), x)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    keep = (~outside).to(flat.dtype)
    base = (image * height * width)[:, None]
    out = 0
    for yi, xi, wgt in ((y_low, x_low, hy * hx), (y_low, x_high, hy * lx), (y_high, x_low, ly * hx), (y_high, x_high, ly * lx)):
        gathered = flat[(base + yi * width + xi).reshape(-1)].reshape(*yi.shape, flat.shape[1])
        out = out + gathered * (wgt * keep)[..., None]
    return out


# ---------------------------------------------------------------- distribute_fpn_proposals


def _distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale,
                              pixel_offset=False, rois_num=None, **_):
    """Level of each proposal = clip(floor(log2(sqrt(area) / refer_scale + 1e-8) +
    refer_level), min_level, max_level) (area 0 for an inverted box; +1 per side with
    pixel_offset); per level the proposals in input order, restore_ind mapping the
    concatenation back to input order ([N, 1] int32), and per-level per-image counts."""
    import torch

    rois = fpn_rois
    w = rois[:, 2] - rois[:, 0]
    h = rois[:, 3] - rois[:, 1]
    if pixel_offset:
        area = (w + 1) * (h + 1)
    else:
        area = w * h
    area = torch.where((w < 0) | (h < 0), torch.zeros_like(area), area)
    scale = torch.sqrt(area.double())
    level = torch.floor(torch.log2(scale / refer_scale + 1e-8) + refer_level).long()
    level = level.clamp(min_level, max_level)
    levels = range(min_level, max_level + 1)
    multi, order = [], []
    for lvl in levels:
        idx = torch.nonzero(level == lvl).reshape(-1)
        multi.append(rois.index_select(0, idx))
        order.append(idx)
    concat_order = torch.cat(order) if order else torch.zeros(0, dtype=torch.long)
    restore = torch.empty_like(concat_order)
    restore[concat_order] = torch.arange(concat_order.numel())
    restore = restore.reshape(-1, 1).to(torch.int32)
    nums = None
    if rois_num is not None:
        image = torch.repeat_interleave(torch.arange(rois_num.numel()), rois_num.reshape(-1).long())
        nums = [torch.bincount(image[level == lvl], minlength=rois_num.numel()).to(torch.int32) for lvl in levels]
    return multi, restore, nums


def _flatten_fpn(out):
    """(multi_rois list, restore_ind, rois_num_per_level list | None) -> flat tuple."""
    multi, restore, nums = out
    return (*multi, restore, *(nums or ()))


# ---------------------------------------------------------------- entries

register(
    Spec(
        api="paddle.vision.ops.deform_conv2d",
        torch=_deform_conv2d,
        ref=_ref_deform_conv2d,
        note="Composed in Torch ops (no torchvision): bilinear sampling at offset kernel taps "
        "(Paddle's DmcnIm2colBilinear border rules), optional modulation mask, grouped "
        "matmul with the weight, + bias.", adaptations=maps_arguments("x, offset, weight, bias, stride, padding, dilation, deformable_groups, groups, mask -> bilinear samples at the offset kernel taps (Paddle's border rules), modulated by mask, grouped matmul with weight, + bias"),
    ),
    Spec(
        api="paddle.vision.ops.roi_align",
        torch=_roi_align,
        ref=_ref_roi_align,
        domains={"boxes": roi_boxes(), "boxes_num": counts_summing_to("boxes")},
        note="Composed in Torch ops (no torchvision): per-box bins averaging bilinear samples "
        "(adaptive sampling grid when sampling_ratio <= 0, aligned half-pixel shift). Boxes "
        "drawn inside the image; boxes_num a split of the box count; boxes get no gradient "
        "(as in Paddle's and torchvision's kernels).",
        adaptations=maps_arguments("composed in Torch ops: torchvision is not installed") + (
            Adaptation(AdaptationKind.REFERENCE_PRECISION, "float16/bfloat16 features are sampled in float32 and cast "
                       "back, as the CPU kernel does; no plain Torch call exists"),),
    ),
    Spec(
        api="paddle.vision.ops.distribute_fpn_proposals",
        torch=_distribute_fpn_proposals,
        ref=_ref_distribute_fpn_proposals,
        outputs=_flatten_fpn,
        domains={"fpn_rois": fpn_rois, "rois_num": counts_summing_to("fpn_rois")},
        backward=False,
        note="Composed: FPN level from sqrt(area) (log2 rule of Paddle's kernel), per-level "
        "proposals in input order, restore index, per-image counts per level; outputs "
        "flattened to (rois per level..., restore_ind, counts per level...).", adaptations=maps_arguments("fpn_rois, min_level, max_level, refer_level, refer_scale, rois_num -> the FPN level from sqrt(area) (Paddle's log2 rule), per-level rois in input order, restore index, per-image counts"),
    ),
)
