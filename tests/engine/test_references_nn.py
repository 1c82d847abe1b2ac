"""The independent references (``Spec.ref``, beside their specs in apitester/specs/<family>.py) of the nn.functional, vision,
indexing, fused and geometric specs, on real paddle 3.3.1 + torch 2.13 (CPU).

1. Every CPU-board API whose spec lives in those modules declares a ``ref`` (gumbel_softmax excepted:
   a random API has no element-wise value).
2. On small float64 configs written here, where Paddle and Torch agree, the reference agrees with both
   at a tight tolerance (every spec of those modules with a ``ref`` has at least one such config).
3. The conventions a reference has to get right, each on a constructed case of known answer:
   cosine_similarity's eps clamp and its mpmath accumulation, embedding's zeroed padding rows,
   send_ue_recv's empty rows and exact mean, strided_slice's clamped negative strides, Paddle's float32
   attributes (hardsigmoid, interpolate), and the combinations a reference refuses.
"""

from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from apitester.engine import trial
from apitester import inputs as inp
from apitester.diagnosis import sides
import inspect
from types import SimpleNamespace

from apitester.specs import fused, geometric, indexing, nn_functional, vision
from apitester.reports import TASK_NAME_ALIASES
from apitester.specs import all_specs, get_spec
from tests.engine_helpers.cpu_kernels import require_kernel

BOARD = Path(__file__).resolve().parents[2] / "fixtures" / "board.json"
MODULES = ("nn_functional", "vision", "indexing", "fused", "geometric")
NN = "paddle.nn.functional."
# Board APIs of these modules without a reference, and why.
NO_REF = {NN + "gumbel_softmax": "random: samples have no element-wise value"}
# Every spec of these modules without a reference, and why (GPU-task APIs included).
_GPU_ONLY = "a GPU-only Paddle kernel: no CPU run of this engine could check a reference against it"
NO_REF_ANYWHERE = {
    **NO_REF,
    "paddle.incubate.nn.functional.fused_bias_act": _GPU_ONLY,
    "paddle.incubate.nn.functional.fused_bias_dropout_residual_layer_norm": _GPU_ONLY,
    "paddle.incubate.nn.functional.fused_linear": _GPU_ONLY,
    "paddle.incubate.nn.functional.fused_linear_activation": _GPU_ONLY,
    "paddle.incubate.nn.functional.fused_multi_head_attention": _GPU_ONLY,
    "paddle.incubate.nn.functional.fused_rotary_position_embedding": _GPU_ONLY,
    "paddle.incubate.nn.functional.variable_length_memory_efficient_attention": _GPU_ONLY,
}


# The references by API name (``R.conv2d`` is nn_functional's ``_ref_conv2d``): each sits beside its family's specs.
FAMILIES = (nn_functional, vision, indexing, fused, geometric)
R = SimpleNamespace(**{name[len("_ref_"):]: value for family in FAMILIES for name, value in vars(family).items()
                       if name.startswith("_ref_")})

_SOURCES = {name: (Path(__file__).resolve().parents[2] / "apitester" / "specs" / f"{name}.py").read_text(encoding="utf-8")
            for name in MODULES}


def _module(spec) -> str:
    """The spec module declaring ``spec``: its reference's module, or (a torch_call wrapper, defined in
    base.py) the module whose source names the API."""
    name = getattr(spec.torch, "__module__", "").rsplit(".", 1)[-1]
    if name in MODULES:
        return name
    return next((m for m, text in _SOURCES.items() if f'api="{spec.api}"' in text), name)


def _run(config: str, *, high: bool = True, seed: int = 0):
    """(paddle outputs, torch outputs, ref outputs) of one typical draw: the sides on the float64
    upcast inputs (``high``) or at the config's dtypes, the ref on the upcast inputs."""
    prep = trial.prepare(config)
    low, _ = inp.materialise_draw(prep.parsed, prep.spec.domains, inp.Draw(inp.TYPICAL, seed))
    upcast = sides.upcast(low)
    sides_on = upcast if high else low
    paddle = sides.run_side("paddle", prep, trial.copy_inputs(sides_on))
    torch = sides.run_side("torch", prep, trial.copy_inputs(sides_on))
    assert not paddle.error and not torch.error, (paddle.error, torch.error)
    values = {k: trial.map_tensors(v, lambda t: t.array.copy()) for k, v in upcast.items()}
    ref = prep.spec.ref(**trial.reference_kwargs(values, prep.sig))
    ref = [np.asarray(r) for r in (ref if isinstance(ref, (tuple, list)) else [ref])]
    return [o.array for o in paddle.outputs], [o.array for o in torch.outputs], ref


def _inputs(config: str, seed: int = 0) -> dict:
    """The typical draw's inputs of ``config`` as numpy arrays, by Paddle parameter name (what _run uses)."""
    prep = trial.prepare(config)
    low, _ = inp.materialise_draw(prep.parsed, prep.spec.domains, inp.Draw(inp.TYPICAL, seed))
    return {k: trial.map_tensors(v, lambda t: t.array.copy()) for k, v in sides.upcast(low).items()}


def _assert_close(actual, expected, rtol: float, what: str):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    scale = max(float(np.max(np.abs(e))) if e.size else 0.0, 1.0)
    worst = float(np.max(np.abs(a - e))) if e.size else 0.0
    assert worst <= rtol * scale, f"{what}: max |diff| {worst:.3g} > {rtol:g} * {scale:.3g}"


