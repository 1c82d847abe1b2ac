"""A side hidden behind a tie (issue 44): where the float64 gradients disagree only at the ties of maximum (each
side gives its own subgradient there), the elements they agree on are still read against the float64 oracle, and
a value error there is the final reading, the tie convention kept beside it as evidence.

Test-only specs, real paddle and torch: Paddle's maximum with its gradient given wholly to x at a tie (as Paddle
3.0.0 gives it; Torch splits it), one of them with an extra relative error of 1e-4 on the float32 gradient of the
elements without a tie (the answer known: Paddle off there, ~800x eps), the other without (the convention stands)."""
import json
from dataclasses import replace

import numpy as np
import pytest

from apitester.engine.compare import Out
from apitester.diagnosis.diagnose import diagnose_config, read_with_gradient_check, render_text
from apitester.diagnosis.oracle import agreeing_elements, oracle_for, read_output
from apitester.diagnosis.records import AgreeingElements, OutputReading
from apitester.diagnosis.sides import input_tensors
from apitester.diagnosis.shrink import draw_inputs, prepare_strict
from apitester.inputs import Draw, ties_with
from apitester.specs import base
from apitester.specs.base import Spec, register
from apitester.vocab import ConventionKind, NoOracle, Reading, ReadingSource

NOISE = 1e-4  # the noisy spec's relative error on the float32 gradient off the ties


def _paddle_maximum_tie_to_x(noise: float):
    def call(x, y):
        import paddle

        class Maximum(paddle.autograd.PyLayer):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return paddle.maximum(a, b)

            @staticmethod
            def backward(ctx, g):
                x_shape, y_shape = (t.shape for t in ctx.saved_tensor())
                a, b = (paddle.broadcast_to(t, g.shape) for t in ctx.saved_tensor())
                zero = paddle.zeros_like(g)
                gx, gy = paddle.where(a >= b, g, zero), paddle.where(a < b, g, zero)
                if noise and a.dtype == paddle.float32:  # the value error, off the ties only
                    tie = a == b
                    gx, gy = paddle.where(tie, gx, gx * (1 + noise)), paddle.where(tie, gy, gy * (1 + noise))
                return _summed_to(gx, x_shape), _summed_to(gy, y_shape)

        return Maximum.apply(x, y)

    return call


def _summed_to(grad, shape):
    """A broadcast result's gradient summed back to its input's shape (shrinking broadcasts y to [1])."""
    while len(grad.shape) > len(shape):
        grad = grad.sum(0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis, keepdim=True)
    return grad


def _torch_maximum(x, y, **_):
    import torch

    return torch.maximum(x, y)


SPECS = tuple(
    Spec(api=f"apitester_ties.{name}", paddle=_paddle_maximum_tie_to_x(noise), torch=_torch_maximum,
         signature=lambda x, y: None, domains={"y": ties_with("x")},
         note=f"test-only: maximum whose Paddle gradient goes to x at a tie (Paddle 3.0.0){note}")
    for name, noise, note in (("maximum_tie_to_x", 0.0, ""),
                              ("maximum_tie_to_x_noisy", NOISE, ", 1e-4 relative error off the ties at float32")))
if SPECS[0].api not in base.REGISTRY:
    register(*SPECS)

NOISY = 'apitester_ties.maximum_tie_to_x_noisy(Tensor([40],"float32"), Tensor([40],"float32"), )'
CLEAN = 'apitester_ties.maximum_tie_to_x(Tensor([40],"float32"), Tensor([40],"float32"), )'


def grad_x_reading(config: str) -> OutputReading:
    prepared = prepare_strict(config)
    oracle = oracle_for(prepared, draw_inputs(prepared, Draw("typical", 0)), Draw("typical", 0), grads=True)
    return next(r for r in oracle.readings if r.output == "grad x")


def test_the_elements_the_float64_gradients_agree_on_are_read_beside_the_dispute():
    reading = grad_x_reading(NOISY)
    assert reading.reading == Reading.NO_ORACLE and reading.no_oracle == NoOracle.DISPUTED
    agreeing = reading.agreeing_elements
    assert 0 < agreeing.elements < agreeing.of == 40
    assert agreeing.reading == Reading.PADDLE_OFF
    assert agreeing.paddle.rmse > 100 * agreeing.noise_floor > 100 * agreeing.torch.rmse
    clean = grad_x_reading(CLEAN).agreeing_elements
    assert clean.elements == agreeing.elements and clean.reading == Reading.WITHIN_ROUNDING


