"""Elementwise family (math & elementwise, creation & shape): real Paddle vs Torch verdicts.

Configs are read at run time from the PaddleAPITest reports (PADDLEAPITEST_REPORTS, see
apitester.reports): for each case the smallest few distinct configs of the API are run on
the CPU, and the verdict asserted is the one Paddle 3.3.1 gives (the reason is written beside it).
GPU-task configs (ci_ce_gpu) are run on the CPU as an engine check.
"""

from __future__ import annotations

from functools import lru_cache

import pytest

from apitester.config import parse_config
from apitester.engine.execute import frameworks, run_config
from apitester.reports import iter_config_lines, reports_dir
from apitester.specs import get_spec
from apitester.specs.base import KnownFailure, release_matches

BOARD_APIS = [
    "paddle.add", "paddle.add_n", "paddle.bitwise_right_shift", "paddle.broadcast_to",
    "paddle.combinations", "paddle.concat", "paddle.copysign", "paddle.diag", "paddle.diagflat",
    "paddle.dot", "paddle.einsum", "paddle.expand", "paddle.floor", "paddle.frexp", "paddle.gammaln",
    "paddle.heaviside", "paddle.kron", "paddle.lerp", "paddle.matmul", "paddle.minimum",
    "paddle.nextafter", "paddle.outer", "paddle.pow", "paddle.reciprocal", "paddle.rsqrt",
    "paddle.scale", "paddle.tensordot", "paddle.vander", "paddle.where", "paddle.Tensor.cast",
    "paddle.Tensor.clip", "paddle.Tensor.expand", "paddle.Tensor.frexp", "paddle.Tensor.logit",
    "paddle.Tensor.matmul", "paddle.Tensor.__matmul__", "paddle.Tensor.mul", "paddle.Tensor.__mul__", "paddle.Tensor.tile",
    "paddle.nn.utils.parameters_to_vector",
]


@lru_cache(maxsize=None)
def _report_configs(tree: str) -> dict[str, list[tuple[int, str]]]:
    """api -> [(numel, config)] of distinct configs of this family under reports/<tree>."""
    wanted = set(BOARD_APIS)
    seen: set[str] = set()
    found: dict[str, list[tuple[int, str]]] = {}
    for _, _, line in iter_config_lines([reports_dir() / "reports" / tree]):
        api = line.split("(", 1)[0]
        if api not in wanted or line in seen:
            continue
        seen.add(line)
        numel = sum(t.numel for t in parse_config(line).tensors())
        found.setdefault(api, []).append((numel, line))
    return {api: [c for _, c in sorted(rows)] for api, rows in found.items()}


def smallest(api: str, tree: str = "ci_ce_cpu", count: int = 3, contains: str = "") -> list[str]:
    configs = [c for c in _report_configs(tree).get(api, []) if contains in c]
    if not configs:
        pytest.fail(f"no {api} configs containing {contains!r} under {reports_dir()}/reports/{tree} "
                    "(set PADDLEAPITEST_REPORTS to the PaddleAPITest data)")
    return configs[:count]


def test_every_board_api_of_the_family_has_a_spec():
    missing = [api for api in BOARD_APIS if get_spec(api) is None]
    assert missing == []


# The verdict table pins what the CPU build of Paddle 3.3.1 (the installed, pinned version) gives
# for these report configs; each row says why that outcome holds on 3.3.1.  Another Paddle
# version needs its own table: the test refuses to compare against a version it was not written for.
PINNED_PADDLE = "3.3.1"

