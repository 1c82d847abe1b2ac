"""Issue #44 class 3: "who is closer" reads the outputs that made a config inexact -- never an exact one -- on every
inexact draw, and the worst draw is named (apitester.readings). Test-only kernels of known answer
(tests/fake_specs/exact.py), real paddle and torch: a gradient whose truth is exactly 0 beside an exact forward, and
a kernel within rounding on its typical draws and off on the edge draw's big values."""
import pytest

import tests.fake_specs.exact  # noqa: F401  (apitester_test.zero_grad, disputed_zero_grad, off_on_big)
from apitester.engine.compare import Verdict
from apitester.engine.execute import run_config
from apitester.readings import CLOSER_MAX_DRAWS, run_with_readings
from apitester.vocab import NoOracle, Reading

ZERO_GRAD = 'apitester_test.zero_grad(Tensor([64],"float32"), )'
DISPUTED = 'apitester_test.disputed_zero_grad(Tensor([64],"float32"), )'
OFF_ON_BIG = 'apitester_test.off_on_big(Tensor([64],"float32"), )'


@pytest.fixture(scope="module")
def off_on_big():
    return run_with_readings(OFF_ON_BIG)


def test_every_inexact_draw_is_recorded_with_the_outputs_that_differ():
    verdict = run_config(ZERO_GRAD)
    assert verdict.exact is False and verdict.status == "pass"
    assert [d["draw"] for d in verdict.inexact_draws] == verdict.draws  # every draw of the plan is inexact
    assert all(d["outputs"] == ["grad x"] for d in verdict.inexact_draws)  # the zeros forward is exact on both


def test_a_gradient_whose_truth_is_exactly_0_is_read_and_torch_named():
    verdict = run_with_readings(ZERO_GRAD)
    # the float64 oracle's gradient is exactly 0 (noise floor 0): Torch's ~1e-7 is over it, Paddle's 0 is the truth
    assert verdict.closer == Reading.TORCH_OFF and verdict.closer_output == "grad x"
    assert verdict.paddle_rmse == 0.0 and 1e-8 < verdict.torch_rmse < 1e-6
    assert verdict.closer_draw == verdict.draws[0]


def test_an_inexact_output_without_an_oracle_is_not_ranked_below_the_exact_forward():
    verdict = run_with_readings(DISPUTED)
    # the float64 pair disagrees on the gradient (0 against 1e-7 g): no oracle, said of the gradient -- the exact
    # forward (within rounding of its float64 zeros) is not what made the config inexact and is not read
    assert verdict.closer == Reading.NO_ORACLE and verdict.closer_code == NoOracle.DISPUTED
    assert verdict.closer_output == "grad x"


def test_the_worst_draw_wins_and_is_named(off_on_big):
    verdict = off_on_big
    by_draw = {d["draw"]: d["reading"] for d in verdict.closer_draws}
    first, edge = verdict.draws[0], next(d for d in verdict.draws if d.startswith("edge"))
    assert verdict.inexact_draw["kind"] == "typical"  # the stability's draw: the first inexact one
    assert by_draw[first] == Reading.WITHIN_ROUNDING  # one ulp on one element
    assert by_draw[edge] == Reading.PADDLE_OFF  # 1e-4 relative on the big edge values
    assert (verdict.closer, verdict.closer_draw, verdict.closer_output) == (Reading.PADDLE_OFF, edge, "output 0")
    assert verdict.paddle_rmse > 0 and verdict.torch_rmse == 0.0 and verdict.closer_note == ""
    assert len(verdict.closer_draws) == len(verdict.draws) <= CLOSER_MAX_DRAWS


def test_the_closer_draw_survives_the_json_round_trip(off_on_big):
    again = Verdict.from_dict(off_on_big.to_dict())
    assert (again.closer_draw, again.closer_draws, again.inexact_draws) == \
        (off_on_big.closer_draw, off_on_big.closer_draws, off_on_big.inexact_draws)


@pytest.mark.parametrize("cap, value", [("CLOSER_MAX_DRAWS", 1), ("CLOSER_MAX_SECONDS", 0.0)])
def test_the_cap_says_which_draws_it_left_unread(monkeypatch, cap, value):
    import apitester.readings as readings

    monkeypatch.setattr(readings, cap, value)
    verdict = run_with_readings(OFF_ON_BIG)
    # only the first inexact draw read: within rounding, and the note names the edge draw it did not read
    assert verdict.closer == Reading.WITHIN_ROUNDING and len(verdict.closer_draws) == 1
    assert "read 1 of 4 inexact draws" in verdict.closer_note and "edge:0" in verdict.closer_note