def test_a_gradient_left_disputed_names_the_side_a_forward_outputs_dispute_stays():
    """No gradient check (none ran): the dispute stays, and the agreeing elements' side is the gradient's reading;
    the same reading labelled as a forward output is a semantics question and is left as it was."""
    reading = grad_x_reading(NOISY)
    final = read_with_gradient_check(reading, None)
    assert final.reading == Reading.PADDLE_OFF and "where the float64 results agree" in final.evidence
    assert final.float64_oracle["no_oracle"] == NoOracle.DISPUTED and "convention" not in final.to_dict()
    assert OutputReading.from_dict(json.loads(json.dumps(final.to_dict()))) == final  # the JSON reads back
    forward = replace(reading, output="output 0")
    assert read_with_gradient_check(forward, None) == forward


def test_agreeing_elements_are_absent_where_the_float64_results_agree_everywhere_or_nowhere():
    low = Out(np.array([1.0, 2.0], dtype=np.float32), "float32", True)
    same, other = (Out(np.array(v), "float64", True) for v in ([1.0, 2.0], [3.0, 5.0]))
    assert agreeing_elements(low, low, same, same) is None and agreeing_elements(low, low, same, other) is None
    assert "agreeing_elements" not in read_output("grad x", low, low, same, same).to_dict()
    half = Out(np.array([1.0, 5.0]), "float64", True)
    assert read_output("grad x", low, low, same, half).to_dict()["agreeing_elements"]["elements"] == 1
    typed = agreeing_elements(low, low, same, half)  # the typed reading is what the JSON says
    assert read_output("grad x", low, low, same, half).agreeing_elements == typed
    assert AgreeingElements.from_dict(read_output("grad x", low, low, same, half).to_dict()["agreeing_elements"]) == typed


def test_a_real_maximum_with_ties_has_no_dispute_to_read_past():
    """Paddle's own maximum (3.3.1 splits a tie as Torch does): the float64 gradients agree, nothing is added."""
    prepared = prepare_strict('paddle.maximum(Tensor([40],"float32"), Tensor([40],"float32"), )')
    materialised = draw_inputs(prepared, Draw("typical", 0))
    x, y = (t.array for t in input_tensors(materialised))
    assert (x == y).any()  # ties drawn
    oracle = oracle_for(prepared, materialised, Draw("typical", 0), grads=True)
    for reading in oracle.readings:
        assert reading.reading == Reading.WITHIN_ROUNDING and reading.agreeing_elements is None


@pytest.fixture(scope="module")
def noisy():
    return json.loads(json.dumps(diagnose_config(NOISY, max_seconds=30)))


def test_a_value_error_off_the_ties_is_the_final_reading_with_the_convention_beside_it(noisy):
    reading = noisy["reading"]
    assert reading["reading"] == Reading.PADDLE_OFF and reading["oracle"] == ReadingSource.FLOAT64_ORACLE
    assert reading["convention"]["kind"] == ConventionKind.SUBGRADIENT
    assert reading["agreeing_elements"]["reading"] == Reading.PADDLE_OFF
    assert reading["paddle"]["rmse"] > 100 * reading["torch"]["rmse"]
    assert "Paddle off on the" in reading["evidence"] and "without a tie" in reading["evidence"]
    assert "both give a subgradient" in reading["evidence"]
    assert noisy["implied_verdict"] is None  # Paddle off: the verdict stands
    assert "without a tie" in render_text(noisy).splitlines()[1]


def test_ties_without_a_hidden_error_stay_a_convention():
    reading = json.loads(json.dumps(diagnose_config(CLEAN, max_seconds=30)))["reading"]
    assert reading["reading"] == Reading.CONVENTION
    assert reading["convention"]["kind"] == ConventionKind.SUBGRADIENT
    assert reading["agreeing_elements"]["reading"] == Reading.WITHIN_ROUNDING


def test_who_is_closer_reads_the_side_hidden_behind_the_ties_too():
    """The verdict's closer reading (apitester.readings, no gradient check) reads a gradient disputed only at the
    ties on the elements where the float64 results agree, as the diagnosis does: Paddle off on the noisy spec; on
    the clean one no side is named (its 40 elements are few enough for the gradient check: the tie convention)."""
    from apitester.readings import run_with_readings

    noisy = run_with_readings(NOISY)
    assert noisy.closer == Reading.PADDLE_OFF and noisy.closer_output == "grad x", (noisy.closer, noisy.closer_code)
    assert noisy.paddle_rmse > 3 * noisy.torch_rmse
    clean = run_with_readings(CLEAN)
    assert clean.closer == Reading.CONVENTION, (clean.closer, clean.closer_code)
