"""Issue #35 items 2 and 3 in the engine: a config that is not exact runs its inexact draw a second time (which side
gave other bits: a deliberately nondeterministic fake kernel on each side, a deterministic one), and the float64
oracle says who is closer (float16 bilinear interpolate's gradient, where Paddle is off and Torch is not, checked
here by hand on inputs drawn outside the engine). Real paddle and torch."""
import json

import numpy as np

import tests.fake_specs.engine  # noqa: F401  (apitester_test.double)
import tests.fake_specs.exact  # noqa: F401  (the noisy and nudged kernels)
from apitester.engine.compare import Verdict
from apitester.engine.execute import run_config
from apitester.readings import run_with_readings
from apitester.vocab import NoOracle, Reading, Side
from tests.engine_helpers.cli import run

INTERPOLATE = 'paddle.nn.functional.interpolate(Tensor([1, 2, 16, 16],"float16"), list[64,64,], mode="bilinear", ' \
              'align_corners=False, )'


def test_a_nondeterministic_paddle_kernel_is_unstable_and_named():
    verdict = run_with_readings('apitester_test.noisy_paddle(Tensor([64],"float32"), )')
    assert verdict.status == "pass" and verdict.exact is False  # within 1e-2, not exact
    assert verdict.stable is False and verdict.nondeterministic == Side.PADDLE
    assert verdict.inexact_draw["kind"] == "typical"


def test_a_nondeterministic_torch_kernel_is_named_as_torch():
    verdict = run_with_readings('apitester_test.noisy_torch(Tensor([64],"float32"), )')
    assert verdict.stable is False and verdict.nondeterministic == Side.TORCH


def test_a_deterministic_inexact_kernel_is_stable():
    verdict = run_with_readings('apitester_test.nudged(Tensor([64],"float32"), )')
    assert verdict.exact is False and verdict.max_ulp >= 1
    assert verdict.stable is True and verdict.nondeterministic == ""
    # the float64 runs of the two sides compute different functions (x * 1.0001 against x): no oracle
    assert verdict.closer == Reading.NO_ORACLE and verdict.closer_code == NoOracle.DISPUTED


def test_an_exact_config_gets_no_readings_and_run_config_alone_reads_no_stability():
    exact = run_with_readings('apitester_test.double(Tensor([8],"float32"), )')
    assert exact.exact is True
    assert (exact.stable, exact.closer, exact.paddle_rmse, exact.inexact_draw) == (None, None, None, None)
    plain = run_config('apitester_test.noisy_paddle(Tensor([64],"float32"), )')
    assert plain.exact is False and plain.stable is None


def by_hand_gradient_rmse(seed=7):
    """Float16 bilinear upsampling's input gradient on inputs drawn here, each side's RMSE to Torch's float64
    gradient rounded to float16 (the engine's oracle is not used)."""
    import paddle
    import torch

    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (1, 2, 16, 16)).astype(np.float16)
    g = rng.uniform(-1, 1, (1, 2, 64, 64)).astype(np.float16)
    kw = {"size": [64, 64], "mode": "bilinear", "align_corners": False}
    xp = paddle.to_tensor(x)
    xp.stop_gradient = False
    gp, = paddle.grad([paddle.nn.functional.interpolate(xp, **kw)], [xp], grad_outputs=[paddle.to_tensor(g)])
    xt = torch.from_numpy(x).requires_grad_(True)
    gt, = torch.autograd.grad(torch.nn.functional.interpolate(xt, **kw), [xt], grad_outputs=[torch.from_numpy(g)])
    x64 = torch.from_numpy(x.astype(np.float64)).requires_grad_(True)
    g64, = torch.autograd.grad(torch.nn.functional.interpolate(x64, **kw), [x64],
                               grad_outputs=[torch.from_numpy(g.astype(np.float64))])
    rounded = g64.numpy().astype(np.float16).astype(np.float64)
    rmse = lambda a: float(np.sqrt(np.mean((a.numpy().astype(np.float64) - rounded) ** 2)))  # noqa: E731
    return rmse(gp), rmse(gt)


