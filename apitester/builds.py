"""The Paddle build a Python interpreter runs, and the order of Paddle release names.

``build_info`` reads the build in this process (a pool worker reports it when ready: every verdict records it);
``probe_build`` asks another process for it — this interpreter's, so the caller never imports paddle or torch, or
another env's (tracker/services/paddle_envs.py probes each env it builds). One definition for both, so the
versions a worker reports and the ones an env was built with are read the same way.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[1]
_PRINT_BUILD = "import json; from apitester.builds import build_info; print(json.dumps(build_info()))"
# Which of the flags named in argv this interpreter's Paddle defines, and their types (None: not defined).
_PRINT_FLAGS = ("import json, sys, paddle; from apitester.paddle_flags import kind_of, read_flags; "
                "print(json.dumps({n: None if v is None else kind_of(v) for n, v in read_flags(paddle, sys.argv[1:]).items()}))")


class ProbeError(RuntimeError):
    """The interpreter could not report its build (paddle, torch or numpy does not import)."""


# A build between releases (issue #46): a post build of a release ("3.3.1.post20260403") or a develop build before
# one ("3.4.0.dev20260403"); the number is the build's date (YYYYMMDD) in Paddle's nightly and post names.
_BUILD = re.compile(r"^(\d+)\.(\d+)\.(\d+)\.(post|dev)(\d+)$")


def version_key(version: str) -> tuple:
    """A release name as a sortable key: "3.10.0" after "3.9.1"; a suffix ("3.3.1+cu118", "3.0.0-rc1") is ignored.

    A build between releases sorts among them: "3.3.1.post20260403" after 3.3.1 and before 3.3.2, posts of one
    release by their number (the date); "3.4.0.dev20260403", a develop build on the way to 3.4.0, after every
    build of the release before it (3.3.x and its posts) and before 3.4.0."""
    build = _BUILD.match((version or "").split("+")[0])
    if build:
        major, minor, patch, kind, number = build.groups()
        patch_key = int(patch) if kind == "post" else int(patch) - 1  # a dev build precedes its release
        return (int(major), int(minor), patch_key, 1, int(number))
    return tuple(int(part) if part.isdigit() else 0 for part in re.split(r"[.+-]", version or "")[:3])


def is_build(version: str) -> bool:
    """A post or develop build, not a release (version_key places it between releases)."""
    return bool(_BUILD.match((version or "").split("+")[0]))


def build_info() -> dict:
    """The build this process runs (imports paddle and torch): Paddle's full version and commit, the Torch and numpy
    versions, and whether this Paddle has CUDA."""
    import numpy
    import paddle
    import torch

    return {
        # The full version and commit identify the build a verdict came from (a release lane stores them).
        "paddle_version": getattr(paddle.version, "full_version", paddle.__version__),
        "paddle_commit": getattr(paddle.version, "commit", ""),
        "torch_version": torch.__version__,
        "numpy_version": numpy.__version__,
        "cuda": bool(paddle.is_compiled_with_cuda()),
    }


def _probe(python: str | None, code: str, args: list[str], timeout: float) -> dict:
    env = {**os.environ, "GLOG_minloglevel": "2", **({"PYTHONPATH": str(_REPO_ROOT)} if python else {})}
    out = subprocess.run([python or sys.executable, "-c", code, *args], capture_output=True, text=True,
                         timeout=timeout, env=env, cwd=str(_REPO_ROOT))
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ProbeError(f"cannot import paddle/torch/numpy: {out.stderr.strip()[-500:]}")


def probe_flags(python: str | None, names: list[str], *, timeout: float = 120.0) -> dict[str, str | None]:
    """Which of these Paddle flags ``python``'s Paddle defines: {name: "bool" / "int" / "float" / "str", or None
    when ``paddle.get_flags`` raises for it} (a fresh process, as ``probe_build``)."""
    return _probe(python, _PRINT_FLAGS, list(names), timeout)


def probe_build(python: str | None = None, *, timeout: float = 120.0) -> dict:
    """``build_info()`` as a fresh process of ``python`` (default: this interpreter) reports it.

    Another env's interpreter gets only this repository on its path, so its own paddle, torch and numpy answer,
    never this process's packages.
    """
    return _probe(python, _PRINT_BUILD, [], timeout)