# (api, tree, count, contains, expected status, direction, why it holds on 3.3.1)
CASES = [
    ("paddle.bitwise_right_shift", "ci_ce_cpu", 3, "", "pass", None,
     "the report's Torch reference shifted arithmetically although is_arithmetic=False; a logical shift "
     "of the bit pattern agrees with Paddle"),
    ("paddle.broadcast_to", "ci_ce_cpu", 3, "", "pass", None,
     "fixed upstream before 3.3.1 (#72992): 0-d / size-1 float16 inputs broadcast correctly"),
    ("paddle.expand", "ci_ce_cpu", 1, "", "pass", None, "same kernel as broadcast_to, fixed by #72992"),
    ("paddle.Tensor.expand", "ci_ce_cpu", 2, "", "pass", None, "same kernel as broadcast_to, fixed by #72992"),
    ("paddle.diag", "ci_ce_cpu", 4, "", "pass", None,
     "fixed upstream before 3.3.1 (#269): padding_value is honoured for 1-D inputs"),
    ("paddle.heaviside", "ci_ce_cpu", 2, "", "pass", None,
     "fixed upstream before 3.3.1 (#72894): a 0-d / 1-D x broadcasts against y"),
    ("paddle.kron", "ci_ce_cpu", 3, "", "pass", None,
     "3.3.1's CPU kron of these float16 configs agrees with Torch's within the float16 tolerance"),
    ("paddle.nextafter", "ci_ce_cpu", 1, "", "pass", None,
     "fixed upstream before 3.3.1 (#72965); compared exactly (tolerance 0): the result is a one-ulp step"),
    ("paddle.tensordot", "ci_ce_cpu", 2, "", "pass", None, "fixed upstream before 3.3.1 (#288)"),
    ("paddle.vander", "ci_ce_cpu", 2, "float32", "pass", None,
     "a tester artefact: the report's reference was torch.vander, whose backward fails; ours builds the "
     "powers out of place and 3.3.1 agrees"),
    ("paddle.vander", "ci_ce_cpu", 1, "complex128", "pass", None, "the same tester artefact, complex128"),
    ("paddle.Tensor.__matmul__", "ci_ce_cpu", 2, "", "pass", None,
     "the board's Tensor.matmul task is traced as __matmul__ (float32 @ float16); 3.3.1 promotes to "
     "float32 as Torch does"),
    ("paddle.Tensor.cast", "ci_ce_cpu", 1, "", "pass", None,
     "3.3.1 rounds int32 -> float16 as Torch does"),
    ("paddle.Tensor.logit", "ci_ce_cpu", 2, "", "pass", None,
     "3.3.1 gives NaN outside (0, 1) as Torch does"),
    ("paddle.minimum", "ci_ce_cpu", 2, "", "pass", None,
     "fixed upstream before 3.3.1 (#286): the gradient at ties x == y is split as Torch splits it"),
    ("paddle.add_n", "ci_ce_gpu", 2, "int32", "pass", None, "one dtype: 3.3.1 sums exactly as Torch"),
    # GPU-task configs, run on the CPU build.
    ("paddle.combinations", "ci_ce_gpu", 4, "", "pass", None,
     "the smallest configs (0 or 1 elements, r=2) give empty results on both sides"),
    ("paddle.diagflat", "ci_ce_gpu", 2, "", "pass", None,
     "3.3.1's CPU diagflat (a 0-d input, an offset) matches torch.diagflat; the reported failure is GPU-only"),
    ("paddle.gammaln", "ci_ce_gpu", 1, "", "pass", None,
     "3.3.1's CPU gammaln matches torch.lgamma within tolerance; the reported failure is GPU-only"),
    ("paddle.floor", "ci_ce_gpu", 2, "", "pass", None, "3.3.1's integer floor keeps the dtype, as Torch's"),
    ("paddle.pow", "ci_ce_gpu", 2, "", "pass", None, "3.3.1's CPU integer pow matches torch.pow"),
    # Paddle's Tensor scale gets no gradient, the plain Torch product gives it one: the strict
    # layer reports that backward difference (the adapted layer, scale detached, agrees).
    ("paddle.scale", "ci_ce_gpu", 2, "", "accuracy_error", "backward",
     "3.3.1 gives a Tensor scale no gradient; the plain Torch product does"),
    ("paddle.outer", "ci_ce_gpu", 1, "", "pass", None, "3.3.1 flattens N-D inputs, as the reference does"),
    ("paddle.dot", "ci_ce_gpu", 1, "", "pass", None, "empty vectors: 0 on both sides"),
    ("paddle.Tensor.clip", "ci_ce_gpu", 2, "", "pass", None,
     "3.3.1's CPU float64 clip with one bound matches torch.clamp; the reported failure is GPU-only"),
    ("paddle.where", "ci_ce_gpu", 2, "", "pass", None, "scalar branches broadcast as in Torch"),
    ("paddle.add", "ci_ce_gpu", 1, "", "pass", None, "3.3.1 promotes float32 + float16 to float32, as Torch"),
    ("paddle.matmul", "ci_ce_gpu", 1, "float64", "pass", None, "3.3.1 handles transpose_y on a 1-D y as Torch"),
]