def test_float16_bilinear_interpolate_passes_1e2_but_paddle_is_the_side_off_float64():
    paddle_rmse, torch_rmse = by_hand_gradient_rmse()
    assert paddle_rmse > 3 * torch_rmse and paddle_rmse > 1e-4  # by hand: Paddle is the side off
    verdict = run_with_readings(INTERPOLATE)
    assert verdict.status == "pass" and verdict.rule == "within_tolerance"
    assert verdict.stable is True
    assert verdict.closer == Reading.PADDLE_OFF and verdict.closer_output == "grad x"
    assert verdict.paddle_rmse > 3 * verdict.torch_rmse
    # the engine's figure is of the same size as the hand-made one (other inputs, same kernel)
    assert 0.25 < verdict.paddle_rmse / paddle_rmse < 4


def test_over_the_input_bound_the_reading_is_skipped_and_says_why():
    verdict = run_with_readings(INTERPOLATE, closer_max_bytes=512)
    assert verdict.exact is False and verdict.stable is True
    assert verdict.closer is None and verdict.paddle_rmse is None
    assert "over the oracle's bound of 0 MiB" in verdict.closer_skipped and "CLOSER_MAX_INPUT_BYTES" in \
        verdict.closer_skipped


def test_the_cli_json_carries_the_readings_and_they_survive_the_round_trip():
    result = run("--json", "--readings", "--api_config", INTERPOLATE)
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["stable"] is True and data["nondeterministic"] == ""
    assert data["closer"] == "paddle_off" and data["closer_code"] == ""
    assert data["paddle_rmse"] > data["torch_rmse"] >= 0 and data["closer_skipped"] == ""
    again = Verdict.from_dict(data)
    assert (again.closer, again.paddle_rmse, again.stable) == ("paddle_off", data["paddle_rmse"], True)
    assert "closer to float64: paddle_off" in again.human()


def test_a_quota_gives_the_readings_to_the_first_configs_of_each_group_only():
    from apitester.readings import Quota

    quota = Quota(per_group=1)
    first = run_with_readings('apitester_test.nudged(Tensor([64],"float32"), )', quota=quota)
    assert first.stable is True and first.closer is not None
    # the same API and dtype: the group has had its reading; the verdict (and its exactness) is unchanged
    second = run_with_readings('apitester_test.nudged(Tensor([32],"float32"), )', quota=quota)
    assert second.exact is False and second.max_ulp >= 1 and second.status == first.status
    assert second.stable is None and second.closer is None
    assert second.closer_skipped.startswith("sampled: 1 configs of apitester_test.nudged float32 already")
    # another dtype is another group
    other = run_with_readings('apitester_test.nudged(Tensor([32],"float64"), )', quota=quota)
    assert other.exact is False and other.stable is True
    # exact configs never use the quota
    assert Quota.group('paddle.add(Tensor([2],"float32"), Tensor([2],"float16"), )') == ("paddle.add", "float16",
                                                                                          "float32")


def test_without_readings_a_verdict_keeps_its_exact_fields_and_says_the_readings_were_not_asked_for():
    """Issue #43: the readings cost about three times the verdict; off unless asked, with the same status, exact and
    max_ulp as the verdict that reads them, and an inexact verdict saying how to ask."""
    from apitester.readings import NOT_ASKED

    asked = run_with_readings(INTERPOLATE)
    plain = run_with_readings(INTERPOLATE, readings=False)
    assert (plain.status, plain.exact, plain.max_ulp, plain.draws) == (asked.status, asked.exact, asked.max_ulp,
                                                                      asked.draws)
    assert (plain.stable, plain.closer, plain.inexact_draw, plain.readings_seconds) == (None, None, None, 0.0)
    assert plain.closer_skipped == NOT_ASKED and "--readings" in plain.closer_skipped
    assert "readings" not in plain.phases and asked.phases["readings"] == asked.readings_seconds > 0
    exact = run_with_readings('apitester_test.double(Tensor([8],"float32"), )', readings=False)
    assert exact.exact is True and exact.closer_skipped == ""  # nothing to read: nothing said


def test_the_cli_reads_no_readings_unless_asked():
    data = json.loads(run("--json", "--api_config", INTERPOLATE).stdout.strip().splitlines()[-1])
    assert data["exact"] is False and data["max_ulp"] > 0
    assert data["stable"] is None and data["closer"] is None and "not asked for" in data["closer_skipped"]
    assert set(data["phases"]) >= {"draws", "paddle", "torch", "paddle_backward", "torch_backward", "compare",
                                 "exact", "other"}
