"""Fake release envs for bisection tests: PADDLE_ENVS_DIR entries whose python is the main interpreter
with FAKE_PADDLE_RELEASE set (tests.fake_specs.workers makes the worker report that build)."""
import json
import sys


def make_fake_envs(root, releases):
    for release in releases:
        env = root / release
        (env / "bin").mkdir(parents=True)
        python = env / "bin" / "python"
        python.write_text(f'#!/bin/sh\nFAKE_PADDLE_RELEASE={release} exec {sys.executable} "$@"\n')
        python.chmod(0o755)
        (env / "paddle-env.json").write_text(json.dumps({"version": release, "paddle_version": release}))
    return root
