"""Input draws on a real old release: logit's NaN region (issue 18).  Paddle 3.0.0's logit gradient is
0 where Torch's is NaN (x outside (0, 1)); the typical draw of the report's 4-element config lands
inside (0, 1), so only the edge draw finds it."""
import json
import os
import subprocess
from pathlib import Path

from apitester.pool import TimeBudget, WorkerPool

LOGIT = 'paddle.logit(x=Tensor([4],"float32"), )'  # the CPU task's report config
REPO = Path(__file__).resolve().parents[2]


def _verdicts(python: str | None) -> dict:
    with WorkerPool(1, time_budget=TimeBudget(base=120.0), python=python) as pool:
        return {r.config: r.verdict for r in pool.run([(LOGIT, LOGIT)])}


def test_logit_nan_region_gradient_fails_on_3_0_0_in_its_edge_draw_and_passes_on_the_main_release(old_env):
    old = _verdicts(old_env.python)[LOGIT]
    assert (old["status"], old["direction"]) == ("accuracy_error", "backward"), old["message"]
    assert old["draw"] == {"kind": "edge", "seed": 0, "format": 2} and old["draws"] == ["typical:0@2", "edge:0@2"]
    assert "ACTUAL (paddle): np.float32(0.0)" in old["message"] and "DESIRED (torch): np.float32(nan)" in old["message"]
    new = _verdicts(None)[LOGIT]
    assert new["status"] == "pass" and new["draws"] == ["typical:0@2", "edge:0@2", "typical:1@2", "typical:2@2"], new["message"]

    # the typical draw alone is the old single-draw verdict (the false pass); the edge draw replays the
    # failure (one process of the old env for both replays: its paddle import is the slow part)
    replay = ("import json, sys; from apitester.engine.execute import run_config\n"
              "for draw in ('typical:0@2', 'edge:0@2'): print(json.dumps(run_config(sys.argv[1], draw=draw).to_dict()))")
    proc = subprocess.run([old_env.python, "-c", replay, LOGIT], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)
    typical, edge = [json.loads(line) for line in proc.stdout.splitlines()]
    assert typical["status"] == "pass" and typical["draw"] == {"kind": "typical", "seed": 0, "format": 2}
    assert {k: edge[k] for k in ("status", "direction", "mismatched", "message", "draw")} == \
        {k: old[k] for k in ("status", "direction", "mismatched", "message", "draw")}