# ---------------------------------------------------------------- 1. coverage


def test_every_cpu_board_api_of_these_modules_has_a_ref():
    rows = json.loads(BOARD.read_text(encoding="utf-8"))
    apis = {r["fields"]["api"] for r in rows if r["model"] == "tracker.task" and r["fields"]["kernel"] == "CPU"}
    specs = {api: get_spec(TASK_NAME_ALIASES.get(api, api)) for api in apis}
    ours = {api: spec for api, spec in specs.items() if spec is not None and _module(spec) in MODULES}
    assert len(ours) >= 19, sorted(ours)
    missing = sorted(api for api, spec in ours.items() if spec.ref is None and api not in NO_REF)
    assert missing == [], f"CPU-board APIs without a ref: {missing}"
    for api in NO_REF:
        assert get_spec(api).random and get_spec(api).ref is None


def test_the_specs_without_a_ref_are_the_listed_ones():
    without = {api for api, spec in all_specs().items() if _module(spec) in MODULES and spec.ref is None}
    assert without == set(NO_REF_ANYWHERE)


def test_references_live_beside_their_family_and_use_neither_framework():
    for api, spec in all_specs().items():
        if spec.ref is not None and _module(spec) in MODULES:
            assert spec.ref.__module__ == f"apitester.specs.{_module(spec)}", api
            source = inspect.getsource(spec.ref)
            assert not any(word in source for word in ("import torch", "import paddle", "load_torch", "load_functional")), api


# ---------------------------------------------------------------- 2. agreement with both frameworks

