"""cov-misc fused (paddle.incubate) specs on paddle 3.3.1 (CPU build) + torch 2.13.

Most fused kernels exist only in CUDA builds: on this CPU build their configs must end as
an honest ``paddle_error`` naming the missing kernel.  Where Paddle has a CPU kernel the
config runs to a real comparison; the composed Torch references of the GPU-only ops are
checked against the compositions their Paddle docstrings give, built from Paddle's own
(CPU) primitive ops.
"""

import numpy as np
import pytest

from apitester.engine.execute import run_config
from apitester.specs import get_spec
from tests.engine_helpers.cpu_kernels import require_kernel
from tests.engine_helpers.report_configs import configs, verdict_of

F = "paddle.incubate.nn.functional."


def first_config(api: str, lane: str = "gpu", contains: str = "") -> str:
    """The shortest report config of `api` (read at run time)."""
    return min(configs(api, contains, lane=lane, max_len=400), key=len)


@pytest.mark.parametrize("api", [
    F + "fused_bias_act", F + "fused_rotary_position_embedding",
    F + "variable_length_memory_efficient_attention", F + "fused_linear",
])
def test_gpu_only_kernels_are_an_honest_paddle_error(api):
    v = verdict_of(first_config(api))
    assert v.status == "paddle_error"
    assert "not registered" in v.message or "has no attribute" in v.message, v.message


def test_fused_layer_norm_cpu_config_passes():
    require_kernel("fused_layer_norm")
    # The CPU task's config (float32, the only CPU dtype): out, residual_out agree.
    v = verdict_of(first_config(F + "fused_layer_norm", lane="cpu"))
    assert v.status == "pass", v.message


def test_fused_layer_norm_float16_has_no_cpu_kernel():
    v = verdict_of('paddle.incubate.nn.functional.fused_layer_norm(Tensor([2, 64],"float16"), norm_weight=None, norm_bias=None, epsilon=1e-06, begin_norm_axis=1, bias=None, residual=Tensor([2, 64],"float16"), )')
    assert v.status == "paddle_error" and "float16" in v.message


def test_fused_layer_norm_residual_and_bias_forms():
    require_kernel("fused_layer_norm")
    for config in (
        'paddle.incubate.nn.functional.fused_layer_norm(Tensor([6, 16],"float32"), Tensor([16],"float32"), Tensor([16],"float32"), 1e-05, begin_norm_axis=1, bias=Tensor([16],"float32"), residual=Tensor([6, 16],"float32"), )',
        'paddle.incubate.nn.functional.fused_layer_norm(Tensor([6, 16],"float32"), None, None, 1e-05, begin_norm_axis=1, bias=Tensor([16],"float32"), residual=Tensor([6, 16],"float32"), )',
        'paddle.incubate.nn.functional.fused_layer_norm(Tensor([2, 3, 8],"float32"), Tensor([24],"float32"), Tensor([24],"float32"), 1e-05, begin_norm_axis=1, )',
    ):
        # the forms are the question: the typical draw.  The first config's edge draw (2**63 in x,
        # residual, bias and weight) fails forward; which side is off at those magnitudes needs a
        # float64 oracle (Paddle matches numpy with a 2**63 weight or x alone).
        assert run_config(config, draw="typical:0").status == "pass", config


def test_softmax_mask_fuse_mask_gets_no_gradient_in_paddle():
    # Forward agrees; Paddle's op gives no gradient to `mask` (zeros), Torch's composition
    # softmax(x + mask) does -> backward difference on grad mask only.
    v = verdict_of('paddle.incubate.softmax_mask_fuse(Tensor([1, 1, 8, 32],"float32"), Tensor([1, 1, 8, 32],"float32"), )')
    assert (v.status, v.direction, v.output) == ("accuracy_error", "backward", "grad mask")


def _t(a):
    import torch

    return torch.from_numpy(np.asarray(a))


def test_vlmea_reference_matches_the_docstring_composition():
    # The docstring's naive_attention_impl (matmul, scale, + mask, softmax, matmul) with
    # Paddle CPU ops, full sequence lengths.
    import paddle

    rng = np.random.default_rng(0)
    q, k, v = (rng.uniform(-1, 1, (2, 4, 8, 16)).astype("float32") for _ in range(3))
    mask = rng.uniform(-1, 1, (2, 1, 8, 8)).astype("float32")
    pq, pk, pv, pm = map(paddle.to_tensor, (q, k, v, mask))
    attn = paddle.nn.functional.softmax(paddle.matmul(pq, pk, transpose_y=True) * 0.25 + pm, -1)
    expected = paddle.matmul(attn, pv).numpy()
    lens = _t(np.full((2, 1), 8, dtype="int32"))
    got = get_spec(F + "variable_length_memory_efficient_attention").torch(
        query=_t(q), key=_t(k), value=_t(v), seq_lens=lens, kv_seq_lens=lens, mask=_t(mask), scale=0.25)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_fused_linear_activation_reference():
    # act(x @ y + bias) with Paddle's tanh-approximated gelu (the cuBLASLt epilogue)
    import paddle

    rng = np.random.default_rng(1)
    x, y, b = rng.uniform(-1, 1, (8, 4)), rng.uniform(-1, 1, (4, 16)), rng.uniform(-1, 1, (16,))
    expected = paddle.nn.functional.gelu(paddle.to_tensor(x @ y + b), approximate=True).numpy()
    got = get_spec(F + "fused_linear_activation").torch(x=_t(x), y=_t(y), bias=_t(b), activation="gelu")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    got = get_spec(F + "fused_linear_activation").torch(x=_t(x.T), y=_t(y), bias=_t(b), trans_x=True, activation="relu")
    np.testing.assert_allclose(got.numpy(), np.maximum(x @ y + b, 0), rtol=1e-10)


