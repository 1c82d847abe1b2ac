"""Under which conditions a verdict holds (issue #46): the builds, the threads and the CPU it was given on.

``provenance()`` is read once per process (a pool worker when it is ready, the CLI before its first config) and
every verdict of that process carries it as ``provenance``::

    {"paddle_version", "paddle_commit", "torch_version", "numpy_version",
     "threads": {"torch", "torch_interop", "paddle", "omp_env", "mkl_env"},
     "cpu_capability": {"torch", "paddle", "cpu_flags", "cpu_model"}, "host"}

``threads`` is what each framework is set to use: Torch's own count (``torch.get_num_threads()``); Paddle has no
getter, so ``paddle`` is the count this process gave ``paddle.base.core.set_num_threads`` (None when nothing set
it) beside the OMP/MKL environment Paddle's OpenMP and MKL read at import. ``cpu_capability`` is the instruction
set level each framework dispatches to: Torch's ``torch.backends.cpu.get_cpu_capability()`` ("AVX2", "AVX512",
...), Paddle's from its own checks (``supports_avx512f``, ``is_compiled_with_avx``), with the CPU's AVX flags and
model from /proc/cpuinfo — Paddle's sin/cos/pow take separate AVX-512 and AVX2 paths, so a verdict read on one CPU
need not hold on the other.

``pin_threads(n)`` pins both frameworks to ``n`` threads: the environment before paddle/torch are imported, the
frameworks' setters after. Plain Python; paddle and torch are imported only by the functions that need them.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
_AVX_FLAGS = ("avx512f", "avx512bw", "avx512vl", "avx2", "avx", "fma")
FIELDS = ("paddle_version", "paddle_commit", "torch_version", "numpy_version", "threads", "cpu_capability", "host")

_paddle_threads: int | None = None  # what this process gave paddle.base.core.set_num_threads
_cached: dict | None = None


def thread_env(threads: int) -> dict[str, str]:
    """The environment that pins OpenMP, MKL, OpenBLAS and numexpr to ``threads`` (read when they load)."""
    return {name: str(int(threads)) for name in THREAD_ENV}


def pin_threads(threads: int) -> None:
    """Pin Torch and Paddle to ``threads`` in this process (imports both); the OMP/MKL environment is set too, for
    what loads later (a pool worker also sets it before the imports, as it must be for OpenMP's first read)."""
    global _paddle_threads, _cached
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    os.environ.update(thread_env(threads))
    import paddle
    import torch

    torch.set_num_threads(threads)
    try:
        paddle.base.core.set_num_threads(threads)
        _paddle_threads = threads
    except Exception:  # a build without the setter: the OMP environment is what it reads
        _paddle_threads = None
    _cached = None  # the next provenance() reads the new counts


def cpu_info(path: str = "/proc/cpuinfo") -> dict:
    """The CPU model and its AVX-family flags, as the kernel reports them (empty where the file says nothing)."""
    model, flags = "", set()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError:
        pass
    return {"cpu_model": model, "cpu_flags": [flag for flag in _AVX_FLAGS if flag in flags]}


def _paddle_capability(core, cpu_flags: list[str]) -> str:
    """The level Paddle's CPU kernels dispatch to: its own AVX-512 check first, then AVX2/AVX of a build with AVX."""
    try:
        if core.supports_avx512f():
            return "AVX512"
        if not core.is_compiled_with_avx():
            return "DEFAULT"
    except Exception:
        return ""
    if "avx2" in cpu_flags:
        return "AVX2"
    return "AVX" if "avx" in cpu_flags else "DEFAULT"


def read_provenance() -> dict:
    """This process's provenance, read now (imports paddle, torch and numpy)."""
    import numpy
    import paddle
    import torch

    cpu = cpu_info()
    return {
        "paddle_version": getattr(paddle.version, "full_version", paddle.__version__),
        "paddle_commit": getattr(paddle.version, "commit", ""),
        "torch_version": torch.__version__,
        "numpy_version": numpy.__version__,
        "threads": {"torch": torch.get_num_threads(), "torch_interop": torch.get_num_interop_threads(),
                    "paddle": _paddle_threads, "omp_env": os.environ.get("OMP_NUM_THREADS", ""),
                    "mkl_env": os.environ.get("MKL_NUM_THREADS", "")},
        "cpu_capability": {"torch": torch.backends.cpu.get_cpu_capability(),
                           "paddle": _paddle_capability(paddle.base.core, cpu["cpu_flags"]), **cpu},
        "host": socket.gethostname(),
    }


def provenance() -> dict:
    """This process's provenance, read once (pin_threads reads it again): a verdict pays nothing for it."""
    global _cached
    if _cached is None:
        _cached = read_provenance()
    return _cached


def thread_count(prov: dict | None) -> int | None:
    """The thread count a provenance names: Torch's (both frameworks are pinned to the same count), else Paddle's."""
    threads = (prov or {}).get("threads") or {}
    for key in ("torch", "paddle"):
        value = threads.get(key) if isinstance(threads, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def fingerprint(prov: dict) -> str:
    """A stable digest of a provenance (the tracker stores each distinct one once)."""
    return hashlib.sha256(json.dumps(prov, sort_keys=True, default=str).encode()).hexdigest()
