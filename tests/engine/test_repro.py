"""The repro script round trip: written to a file, run with the venv's python in a subprocess, it
exits 1 on the assert and reports the same failure as the engine's verdict of the shrunk config."""
import json
import subprocess
import sys

import pytest

from diagnosis_helpers import MUL_FP16, subprocess_env
from apitester.diagnosis.diagnose import diagnose_config
from apitester.diagnosis.repro import LITERAL_MAX_ELEMENTS, repro_script


def run_script(source: str, tmp_path):
    path = tmp_path / "repro.py"
    path.write_text(source)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=subprocess_env(),
                          timeout=300, cwd=tmp_path)
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("config", [
    MUL_FP16,
    'apitester_test.tanh_wrong_grad(Tensor([3, 2],"float32"), )',              # a backward failure
    'apitester_diag.matmul_off(Tensor([6, 4],"float32"), Tensor([4, 6],"float32"), )',
    'paddle.nn.functional.one_hot(Tensor([4],"int64"), num_classes=10, )',      # dtype_mismatch
])
def test_the_shrunk_configs_script_reproduces_its_failure(config, tmp_path):
    diagnosis = diagnose_config(config)
    assert diagnosis["diagnosed"], diagnosis
    proc, outcome = run_script(diagnosis["repro"]["script"], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "AssertionError" in proc.stderr
    failure = diagnosis["failure"]
    assert outcome == {"status": failure["status"], "direction": failure["direction"], "output": failure["output"]}


def test_large_inputs_are_drawn_by_code_and_still_reproduce(tmp_path):
    config = 'apitester_diag.paddle_off(Tensor([40, 40],"float32"), )'
    source = repro_script(config, "typical:0")
    assert 40 * 40 > LITERAL_MAX_ELEMENTS and "draw_arguments(CONFIG, 'typical:0')" in source
    proc, outcome = run_script(source, tmp_path)
    assert proc.returncode == 1 and outcome["status"] == "accuracy_error"


def test_a_passing_config_s_script_exits_0(tmp_path):
    proc, outcome = run_script(repro_script('paddle.clip(Tensor([5],"float64"), min=0, )', "typical:0"), tmp_path)
    assert proc.returncode == 0 and outcome["status"] == "pass", proc.stderr


@pytest.mark.parametrize("draw", ["typical:0@2", "edge:1", "typical:3@2"])
def test_the_scripts_output_gradient_is_the_engines_in_the_draws_format(draw):
    """The script draws its own output gradients (random_grad): for a big float output they are the engine's values
    in the draw's format (format 2 draws them from raw words, format 1 as numpy's uniform), or the script's backward
    would test other gradients than the verdict's."""
    import ast
    import zlib

    import numpy as np

    from apitester import inputs
    from apitester.engine import trial

    source = repro_script('apitester_test.tanh_wrong_grad(Tensor([300, 300],"float32"), )', draw)
    tree = ast.parse(source)
    wanted = [node for node in tree.body if (isinstance(node, ast.FunctionDef) and node.name == "random_grad") or
              (isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("SEED", "FORMAT")) or
              (isinstance(node, ast.ImportFrom) and node.module == "apitester.inputs")]
    namespace = {"np": np, "zlib": zlib}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "repro", "exec"), namespace)
    parsed = inputs.Draw.parse(draw)
    assert (namespace["SEED"], namespace["FORMAT"]) == (parsed.seed, parsed.format)
    for shape, dtype in (((300, 300), "float32"), ((300, 301), "float16"), ((70001,), "bfloat16"), ((5, 4), "float32"),
                         ((300, 300), "float64")):
        script = namespace["random_grad"](shape, dtype, 1)
        engine = trial.output_gradient(shape, dtype, parsed.seed, 1, parsed.format)
        assert script.dtype == engine.dtype and np.array_equal(script, engine), (shape, dtype)