AGREE = [
    NN + 'cosine_similarity(Tensor([5, 1, 3],"float64"), Tensor([1, 3],"float64"), axis=0, eps=1e-08, )',
    NN + 'cosine_similarity(Tensor([4, 6],"float64"), Tensor([4, 6],"float64"), )',
    NN + 'hardsigmoid(Tensor([4, 5],"float64"), slope=0.25, offset=0.5, )',
    NN + 'linear(x=Tensor([3, 10],"float64"), weight=Tensor([10, 4],"float64"), bias=Tensor([4],"float64"), )',
    NN + 'embedding(Tensor([3, 4],"int64"), Tensor([10, 4],"float64"), padding_idx=-4, )',
    NN + 'embedding(Tensor([3, 4],"int64"), Tensor([10, 4],"float64"), max_norm=0.5, )',
    NN + 'conv1d(Tensor([2, 4, 11],"float64"), Tensor([6, 4, 3],"float64"), bias=Tensor([6],"float64"), padding=2, '
         'stride=list[2,], dilation=list[1,], groups=1, data_format="NCL", )',
    NN + 'conv1d(Tensor([2, 11, 4],"float64"), Tensor([6, 2, 3],"float64"), padding="same", stride=list[1,], '
         'dilation=list[2,], groups=2, data_format="NLC", )',
    NN + 'conv2d(Tensor([2, 4, 7, 6],"float64"), Tensor([6, 2, 3, 2],"float64"), padding=list[1,0,2,1,], stride=2, '
         'groups=2, )',
    NN + 'conv2d_transpose(Tensor([2, 4, 5, 6],"float64"), Tensor([4, 3, 3, 3],"float64"), bias=Tensor([3],"float64"), '
         'padding=0, stride=2, )',
    NN + 'conv2d_transpose(Tensor([2, 5, 6, 4],"float64"), Tensor([4, 3, 3, 3],"float64"), Tensor([6],"float64"), '
         'output_size=None, padding="same", stride=1, dilation=1, groups=2, data_format="NHWC", )',
    NN + 'conv2d_transpose(Tensor([1, 4, 5, 5],"float64"), Tensor([4, 2, 3, 3],"float64"), padding=list[1,2,0,1,], '
         'stride=list[2,1,], dilation=list[2,1,], output_size=list[11,6,], )',
    NN + 'rnnt_loss(Tensor([3, 4, 3, 3],"float64"), Tensor([3, 2],"int32"), Tensor([3],"int32"), Tensor([3],"int32"), '
         'blank=0, reduction="sum", fastemit_lambda=0.0, )',
    NN + 'rnnt_loss(Tensor([2, 3, 3, 4],"float64"), Tensor([2, 2],"int32"), Tensor([2],"int32"), Tensor([2],"int32"), '
         'blank=0, reduction="none", fastemit_lambda=0.001, )',
    NN + 'grid_sample(Tensor([2, 3, 5, 6],"float64"), Tensor([2, 4, 3, 2],"float64"), mode="bilinear", '
         'padding_mode="zeros", align_corners=False, )',
    NN + 'grid_sample(Tensor([2, 3, 5, 6],"float64"), Tensor([2, 4, 3, 2],"float64"), mode="nearest", '
         'padding_mode="zeros", align_corners=False, )',
    NN + 'grid_sample(Tensor([2, 3, 5, 6],"float64"), Tensor([2, 4, 3, 2],"float64"), mode="bilinear", '
         'padding_mode="border", align_corners=True, )',
    # ratios 1/2 and 1/4: exact in float32, where Paddle keeps its resize ratio (see the float32 test below)
    NN + 'interpolate(Tensor([2, 3, 4, 4],"float64"), size=list[8,16,], mode="bilinear", align_corners=False, )',
    NN + 'interpolate(Tensor([2, 3, 4, 4],"float64"), size=list[7,9,], mode="bilinear", align_corners=True, )',
    NN + 'interpolate(Tensor([2, 4, 4, 3],"float64"), list[8,8,], mode="bilinear", align_corners=False, '
         'data_format="NHWC", )',
    NN + 'interpolate(Tensor([2, 3, 4, 5],"float64"), scale_factor=2, mode="nearest", )',
    NN + 'interpolate(Tensor([2, 3, 6, 5],"float64"), size=list[4,3,], mode="nearest", )',
    NN + 'interpolate(Tensor([2, 3, 7, 6],"float64"), size=list[3,4,], mode="area", )',
    NN + 'interpolate(Tensor([1, 2, 5, 6, 7],"float64"), size=list[2,3,5,], mode="area", )',
    NN + 'upsample(Tensor([2, 3, 4, 4],"float64"), scale_factor=2, mode="bilinear", align_corners=False, '
         'align_mode=1, )',
    NN + 'rrelu(Tensor([2, 3, 4],"float64"), lower=0.125, upper=0.375, training=False, )',
    'paddle.vision.ops.deform_conv2d(x=Tensor([2, 4, 6, 6],"float64"), offset=Tensor([2, 36, 6, 6],"float64"), '
    'weight=Tensor([4, 4, 3, 3],"float64"), bias=Tensor([4],"float64"), stride=list[1,1,], padding=list[1,1,], '
    'dilation=list[1,1,], deformable_groups=2, groups=1, mask=Tensor([2, 18, 6, 6],"float64"), )',
    'paddle.vision.ops.deform_conv2d(x=Tensor([1, 4, 7, 6],"float64"), offset=Tensor([1, 18, 4, 3],"float64"), '
    'weight=Tensor([6, 2, 3, 3],"float64"), stride=2, padding=1, dilation=1, deformable_groups=1, groups=2, )',
    'paddle.geometric.send_ue_recv(Tensor([3, 3],"float64"), Tensor([4, 1],"float64"), Tensor([4],"int32"), '
    'Tensor([4],"int32"), "sub", "mean", )',
    'paddle.geometric.send_ue_recv(Tensor([10, 5],"float64"), Tensor([15, 5],"float64"), Tensor([15],"int64"), '
    'Tensor([15],"int64"), "add", "max", None, None, )',
    'paddle.geometric.send_ue_recv(Tensor([10, 5],"float64"), Tensor([15, 5],"float64"), Tensor([15],"int64"), '
    'Tensor([15],"int64"), "mul", "sum", 12, )',
    'paddle.geometric.send_uv(Tensor([6, 4, 1],"float64"), Tensor([5, 4, 3],"float64"), Tensor([7],"int64"), '
    'Tensor([7],"int64"), "mul", )',
    'paddle.put_along_axis(Tensor([3, 5],"float64"), Tensor([2, 3],"int64"), Tensor([2, 5],"float64"), 1, "assign", '
    'True, False, )',
    'paddle.Tensor.put_along_axis(Tensor([4, 6],"float64"), Tensor([4, 3],"int64"), Tensor([4, 3],"float64"), axis=1, )',
    'paddle.put_along_axis(Tensor([4, 6],"float64"), Tensor([4, 3],"int64"), Tensor([4, 3],"float64"), 1, "mean", False, )',
    'paddle.put_along_axis(Tensor([4, 6],"float64"), Tensor([2, 6],"int64"), Tensor([2, 6],"float64"), 0, "amax", True, )',
    'paddle.put_along_axis(Tensor([4, 6],"float64"), Tensor([2, 6],"int64"), Tensor([2, 6],"float64"), 0, "mul", False, )',
    'paddle.Tensor.fill_diagonal_(Tensor([3, 3],"float64"), 4, 1, False, )',
    'paddle.Tensor.fill_diagonal_(Tensor([7, 3],"float64"), 4, 0, True, )',
    'paddle.Tensor.fill_diagonal_(Tensor([5, 4],"int64"), 2, -1, False, )',
    'paddle.Tensor.set_(Tensor([3, 8],"float64"), Tensor([6, 3],"float64"), list[3,4,], list[4,1,], 0, )',
    'paddle.strided_slice(Tensor([6, 6],"int64"), axes=list[0,1,], starts=list[8,-1,], ends=list[1,-5,], '
    'strides=list[-2,-3,], )',
    'paddle.strided_slice(x=Tensor([5, 8, 6],"float64"), axes=list[0,2,], starts=list[-9,1,], ends=list[20,-1,], '
    'strides=list[2,1,], )',
    # GPU-task APIs of these modules: the same documented semantics, checked on CPU
    NN + 'adaptive_avg_pool2d(Tensor([2, 3, 7, 7],"float64"), list[2,5,], )',
    NN + 'adaptive_avg_pool2d(Tensor([2, 7, 6, 3],"float64"), output_size=4, data_format="NHWC", )',
    NN + 'adaptive_avg_pool3d(Tensor([2, 3, 5, 7, 7],"float64"), list[2,3,5,], )',
    NN + 'adaptive_max_pool1d(Tensor([2, 3, 9],"float64"), 4, True, )',
    NN + 'adaptive_max_pool2d(x=Tensor([1, 2, 5, 5],"float64"), output_size=3, return_mask=True, )',
    NN + 'adaptive_max_pool3d(x=Tensor([1, 1, 5, 4, 5],"float64"), output_size=3, return_mask=True, )',
    NN + 'batch_norm(Tensor([2, 4, 3, 3],"float64"), Tensor([3],"float64"), Tensor([3],"float64"), Tensor([3],"float64"), '
         'Tensor([3],"float64"), training=True, momentum=0.9, epsilon=1e-05, data_format="NHWC", use_global_stats=True, )',
    NN + 'batch_norm(Tensor([4, 3, 2, 5],"float64"), Tensor([3],"float64"), Tensor([3],"float64"), Tensor([3],"float64"), '
         'Tensor([3],"float64"), training=True, momentum=0.9, epsilon=1e-05, data_format="NCHW", )',
    NN + 'log_softmax(Tensor([2, 3, 4],"float64"), 1, )',
    NN + 'temporal_shift(x=Tensor([4, 4, 3, 3],"float64"), seg_num=2, shift_ratio=0.25, )',
    NN + 'temporal_shift(x=Tensor([4, 3, 3, 5],"float64"), seg_num=2, shift_ratio=0.4, data_format="NHWC", )',
    NN + 'one_hot(Tensor([2, 6],"int64"), 5, )',
    NN + 'binary_cross_entropy(Tensor([6, 4],"float64"), Tensor([6, 4],"float64"), weight=Tensor([4],"float64"), '
         'reduction="sum", )',
    NN + 'binary_cross_entropy_with_logits(Tensor([5, 3],"float64"), Tensor([5, 3],"float64"), weight=Tensor([3],"float64"), '
         'reduction="none", pos_weight=Tensor([3],"float64"), )',
    NN + 'cross_entropy(Tensor([8, 5],"float64"), Tensor([8, 5],"float64"), soft_label=True, )',
    NN + 'cross_entropy(Tensor([4, 4, 7],"float64"), Tensor([4, 4],"int64"), reduction="none", )',
    NN + 'cross_entropy(Tensor([6, 5],"float64"), Tensor([6, 1],"int64"), weight=Tensor([5],"float64"), )',
    NN + 'softmax_with_cross_entropy(Tensor([2, 4, 3, 5],"float64"), Tensor([2, 1, 3, 5],"int64"), axis=1, )',
    NN + 'softmax_with_cross_entropy(Tensor([3, 6],"float64"), Tensor([3, 6],"float64"), soft_label=True, '
         'return_softmax=True, )',
    NN + 'dice_loss(Tensor([5, 2],"float64"), label=Tensor([5, 1],"int64"), epsilon=1e-05, )',
    NN + 'kl_div(Tensor([5, 20],"float64"), Tensor([5, 20],"float64"), "mean", False, )',
    NN + 'kl_div(Tensor([4, 6],"float64"), Tensor([4, 6],"float64"), "batchmean", True, )',
    NN + 'smooth_l1_loss(Tensor([4, 3, 2],"float64"), Tensor([4, 3, 2],"float64"), reduction="none", delta=0.5, )',
    NN + 'sigmoid_focal_loss(Tensor([6, 4],"float64"), Tensor([6, 4],"float64"), alpha=0.25, gamma=2.0, reduction="none", )',
    # C = 4: Paddle's float32 margin^p / C is exact (see FINDINGS for C = 3)
    NN + 'multi_margin_loss(Tensor([5, 4],"float64"), Tensor([5],"int64"), p=1, margin=1.0, weight=Tensor([4],"float64"), '
         'reduction="mean", )',
    NN + 'gaussian_nll_loss(Tensor([10, 2],"float64"), Tensor([10, 2],"float64"), Tensor([10, 2],"float64"), True, 1e-06, '
         '"sum", )',
    NN + 'gaussian_nll_loss(Tensor([10, 2],"float64"), Tensor([10, 2],"float64"), Tensor([10],"float64"), full=False, '
         'reduction="none", )',
    'paddle.scatter(Tensor([6, 3],"float64"), Tensor([4],"int64"), Tensor([4, 3],"float64"), )',
    'paddle.scatter(Tensor([6, 3],"float64"), Tensor([4],"int64"), Tensor([4, 3],"float64"), overwrite=False, )',
    'paddle.index_put(Tensor([10, 11],"float64"), tuple(Tensor([5],"int32"),Tensor([5],"int32"),), Tensor([5],"float64"), '
    'False, )',
    'paddle.index_put(Tensor([6, 4, 5, 3],"float64"), tuple(Tensor([2, 2],"int32"),Tensor([2, 2],"int32"),'
    'Tensor([5],"bool"),), Tensor([2, 2, 3],"float64"), False, )',
    NN + 'max_pool1d(Tensor([1, 3, 16],"float64"), kernel_size=3, stride=2, padding=1, return_mask=True, ceil_mode=True, )',
    NN + 'max_pool2d(Tensor([2, 3, 9, 7],"float64"), kernel_size=3, stride=2, padding=list[1,1,], return_mask=True, '
         'ceil_mode=True, )',
    NN + 'max_pool2d(Tensor([2, 9, 7, 3],"float64"), kernel_size=2, stride=2, padding="SAME", data_format="NHWC", )',
    NN + 'max_pool3d(x=Tensor([2, 3, 8, 8, 8],"float64"), kernel_size=list[3,3,3,], stride=list[3,2,1,], '
         'padding=list[1,1,1,], return_mask=True, )',
    NN + 'avg_pool3d(x=Tensor([2, 3, 8, 8, 8],"float64"), kernel_size=list[3,3,3,], stride=list[3,2,1,], '
         'padding=list[1,1,1,], exclusive=True, )',
    NN + 'avg_pool3d(Tensor([1, 2, 7, 6, 5],"float64"), kernel_size=3, stride=2, padding=1, ceil_mode=True, '
         'exclusive=False, )',
    NN + 'avg_pool3d(Tensor([1, 2, 6, 6, 5],"float64"), kernel_size=3, stride=2, padding="SAME", )',
    NN + 'avg_pool3d(Tensor([1, 2, 6, 6, 5],"float64"), kernel_size=2, stride=2, padding=0, divisor_override=4, )',
    NN + 'ctc_loss(Tensor([6, 3, 7],"float64"), Tensor([3, 3],"int32"), Tensor([3],"int64"), Tensor([3],"int64"), '
         'blank=0, reduction="none", )',
    NN + 'ctc_loss(Tensor([6, 4, 9],"float64"), Tensor([4, 3],"int32"), Tensor([4],"int64"), Tensor([4],"int64"), '
         'blank=8, reduction="mean", )',
    'paddle.diagonal_scatter(Tensor([6, 5],"float64"), Tensor([4],"float64"), offset=1, axis1=0, axis2=1, )',
    'paddle.diagonal_scatter(Tensor([3, 5, 4],"float64"), Tensor([5, 3],"float64"), offset=-1, axis1=2, axis2=0, )',
    'paddle.Tensor.fill_diagonal_tensor(Tensor([2, 4, 4],"float64"), Tensor([4, 2],"float64"), 0, 0, 1, )',
    'paddle.vision.ops.roi_align(x=Tensor([2, 3, 8, 8],"float64"), boxes=Tensor([4, 4],"float64"), '
    'boxes_num=Tensor([2],"int32"), output_size=3, spatial_scale=0.5, aligned=True, )',
    'paddle.vision.ops.roi_align(x=Tensor([2, 3, 8, 8],"float64"), boxes=Tensor([5, 4],"float64"), '
    'boxes_num=Tensor([2],"int32"), output_size=list[2,3,], spatial_scale=1.0, sampling_ratio=2, aligned=False, )',
    'paddle.vision.ops.distribute_fpn_proposals(Tensor([9, 4],"float64"), 2, 5, 4, 224, rois_num=Tensor([2],"int64"), )',
    'paddle.vision.ops.distribute_fpn_proposals(Tensor([7, 4],"float64"), 2, 4, 3, 112, pixel_offset=True, '
    'rois_num=Tensor([3],"int64"), )',
    'paddle.incubate.softmax_mask_fuse(Tensor([2, 3, 4, 5],"float64"), Tensor([2, 1, 4, 5],"float64"), )',
    'paddle.Tensor.__getitem__(Tensor([6, 5, 4],"float64"), list[list[0,2,0,1,3,],list[0,0,1,2,0,],], )',
    'paddle.Tensor.__getitem__(Tensor([6, 5, 4],"float64"), list[Tensor([5],"int64"),Tensor([5],"int64"),], )',
    'paddle.Tensor.__getitem__(Tensor([4, 5],"float64"), tuple(slice(None,2,None),1,), )',
    'paddle.Tensor.__getitem__(Tensor([4, 5, 3],"float64"), tuple(Tensor([2, 3],"int32"),slice(1,None,2),None,), )',
    'paddle.Tensor.__getitem__(Tensor([4, 5],"float64"), Tensor([4, 5],"bool"), )',
]
# Paddle's CPU kernel of fused_layer_norm is float32 only: both sides run at float32, the ref on the
# same inputs upcast, compared at float32's resolution.
AGREE_FLOAT32 = [
    'paddle.incubate.nn.functional.fused_layer_norm(Tensor([4, 16],"float32"), Tensor([16],"float32"), '
    'Tensor([16],"float32"), 1e-05, begin_norm_axis=1, bias=Tensor([16],"float32"), residual=Tensor([4, 16],"float32"), '
    'residual_alpha=0.69204696, )',
    'paddle.incubate.nn.functional.fused_layer_norm(Tensor([2, 3, 8],"float32"), Tensor([24],"float32"), None, 1e-05, '
    'begin_norm_axis=1, )',
]


