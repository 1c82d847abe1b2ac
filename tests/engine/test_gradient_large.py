"""The float64 gradient check on inputs over GRADCHECK_MAX_ELEMENTS (issue 34): it judges the elements where the two
sides' float64 gradients differ most instead of refusing, so a minimum/maximum whose shrink stayed large (a few ties
among a million elements on Paddle 3.0.0) still reads a side or a subgradient convention.  Real paddle and torch on
the test-only specs of gradient_edge_specs (one element at exactly 0, the rest away from it)."""
import json

import diagnosis_helpers  # noqa: F401  (this directory on sys.path)
from apitester.diagnosis import gradients
from apitester.diagnosis.diagnose import read_with_gradient_check
from apitester.diagnosis.records import GradientCheck, OutputReading
from apitester.inputs import Draw
from apitester.diagnosis.gradients import GRADCHECK_CHOSEN, GRADCHECK_MAX_ELEMENTS, gradient_check
from apitester.diagnosis.shrink import draw_inputs, prepare_strict
from apitester.vocab import NoOracle, Reading

import gradient_edge_specs  # noqa: F401,E402  (registers the apitester_diag.* gradient specs)

TYPICAL = Draw("typical", 0)
LARGE = 3 * GRADCHECK_MAX_ELEMENTS


def checked(api: str, elements: int = LARGE) -> dict:
    prepared = prepare_strict(f'apitester_diag.{api}(Tensor([{elements}],"float64"), )')
    return json.loads(json.dumps(gradient_check(prepared, draw_inputs(prepared, TYPICAL), TYPICAL).to_dict()))


def test_one_differing_element_among_many_is_the_one_judged_and_reads_as_a_kink():
    """|x| at its one exact 0: Paddle's gradient 0, this Torch side's +1; the 1,535 other elements agree and are
    not re-differentiated."""
    check = checked("abs_subgradients")
    assert GradientCheck.from_dict(check).to_dict() == check  # the JSON reads back as it was
    assert check["ran"] and check["elements"] == LARGE
    assert check["chosen"] == {"elements": 1, "of": LARGE, "rule": "the elements where the two float64 gradients "
                                                                  "differ most"}
    for side in ("paddle", "torch"):
        out = check[side]["outputs"]["grad x"]
        assert (out["match"], out["miss"], out["kinks"], out["first_kink"]["index"]) == (1, 0, 1, [0])
    assert check["side_off"] is None and check["side_off_by_output"] == {}
    unsettled = OutputReading.none("grad x", NoOracle.TOO_LARGE, "r")
    reading = read_with_gradient_check(unsettled, GradientCheck.from_dict(check))  # the JSON read back
    assert (reading.reading, reading.convention.kind) == (Reading.CONVENTION, "subgradient")


def test_a_nan_gradient_at_one_element_among_many_names_that_side():
    check = checked("sinc_paddle_nan")
    assert check["chosen"]["elements"] == 1
    assert check["paddle"]["outputs"]["grad x"]["missed_at"] == [0]
    assert check["torch"]["outputs"]["grad x"]["miss"] == 0
    assert check["side_off"] == "paddle" and check["side_off_by_output"] == {"grad x": "paddle"}
    assert check["evidence"]["grad x"].endswith(f"Torch's matches at 1 of 1 (the elements judged: where the two "
                                                f"gradients differ most, of {LARGE})")


def test_a_gradient_off_everywhere_is_judged_on_the_chosen_elements_only():
    check = checked("double_paddle_off")  # Paddle's gradient of 2x is 3 at every element, Torch's 2
    assert check["chosen"] == {"elements": GRADCHECK_CHOSEN, "of": LARGE,
                               "rule": "the elements where the two float64 gradients differ most"}
    paddle, torch = (check[side]["outputs"]["grad x"] for side in ("paddle", "torch"))
    assert (paddle["miss"], paddle["match"]) == (GRADCHECK_CHOSEN, 0)
    assert (torch["match"], torch["miss"]) == (GRADCHECK_CHOSEN, 0)
    assert check["side_off_by_output"] == {"grad x": "paddle"}


def test_agreeing_gradients_over_the_bound_give_nothing_to_judge_and_say_so():
    check = checked("relu_at_0")  # both frameworks give relu's gradient 0 at 0
    assert check == {"ran": False, "reason": f"{LARGE} floating input elements, over {GRADCHECK_MAX_ELEMENTS}: the two "
                                             f"float64 gradients agree at every element"}


def test_small_inputs_are_still_judged_at_every_element():
    check = checked("abs_subgradients", elements=8)
    assert "chosen" not in check and check["paddle"]["outputs"]["grad x"]["match"] == 8


def test_over_the_largest_size_the_check_does_not_run(monkeypatch):
    monkeypatch.setattr(gradients, "GRADCHECK_LARGEST", LARGE - 1)
    check = checked("abs_subgradients")
    assert check == {"ran": False, "reason": f"{LARGE} floating input elements, over {LARGE - 1}"}
