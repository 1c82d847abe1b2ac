"""Paddle kernels that die on some CPUs, probed once per process in a child, so an in-process test of them can say
why it did not run instead of taking its pytest worker down.

Paddle 3.3.1's CPU ``fused_layer_norm`` kernel dies with SIGILL on an AMD EPYC without AVX-512 (2026-12-06); the
same wheel runs it on the Intel Xeon the suite usually runs on.  The runner reports such a config as ``crash`` in
its worker (tests/runner/test_hostile_configs.py), never as a verdict; only the tests that call the kernel in the
pytest process itself need this.
"""
import functools
import signal
import subprocess
import sys

import pytest

PROBES = {
    "fused_layer_norm": (
        "import numpy as np, paddle\n"
        "from paddle.incubate.nn.functional import fused_layer_norm\n"
        "x = paddle.to_tensor(np.ones((2, 8), 'float32'))\n"
        "fused_layer_norm(x, paddle.ones([8]), paddle.zeros([8]), 1e-5, begin_norm_axis=1)\n"),
}


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "this CPU"


@functools.lru_cache(maxsize=None)
def kernel_dies(kernel: str) -> str | None:
    """Why Paddle's ``kernel`` cannot run in this process on this machine (a signal in the probe), or None."""
    probe = subprocess.run([sys.executable, "-c", PROBES[kernel]], capture_output=True, timeout=300)
    if probe.returncode < 0 or probe.returncode in (128 + signal.SIGILL, 128 + signal.SIGSEGV):
        code = -probe.returncode if probe.returncode < 0 else probe.returncode - 128
        return f"Paddle's CPU {kernel} kernel dies with {signal.Signals(code).name} on {_cpu()}"
    assert probe.returncode == 0, probe.stderr.decode(errors="replace")[-2000:]
    return None


def require_kernel(kernel: str) -> None:
    """Skip (with the reason, shown by -ra) when the kernel kills the process on this CPU."""
    why = kernel_dies(kernel)
    if why:
        pytest.skip(why)