def test_every_ref_of_these_modules_has_an_agreement_case():
    covered = {get_spec(c.split("(", 1)[0]).api for c in AGREE + AGREE_FLOAT32}
    with_ref = {api for api, spec in all_specs().items() if spec.ref is not None and _module(spec) in MODULES}
    assert with_ref - covered == set()


@pytest.mark.parametrize("config", AGREE, ids=lambda c: c.split("(", 1)[0].rsplit(".", 1)[-1])
def test_ref_agrees_with_both_frameworks_on_float64(config):
    paddle, torch, ref = _run(config)
    assert len(ref) == len(torch) == len(paddle)
    for i, (p, t, r) in enumerate(zip(paddle, torch, ref)):
        _assert_close(t, p, 1e-12, f"output {i}: torch vs paddle (the case must be one where they agree)")
        _assert_close(r, t, 1e-12, f"output {i}: ref vs torch")
        _assert_close(r, p, 1e-12, f"output {i}: ref vs paddle")
        if np.asarray(t).dtype.kind in "iub":  # an integer result is exact
            assert np.array_equal(r, t)


@pytest.mark.parametrize("config", AGREE_FLOAT32, ids=["residual", "weight_only"])
def test_ref_agrees_with_both_frameworks_on_a_float32_only_kernel(config):
    require_kernel("fused_layer_norm")
    paddle, torch, ref = _run(config, high=False)
    assert len(ref) == len(torch) == len(paddle)
    for i, (p, t, r) in enumerate(zip(paddle, torch, ref)):
        _assert_close(r, t, 2e-6, f"output {i}: ref vs torch")
        _assert_close(r, p, 2e-6, f"output {i}: ref vs paddle")


