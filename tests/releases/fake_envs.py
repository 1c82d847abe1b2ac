"""Fake release envs for bisection and Torch-axis tests: PADDLE_ENVS_DIR entries whose python is the main interpreter
with FAKE_PADDLE_RELEASE (and FAKE_TORCH_RELEASE for an env pairing a release with another Torch) set:
tests.fake_specs.workers makes the worker report that build."""
import json
import sys

from tracker.selectors.envs import env_key


def make_fake_envs(root, releases, torch=""):
    for release in releases:
        env = root / env_key(release, torch)
        (env / "bin").mkdir(parents=True)
        python = env / "bin" / "python"
        fake_torch = f"FAKE_TORCH_RELEASE={torch} " if torch else ""
        python.write_text(f'#!/bin/sh\nFAKE_PADDLE_RELEASE={release} {fake_torch}exec {sys.executable} "$@"\n')
        python.chmod(0o755)
        described = {"version": release, "paddle_version": release}
        if torch:
            described.update(torch_pin=torch, torch_version=torch)
        (env / "paddle-env.json").write_text(json.dumps(described))
    return root