# Report configs that fail on the installed Paddle for a known reason: the reason, the expected status
# and direction, and the release / dtype scope live on the spec entry (Spec.known_failures), not here.
KNOWN_FAILURE_CASES = [
    ("paddle.add_n", "ci_ce_cpu", 2, "float16"),
    ("paddle.concat", "ci_ce_cpu", 2, ""),
    ("paddle.einsum", "ci_ce_cpu", 1, ""),
    ("paddle.copysign", "ci_ce_gpu", 2, ""),
    ("paddle.frexp", "ci_ce_gpu", 1, ""),
    ("paddle.Tensor.frexp", "ci_ce_gpu", 1, ""),
    ("paddle.lerp", "ci_ce_gpu", 2, ""),
    ("paddle.nn.utils.parameters_to_vector", "ci_ce_gpu", 1, ""),
    ("paddle.einsum", "ci_ce_gpu", 1, "i, i"),
    ("paddle.rsqrt", "ci_ce_gpu", 1, ""),
]


@pytest.mark.parametrize("api, tree, count, contains", KNOWN_FAILURE_CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[3] or 'any'}" for c in KNOWN_FAILURE_CASES])
def test_known_paddle_failure_is_declared_on_the_spec_and_still_fails(api, tree, count, contains):
    paddle, _ = frameworks()
    for config in smallest(api, tree, count, contains):
        verdict = run_config(config)
        assert not verdict.engine_error, verdict.message
        known = verdict.known_failure
        assert known is not None, f"{config}: {verdict.status} {verdict.direction} matches no known failure of " \
                                  f"{get_spec(api).api} on Paddle {paddle.__version__}: {verdict.message}"
        # a known failure documents the failure, it never excuses it
        assert (verdict.status, verdict.direction) == (known["status"], known["direction"] or verdict.direction)
        assert verdict.status != "pass" and known["reason"]


def test_a_known_failure_is_scoped_by_release_and_dtype():
    (known,) = get_spec("paddle.rsqrt").known_failures
    assert known.matches("3.3.1", ["float16"]) and not known.matches("3.3.1", ["float32"])
    assert not known.matches("3.1.0", ["float16"])
    assert release_matches("<3.1", "3.0.0") and not release_matches("<3.1", "3.1.0")
    assert release_matches(">=3.0,<3.3", "3.2.1") and release_matches("", "2.6.0")
    with pytest.raises(ValueError, match="needs an operator"):
        KnownFailure("paddle_error", "x", releases="3.1")
    # a passing config of the API carries no known failure
    verdict = run_config('paddle.rsqrt(Tensor([3, 4],"float32"), )')  # written for this test
    assert verdict.status == "pass" and verdict.known_failure is None, verdict.message


def test_the_verdict_table_is_for_the_installed_paddle():
    paddle, _ = frameworks()
    assert paddle.__version__ == PINNED_PADDLE, (
        f"the verdict table pins Paddle {PINNED_PADDLE}'s outcomes, but Paddle {paddle.__version__} is installed: "
        "re-derive each row (and its reason) for this version")


@pytest.mark.parametrize("api, tree, count, contains, status, direction, why", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[3] or 'any'}" for c in CASES])
def test_report_configs_verdict(api, tree, count, contains, status, direction, why):
    paddle, _ = frameworks()
    assert paddle.__version__ == PINNED_PADDLE, f"this row pins Paddle {PINNED_PADDLE} ({why})"
    assert why, "every row says why its outcome holds"
    for config in smallest(api, tree, count, contains):
        verdict = run_config(config)
        assert not verdict.engine_error, verdict.message
        assert (verdict.status, verdict.direction) == (status, direction), \
            f"{config}: {verdict.message} (expected on {PINNED_PADDLE} because {why})"