# Float64 configs where Paddle's result misses the documented value (a float32 intermediate, a formula): the
# reference agrees with Torch's float64 result and names Paddle's (what the oracle reads from a ref).
FINDINGS = [
    # loss.py multi_margin_loss subtracts margin**p / paddle.shape(input)[1]: an int32 shape, so the
    # quotient is float32 (1/3 -> 0.33333334) inside a float64 loss
    (NN + 'multi_margin_loss(Tensor([5, 3],"float64"), Tensor([5],"int64"), p=1, margin=1.0, reduction="none", )', 1e-9),
    # label_smoothing smooths paddle.nn.functional.one_hot's float32 labels (0.8 -> float32) before the
    # float64 product
    (NN + 'cross_entropy(Tensor([6, 5],"float64"), Tensor([6],"int64"), label_smoothing=0.25, reduction="sum", )', 1e-9),
    # not float32 but a formula: pooling.py avg_pool3d returns the (exclusive) mean * kernel volume /
    # divisor_override, which is the documented sum / divisor_override only where a window holds no padding
    (NN + 'avg_pool3d(Tensor([1, 2, 6, 6, 5],"float64"), kernel_size=3, stride=2, padding=1, divisor_override=4, )', 1e-2),
]


@pytest.mark.parametrize("config, paddle_gap", FINDINGS, ids=["multi_margin_loss", "cross_entropy_label_smoothing",
                                                            "avg_pool3d_divisor_override"])