def test_fused_bias_act_swiglu_and_quant():
    import paddle

    rng = np.random.default_rng(2)
    x = rng.integers(-10, 10, (2, 8)).astype("int32")
    scales = rng.uniform(0.1, 1, (8,)).astype("float32")
    ref = get_spec(F + "fused_bias_act").torch
    h = paddle.to_tensor(x.astype("float32") * scales)
    a, b = paddle.chunk(h, 2, axis=-1)
    expected = (paddle.nn.functional.silu(a) * b).astype("float16").numpy()
    got = ref(x=_t(x), dequant_scales=_t(scales), act_method="swiglu", compute_dtype="fp16")
    assert str(got.dtype) == "torch.float16"
    np.testing.assert_allclose(got.float().numpy(), expected.astype("float32"), rtol=1e-3)
    q = ref(x=_t(x), dequant_scales=_t(scales), act_method="swiglu", compute_dtype="fp16",
            quant_scale=0.5, quant_max_bound=127.0, quant_min_bound=-127.0)
    assert str(q.dtype) == "torch.int8"
    np.testing.assert_array_equal(q.numpy(), np.clip(np.round(127 * 0.5 * expected.astype("float32")), -127, 127))


def test_rotary_reference_rotation_rules():
    # cos = 1, sin = 0: identity; cos = 0, sin = 1: pure rotation -- adjacent pairs
    # (x0, x1) -> (-x1, x0) in neox style, halves (a, b) -> (-b, a) otherwise.
    ref = get_spec(F + "fused_rotary_position_embedding").torch
    q = np.arange(8, dtype="float32").reshape(1, 1, 1, 8)
    ones, zeros = np.ones((1, 1, 1, 8), "float32"), np.zeros((1, 1, 1, 8), "float32")
    (same,) = ref(q=_t(q), sin=_t(zeros), cos=_t(ones))
    np.testing.assert_array_equal(same.numpy(), q)
    (pairs,) = ref(q=_t(q), sin=_t(ones), cos=_t(zeros), use_neox_rotary_style=True)
    assert pairs.numpy().ravel().tolist() == [-1, 0, -3, 2, -5, 4, -7, 6]
    (halves,) = ref(q=_t(q), sin=_t(ones), cos=_t(zeros), use_neox_rotary_style=False)
    assert halves.numpy().ravel().tolist() == [-4, -5, -6, -7, 0, 1, 2, 3]


def test_fused_multi_head_attention_weight_layouts_agree():
    # The same projection given as [3, heads, head_dim, embed] or as [embed, 3 * embed]
    # (transpose_qkv_wb=True) gives the same result in the reference.
    rng = np.random.default_rng(3)
    batch, seq, heads, head_dim = 2, 5, 2, 4
    embed = heads * head_dim
    x = rng.uniform(-1, 1, (batch, seq, embed))
    w4 = rng.uniform(-1, 1, (3, heads, head_dim, embed))
    b3 = rng.uniform(-1, 1, (3, heads, head_dim))
    lw, lb = rng.uniform(-1, 1, (embed, embed)), rng.uniform(-1, 1, (embed,))
    ln_s, ln_b = rng.uniform(0.5, 1, (embed,)), rng.uniform(-1, 1, (embed,))
    mask = rng.uniform(-1, 1, (batch, heads, seq, seq))
    ref = get_spec(F + "fused_multi_head_attention").torch
    common = dict(linear_weight=_t(lw), linear_bias=_t(lb), ln_scale=_t(ln_s), ln_bias=_t(ln_b),
                  attn_mask=_t(mask), dropout_rate=0.0, attn_dropout_rate=0.0)
    a = ref(x=_t(x), qkv_weight=_t(w4), qkv_bias=_t(b3), **common)
    b = ref(x=_t(x), qkv_weight=_t(w4.reshape(3 * embed, embed).T.copy()), qkv_bias=_t(b3.reshape(-1)),
            transpose_qkv_wb=True, num_heads=heads, **common)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError):
        ref(x=_t(x), qkv_weight=_t(w4), **{**common, "dropout_rate": 0.5})
