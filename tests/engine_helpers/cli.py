"""The engine's CLI (python -m apitester) in a real subprocess, importing real paddle and torch."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAKE_SPECS = "tests.fake_specs.engine"  # for APITESTER_EXTRA_SPECS: the apitester_test.* specs


def run(*args, extra_env=None, timeout=300):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)  # the worktree's packages, and tests.fake_specs
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "apitester", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