def test_ref_names_paddle_where_its_float64_result_misses_the_documented_value(config, paddle_gap):
    paddle, torch, ref = _run(config)
    _assert_close(ref[0], torch[0], 1e-13, "ref vs torch")
    scale = max(float(np.max(np.abs(ref[0]))), 1.0)
    assert float(np.max(np.abs(ref[0] - paddle[0]))) > paddle_gap * scale


# ---------------------------------------------------------------- 3. conventions


def test_cosine_similarity_all_zero_vector_is_the_documented_finite_zero():
    """x1 . x2 / max(|x1| |x2|, eps): a zero vector gives 0 / eps = 0, never NaN."""
    x1 = np.zeros((3, 2))
    x2 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = R.cosine_similarity(x1, x2, axis=0, eps=1e-8)
    assert out.shape == (2,) and np.all(np.isfinite(out)) and np.all(out == 0.0)


def test_cosine_similarity_clamps_the_norm_product_at_eps_as_paddle_computes():
    """|x1| |x2| = 1e-10 < eps = 1e-8: Paddle's formula (common.py: w12 / sqrt(max(w1 w2, eps^2))) gives
    x1 . x2 / eps = 0.01; Torch documents x1 . x2 / (max(|x1|, eps) max(|x2|, eps)) and gives 1.  The ref
    computes Paddle's documented function: a difference here is a convention between the two, not an error."""
    import paddle
    import torch

    x = np.array([[1e-5], [0.0]])
    assert R.cosine_similarity(x, x, axis=0, eps=1e-8)[0] == pytest.approx(0.01, rel=1e-14)
    ours = paddle.nn.functional.cosine_similarity(paddle.to_tensor(x), paddle.to_tensor(x), axis=0, eps=1e-8)
    theirs = torch.nn.functional.cosine_similarity(torch.tensor(x), torch.tensor(x), dim=0, eps=1e-8)
    assert float(ours.numpy()[0]) == pytest.approx(0.01, rel=1e-12)
    assert float(theirs.numpy()[0]) == pytest.approx(1.0, rel=1e-12)


def test_cosine_similarity_gradient_at_the_clamp_from_the_ref_matches_paddle():
    """At a zero x1 column the clamp is active: d/dx1 = x2 / eps (Paddle's formula).  A central difference
    of the ref with a step inside the clamp region (1e-12; the ref evaluates in mpmath) gives it and
    matches Paddle's analytic gradient; Torch's follows its own formula (x2 / (eps |x2|))."""
    import paddle
    import torch

    rng = np.random.default_rng(0)
    x1, x2 = rng.standard_normal((5, 1, 3)), rng.standard_normal((1, 3))
    x1[:, 0, 1] = 0.0
    step = 1e-12
    numeric = []
    for k in range(5):
        up, down = x1.copy(), x1.copy()
        up[k, 0, 1], down[k, 0, 1] = step, -step
        numeric.append((R.cosine_similarity(up, x2, axis=0).sum() - R.cosine_similarity(down, x2, axis=0).sum())
                       / (2 * step))
    np.testing.assert_allclose(numeric, x2[0, 1] / 1e-8, rtol=1e-9)
    p1, p2 = paddle.to_tensor(x1, stop_gradient=False), paddle.to_tensor(x2)
    paddle.nn.functional.cosine_similarity(p1, p2, axis=0, eps=1e-8).sum().backward()
    np.testing.assert_allclose(p1.grad.numpy()[:, 0, 1], numeric, rtol=1e-9)
    t1 = torch.tensor(x1, requires_grad=True)
    torch.nn.functional.cosine_similarity(t1, torch.tensor(x2), dim=0, eps=1e-8).sum().backward()
    np.testing.assert_allclose(t1.grad.numpy()[:, 0, 1], np.sign(x2[0, 1]) / (1e-8 * math.sqrt(5)), rtol=1e-9)