def test_lerp_mismatch_is_the_weight_gradient():
    (config,) = smallest("paddle.lerp", "ci_ce_gpu", 1)
    verdict = run_config(config)
    assert verdict.output == "grad weight"
    assert "grad x" not in verdict.message and "grad y" not in verdict.message


def test_frexp_mismatch_is_the_exponent_dtype_only():
    (config,) = smallest("paddle.frexp", "ci_ce_gpu", 1)
    verdict = run_config(config)
    assert "output 1" in verdict.message and "values agree" in verdict.message


@pytest.mark.parametrize("config", [
    # arithmetic and logical shifts of every width, shift amounts in [-10, 10) (out of range
    # for int8 too): negative / too-wide shifts give 0 (logical) or the sign fill
    'paddle.bitwise_right_shift(Tensor([64],"int64"), Tensor([64],"int64"), True, )',
    'paddle.bitwise_right_shift(Tensor([64],"int64"), Tensor([64],"int64"), False, )',
    'paddle.bitwise_right_shift(Tensor([64],"int8"), Tensor([64],"int8"), True, )',
    'paddle.bitwise_right_shift(Tensor([64],"uint8"), Tensor([64],"uint8"), False, )',
    # tensordot's axes forms: int, [axes_x, axes_y], a flat list (same axes of x and y), and
    # a size-1 dim contracted against a larger one
    'paddle.tensordot(Tensor([2, 3, 4],"float32"), Tensor([3, 4, 5],"float32"), 2, )',
    'paddle.tensordot(Tensor([2, 3, 4],"float32"), Tensor([3, 4, 5],"float32"), list[list[1,2,],list[0,1,],], )',
    'paddle.tensordot(Tensor([2, 3, 4],"float32"), Tensor([4, 3, 5],"float32"), list[1,], )',
    'paddle.tensordot(Tensor([2, 1, 4],"float64"), Tensor([3, 4, 5],"float64"), list[list[1,2,],list[0,1,],], )',
    # where with only a condition is nonzero(as_tuple=True)
    'paddle.where(Tensor([3, 4],"bool"), )',
    # scale: bias before scale, an activation, and the integer kernel truncating scale
    'paddle.scale(Tensor([3, 4],"float32"), 2.0, 1.0, False, "relu", )',
    'paddle.scale(Tensor([3, 4],"int32"), 2.5, 1.0, )',
    'paddle.add(Tensor([3, 4],"float32"), Tensor([3, 4],"float32"), alpha=2, )',
    'paddle.Tensor.tile(Tensor([2, 3],"float32"), list[2,1,2,], )',
    'paddle.dot(Tensor([3, 4],"float32"), Tensor([3, 4],"float32"), )',
    'paddle.vander(Tensor([4],"float64"), 3, True, )',
    'paddle.lerp(Tensor([4],"float64"), Tensor([4],"float64"), 0.3, )',
    'paddle.Tensor.matmul(Tensor([2, 3, 4],"float32"), Tensor([2, 5, 4],"float32"), False, True, )',
])
def test_argument_forms_agree(config):
    verdict = run_config(config)
    assert verdict.status == "pass", verdict.message


def test_logical_shift_reference_known_values():
    _, torch = frameworks()
    shift = get_spec("paddle.bitwise_right_shift").torch
    x = torch.tensor([-100, 100, -1, -128], dtype=torch.int8)
    y = torch.tensor([1, 1, 7, 8], dtype=torch.int8)
    # 0b10011100 >> 1 = 0b01001110 = 78; -1 >>> 7 = 1; a shift by the full width gives 0
    assert shift(x, y, is_arithmetic=False).tolist() == [78, 50, 1, 0]
    assert shift(x, y, is_arithmetic=True).tolist() == [-50, 50, -1, -1]
    big = torch.tensor([-(2 ** 63), -1], dtype=torch.int64)
    assert shift(big, torch.tensor([63, 60]), is_arithmetic=False).tolist() == [1, 15]


def test_diag_reference_pads_off_diagonal():
    _, torch = frameworks()
    diag = get_spec("paddle.diag").torch
    out = diag(torch.tensor([1, 2], dtype=torch.int64), offset=1, padding_value=8.0)
    assert out.tolist() == [[8, 1, 8], [8, 8, 2], [8, 8, 8]]
