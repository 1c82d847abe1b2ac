"""Shared by the diagnosis tests: the test specs loaded in this process and in subprocesses."""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXTRA = "diagnosis_test_specs,apitester_test_specs"

if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import apitester_test_specs  # noqa: E402,F401  (registers apitester_test.*)
import diagnosis_test_specs  # noqa: E402,F401  (registers apitester_diag.*)

MUL_FP16 = 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )'


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(HERE)])
    env["APITESTER_EXTRA_SPECS"] = EXTRA
    return env