def test_cosine_similarity_accumulates_in_mpmath_where_float64_cancels():
    """x1 . x2 = 1e16 + 1 - 1e16 = 1 exactly; a float64 sum loses the 1 and gives 0."""
    x1 = np.array([1e8, 1.0, -1e8])
    x2 = np.array([1e8, 1.0, 1e8])
    assert float(np.dot(x1, x2)) == 0.0  # the float64 cancellation the reference avoids
    with mpmath.workdps(50):
        norm = mpmath.mpf(2 * 10**16 + 1)  # |x1|^2 = |x2|^2
        expected = float(1 / mpmath.sqrt(norm * norm))
    assert R.cosine_similarity(x1, x2, axis=0) == expected != 0.0


def test_embedding_zeroes_padding_rows_where_plain_torch_keeps_them():
    """Paddle documents an all-zero output row at padding_idx (negative: counted from the end)."""
    weight = np.arange(12, dtype=np.float64).reshape(4, 3) + 1
    ids = np.array([[0, 3], [2, 3]])
    out = R.embedding(ids, weight, padding_idx=-1)
    assert np.array_equal(out[:, 1], np.zeros((2, 3)))
    assert np.array_equal(out[0, 0], weight[0]) and np.array_equal(out[1, 0], weight[2])


def test_send_ue_recv_rows_without_edges_are_zero_and_the_mean_is_exact():
    x = np.array([[1e16], [1.0], [-1e16], [7.0]])
    y = np.zeros((3, 1))
    src, dst = np.array([0, 1, 2]), np.array([1, 1, 1])
    mean = R.send_ue_recv(x, y, src, dst, "add", "mean")
    assert mean[1, 0] == float(Fraction(1, 3))  # (1e16 + 1 - 1e16) / 3, exact; float64 order gives 0
    assert mean[0, 0] == mean[2, 0] == mean[3, 0] == 0.0
    top = R.send_ue_recv(x, y, src, dst, "add", "max")
    assert top[1, 0] == 1e16 and np.all(top[[0, 2, 3], 0] == 0.0)  # no -inf for rows that receive nothing


def test_strided_slice_clamps_like_numpy_with_negative_strides():
    x = np.arange(6)
    assert R.strided_slice(x, axes=[0], starts=[8], ends=[1], strides=[-2]).tolist() == [5, 3]
    assert R.strided_slice(x, axes=[0], starts=[-9], ends=[20], strides=[2]).tolist() == [0, 2, 4]


def test_fill_diagonal_wraps_on_tall_matrices_and_shifts_by_offset():
    out = R.fill_diagonal_(np.zeros((7, 3)), 1.0, offset=0, wrap=True)
    assert np.argwhere(out == 1).tolist() == [[0, 0], [1, 1], [2, 2], [4, 0], [5, 1], [6, 2]]
    shifted = R.fill_diagonal_(np.zeros((3, 3)), 1.0, offset=1)
    assert np.argwhere(shifted == 1).tolist() == [[0, 1], [1, 2]]


def test_paddle_keeps_float_attributes_in_float32_and_the_ref_names_it():
    """hardsigmoid's slope 0.2 and the bilinear resize ratio 4/7 are float32 attributes in Paddle's
    kernels: its float64 result misses the documented value by ~1e-9..1e-7 while Torch's matches the
    reference; with the slope rounded to float32 the reference reproduces Paddle exactly."""
    paddle, torch, ref = _run(NN + 'hardsigmoid(Tensor([4, 5],"float64"), slope=0.2, offset=0.5, )')
    _assert_close(ref[0], torch[0], 1e-15, "ref vs torch")
    assert np.max(np.abs(ref[0] - paddle[0])) > 1e-10
    x = _inputs(NN + 'hardsigmoid(Tensor([4, 5],"float64"), slope=0.2, offset=0.5, )')["x"]
    np.testing.assert_allclose(R.hardsigmoid(x, slope=float(np.float32(0.2)), offset=0.5), paddle[0], rtol=1e-15)

    paddle, torch, ref = _run(NN + 'interpolate(Tensor([1, 2, 4, 4],"float64"), size=list[7,7,], mode="bilinear", '
                                   'align_corners=False, )')
    _assert_close(ref[0], torch[0], 1e-13, "ref vs torch")
    assert np.max(np.abs(ref[0] - paddle[0])) > 1e-9


def test_interpolate_nearest_takes_floor_of_dst_times_scale():
    x = np.arange(5, dtype=np.float64).reshape(1, 1, 1, 5)
    out = R.interpolate(x, size=[1, 3], mode="nearest")
    assert out.reshape(-1).tolist() == [0.0, 1.0, 3.0]  # floor(k * 5/3): 0, 1, 3


