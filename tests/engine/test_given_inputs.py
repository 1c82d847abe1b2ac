"""--inputs FILE.npz (issue 44): a config judged and diagnosed on the arrays a user gives, named as the API's
parameters; arrays that do not fit the config are refused with the reason, never patched over.

Real paddle and torch: the CLI runs in a subprocess (tests.engine_helpers.cli), the naming and the checks in-process.
"""
import json

import numpy as np
import pytest

from apitester import inputs as inp
from apitester.engine.trial import prepare
from tests.engine_helpers.cli import run

CUMSUM = 'paddle.cumsum(Tensor([32],"float32"), axis=0, )'
# 1e8 absorbs each 1.0 in float32 (1e8 + 1 == 1e8), so the running sum depends on the order it is summed in: the
# drawn inputs in [-1, 1) pass, this one does not (Paddle and Torch differ by tens at the tail).
ABSORBING = np.array([1e8] + [1.0] * 30 + [-1e8], dtype=np.float32)


def _npz(tmp_path, name="x.npz", **arrays):
    path = tmp_path / name
    np.savez(path, **arrays)
    return str(path)


def test_a_given_input_fails_where_the_drawn_inputs_pass(tmp_path):
    drawn = run(f"--api_config={CUMSUM}", "--json")
    assert drawn.returncode == 0, drawn.stdout + drawn.stderr
    assert json.loads(drawn.stdout)["status"] == "pass"
    given = run(f"--api_config={CUMSUM}", "--inputs", _npz(tmp_path, x=ABSORBING), "--json")
    assert given.returncode == 1, given.stderr
    verdict = json.loads(given.stdout)
    assert verdict["status"] == "accuracy_error" and verdict["direction"] == "forward"
    assert verdict["draw"]["kind"] == inp.GIVEN and verdict["inputs"].endswith("x.npz")
    assert verdict["max_abs"] >= 1.0  # tens apart, not a rounding


def test_diagnose_reads_the_given_draw(tmp_path):
    path = _npz(tmp_path, x=ABSORBING)
    proc = run("diagnose", CUMSUM, "--inputs", path, "--max-trials", "4", "--max-seconds", "20", "--json")
    assert proc.returncode == 1, proc.stderr
    diagnosis = json.loads(proc.stdout)
    assert diagnosis["diagnosed"] is True and diagnosis["inputs"] == path
    assert diagnosis["verdict"]["draw"]["kind"] == inp.GIVEN
    if diagnosis["shrink"]["config"] == CUMSUM:  # kept whole: the repro command re-reads the file
        assert diagnosis["repro"]["command"].endswith(f" --inputs {path}")
    assert diagnosis["reading"]["output"] == "output 0"


@pytest.mark.parametrize("arrays, reason", [
    ({"x": np.zeros([31], np.float32)}, "array 'x' has shape [31], the config's x is [32]"),
    ({"x": np.zeros([32], np.float64)}, "array 'x' has dtype float64, the config's x is float32"),
    ({"y": np.zeros([32], np.float32)}, "missing x; not a tensor of the config: y"),
    ({"x": np.zeros([32], np.float32), "axis": np.zeros([1], np.int64)}, "not a tensor of the config: axis"),
])
def test_arrays_that_do_not_fit_the_config_are_refused_with_the_reason(arrays, reason):
    trial = prepare(CUMSUM)
    with pytest.raises(inp.GivenInputsError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        trial.inputs_of(inp.give_inputs(arrays, "test"))


def test_the_cli_refuses_a_malformed_npz_before_running(tmp_path):
    wrong_shape = run(f"--api_config={CUMSUM}", "--inputs", _npz(tmp_path, x=np.zeros([4, 8], np.float32)))
    assert wrong_shape.returncode == 2 and wrong_shape.stdout == ""
    assert "array 'x' has shape [4, 8], the config's x is [32]" in wrong_shape.stderr
    not_npz = tmp_path / "not.npz"
    not_npz.write_text("x = [1, 2, 3]\n")
    refused = run("diagnose", CUMSUM, "--inputs", str(not_npz))
    assert refused.returncode == 2 and "cannot read it as an .npz" in refused.stderr


def test_a_list_parameter_is_given_as_numbered_arrays():
    trial = prepare('paddle.concat(x=[Tensor([2],"float32"), Tensor([3],"float32")], axis=0, )')
    first, second = np.array([1, 2], np.float32), np.array([3, 4, 5], np.float32)
    assert list(inp.given_names(trial.parsed)) == ["x.0", "x.1"]
    values = trial.inputs_of(inp.give_inputs({"x.0": first, "x.1": second}))
    assert [t.array.tolist() for t in values["x"]] == [[1, 2], [3, 4, 5]]
    assert values["axis"] == 0


def test_bfloat16_is_given_as_float32_holding_bfloat16_values():
    trial = prepare('paddle.sum(Tensor([2],"bfloat16"), )')
    exact = np.array([1.0, 1.5], np.float32)
    assert trial.inputs_of(inp.give_inputs({"x": exact}))["x"].dtype == "bfloat16"
    with pytest.raises(inp.GivenInputsError, match="not bfloat16 values"):
        trial.inputs_of(inp.give_inputs({"x": np.array([1.0, 1.0 + 2.0 ** -20], np.float32)}))
