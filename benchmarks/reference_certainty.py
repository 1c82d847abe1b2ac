"""What the reference's second precision costs (issue #44): one oracle read of a draw, best of 3, with the check
off ("before": ``reference.SIDE_READINGS`` emptied, so no reading re-runs the reference at 80 digits) and on.

    PYTHONPATH=. .venv/bin/python benchmarks/reference_certainty.py

The cases: the test specs' references (tests/engine) and linalg float64 configs; docs/diagnosis.md records a run.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "engine"))
import diagnosis_helpers  # noqa: E402,F401  (registers the apitester_diag.* specs)
import test_reference_certainty as T  # noqa: E402  (the exactly singular matrix)
from apitester.diagnosis import oracle as orc
from apitester.diagnosis import reference as ref_module
from apitester.diagnosis.shrink import draw_inputs, prepare_strict
from apitester.inputs import Draw, InputTensor

D = Draw("typical", 0)
CASES = [
    ('apitester_diag.ref_paddle_off(Tensor([16],"float32"), )', None),
    ('apitester_diag.ref_paddle_off(Tensor([4096],"float32"), )', None),
    ('apitester_diag.expm1_naive(Tensor([256],"float64"), )', None),
    ('apitester_diag.sinc_naive(Tensor([256],"float32"), )', None),
    (T.COND, T.SINGULAR),
    ('paddle.linalg.cond(Tensor([3, 16, 16],"float64"), )', None),
    ('paddle.linalg.pinv(Tensor([12, 12],"float64"), )', None),
    ('paddle.linalg.eigvalsh(Tensor([16, 16],"float64"), )', None),
]


def once(config, x):
    prepared = prepare_strict(config)
    m = draw_inputs(prepared, D)
    if x is not None:
        m["x"] = InputTensor(x, "float64")
    began = time.perf_counter()
    found = orc.oracle_for(prepared, m, D, grads=False)
    return time.perf_counter() - began, [(r["reading"], r.get("no_oracle")) for r in found.readings][:1]


def main() -> None:
    for config, x in CASES:
        measure(config, x)


def measure(config, x) -> None:
    once(config, x)  # warm
    saved = ref_module.SIDE_READINGS
    ref_module.SIDE_READINGS = ()
    before = min(once(config, x)[0] for _ in range(3))
    ref_module.SIDE_READINGS = saved
    runs = [once(config, x) for _ in range(3)]
    after = min(r[0] for r in runs)
    print(f"{config[:60]:60s} before {before:7.3f}s after {after:7.3f}s  x{after / before:5.2f}  {runs[0][1]}")


if __name__ == "__main__":
    main()