def test_geometric_div_is_x_over_y_where_paddle_adds_an_epsilon():
    """message_op "div" documents x / y; Paddle multiplies by 1 / (y + 1e-12).  Where y is small the
    reference sides with Torch's x / y, and Paddle's value is exactly the epsilon's."""
    config = ('paddle.geometric.send_ue_recv(Tensor([10, 5],"float64"), Tensor([15, 5],"float64"), '
              'Tensor([15],"int64"), Tensor([15],"int64"), "div", "sum", 12, )')
    paddle, torch, ref = _run(config)
    _assert_close(ref[0], torch[0], 1e-14, "ref vs torch")
    assert np.max(np.abs(ref[0] - paddle[0])) > 1e-11
    x, y = np.array([[1.0], [2.0]]), np.array([[1e-3], [3.0], [1e-6]])
    src, dst = np.array([0, 1, 0]), np.array([0, 1, 1])
    exact = float(Fraction(2) / Fraction(3.0) + Fraction(1) / Fraction(1e-6))  # rounded once
    assert R.send_ue_recv(x, y, src, dst, "div", "sum")[:, 0].tolist() == [float(1 / Fraction(1e-3)), exact]
    assert R.send_uv(x, y, src, dst, "div")[:, 0].tolist() == [1000.0, 2 / 3, 1 / 3]
    args = _inputs(config)
    paddles_formula = R.send_ue_recv(args["x"], 1.0 / (args["y"] + 1e-12), args["src_index"], args["dst_index"],
                                     "mul", "sum", 12)
    _assert_close(paddles_formula, paddle[0], 1e-14, "x * 1 / (y + 1e-12) vs paddle")


def test_refused_combinations_raise_not_implemented():
    with pytest.raises(NotImplementedError):
        R.rrelu(np.ones(3), training=True)  # random slopes
    with pytest.raises(NotImplementedError):
        R.set_(np.zeros((3, 8)), np.zeros((6, 3)), [3, 8], [2, 2], 0)  # reads element 18 of 18: out of bounds
    with pytest.raises(NotImplementedError):
        R.set_(np.zeros((2,)), np.zeros((6,)), [2], [1], 4)  # a byte offset: the original itemsize is gone
    with pytest.raises(NotImplementedError):
        R.put_along_axis(np.zeros((2, 3)), np.array([[0, 0], [1, 1]]), np.ones((2, 2)), 1)  # no winner to assign
    with pytest.raises(NotImplementedError):
        R.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 1, 2)), padding_mode="reflection")


def test_every_ref_says_how_it_computes():
    for api, spec in all_specs().items():
        if spec.ref is not None and _module(spec) in MODULES:
            assert getattr(spec.ref, "how", "").strip(), api


def test_send_ue_recv_sums_exact_messages():
    """Two products whose float64 roundings cancel wrongly: (1 + 2^-30)^2 - (1 + 2^-29) = 2^-60 exactly,
    which float64 messages (each rounded) give as 0."""
    a = 1 + 2.0 ** -30
    x = np.array([[a], [-(1 + 2.0 ** -29)]])
    y = np.array([[a], [1.0]])
    src, dst = np.array([0, 1]), np.array([0, 0])
    assert a * a + -(1 + 2.0 ** -29) == 0.0  # what float64 messages sum to
    assert R.send_ue_recv(x, y, src, dst, "mul", "sum")[0, 0] == 2.0 ** -60


def test_grid_sample_nearest_ties_round_half_to_even_as_both_frameworks_do():
    """Source positions 1.5, 2.5 and 0.5 (exact ties): the ref, Torch and Paddle 3.3.1 round half to even
    (2, 2, 0).  Paddle 3.0.0's kernel rounds half away from zero (2, 3, 1): at a tie that is a rounding
    convention, not a value error (issue 34 item 7)."""
    import paddle
    import torch

    x = np.arange(4, dtype=np.float64).reshape(1, 1, 1, 4)
    grid = np.array([[[[0.0, 0.0], [0.5, 0.0], [-0.5, 0.0]]]])
    ref = R.grid_sample(x, grid, mode="nearest", align_corners=False).reshape(-1)
    assert ref.tolist() == [2.0, 2.0, 0.0]
    theirs = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode="nearest", align_corners=False)
    assert theirs.numpy().reshape(-1).tolist() == ref.tolist()
    ours = paddle.nn.functional.grid_sample(paddle.to_tensor(x), paddle.to_tensor(grid), mode="nearest",
                                            align_corners=False)
    assert ours.numpy().reshape(-1).tolist() == ref.tolist()


def test_getitem_reads_a_list_as_one_advanced_index_as_paddle_documents():
    """x[[[0, 2], [1, 1]]]: Paddle (paddle.to_tensor of the list, numpy >= 1.23's rule) and the ref index
    axis 0 with a [2, 2] index -> [2, 2, 5, 4]; Torch reads a list of sequences as a tuple -> [2, 4]."""
    import paddle
    import torch

    x = np.arange(120, dtype=np.float64).reshape(6, 5, 4)
    item = [[0, 2], [1, 1]]
    ref = R.getitem(x, item)
    assert ref.shape == (2, 2, 5, 4) and np.array_equal(ref[1, 0], x[1])
    assert np.array_equal(paddle.to_tensor(x)[item].numpy(), ref)
    with warnings.catch_warnings():  # Torch's deprecation note on that reading: the reading is the point
        warnings.simplefilter("ignore", UserWarning)
        assert tuple(torch.tensor(x)[item].shape) == (2, 4)
