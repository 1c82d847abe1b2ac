"""Test-only specs for worker processes (APITESTER_EXTRA_SPECS=tests.fake_specs.workers).

They stand for the ways a real Paddle kernel misbehaves inside a worker: it kills the
process, never returns, needs more memory than the worker has, dies once and then works,
regresses, answers differently from run to run (flaky), or crashes on one Paddle release only.
"""
import os
import signal
import sys
import time

from apitester.specs.base import Spec, register

from . import die_once, hang, segfault


def _exit(x):
    os._exit(3)


register(
    Spec(api="paddle.testonly.segfault", torch=lambda x: x, paddle=segfault, signature=lambda x: None,
         backward=False),
    Spec(api="paddle.testonly.hang", torch=lambda x: x, paddle=hang, signature=lambda x: None, backward=False),
    Spec(api="paddle.testonly.huge", torch=lambda x: x, paddle=lambda x: x, signature=lambda x: None,
         backward=False),
    Spec(api="paddle.testonly.die_once", torch=lambda x, marker: x * 2, paddle=die_once,
         signature=lambda x, marker: None, backward=False),
    Spec(api="paddle.testonly.exit", torch=lambda x: x, paddle=_exit, signature=lambda x: None, backward=False),
)


def _regressing(x, marker):
    # Stands for a Paddle build that broke a kernel: wrong by 1 once the marker file exists.
    return x + 1 if os.path.exists(marker) else x


# counter file -> the turn this worker process took (one per process: every call of a run answers alike)
_FLAKY_TURNS: dict[str, int] = {}


def _flaky(x, counter):
    # Stands for a kernel whose answer changes from run to run (a race, uninitialised memory): each worker process
    # takes the next turn from the counter file at its first call and keeps it; odd turns are wrong by 1. A run
    # with one fresh worker process is one turn, so the verdict alternates pass, fail, pass, ... run to run.
    if counter not in _FLAKY_TURNS:
        turn = int(open(counter).read() or 0) if os.path.exists(counter) else 0
        with open(counter, "w") as f:
            f.write(str(turn + 1))
        _FLAKY_TURNS[counter] = turn
    return x + 1 if _FLAKY_TURNS[counter] % 2 else x


def _slow(x, seconds):
    time.sleep(seconds)
    return x


register(
    Spec(api="paddle.testonly.regressing", torch=lambda x, marker: x, paddle=_regressing,
         signature=lambda x, marker: None, backward=False),
    Spec(api="paddle.testonly.flaky", torch=lambda x, counter: x, paddle=_flaky, signature=lambda x, counter: None,
         backward=False),
    Spec(api="paddle.testonly.slow", torch=lambda x, seconds: x, paddle=_slow, signature=lambda x, seconds: None,
         backward=False),
)


def _allocate_numpy(x, mib):
    import numpy as np

    return x + float(np.ones(mib << 20, dtype=np.uint8).sum() > 0)


def _allocate_paddle(x, mib):
    import paddle

    return x + paddle.ones([mib << 18], dtype="float32").sum() * 0


def _allocate_torch(x, mib):
    import torch

    return x + torch.ones(mib << 18, dtype=torch.float32).sum() * 0


# Stand for a kernel that needs far more memory than the config's inputs suggest (deform_conv2d,
# roi_align): the estimate lets them run, the worker's address-space limit stops them.
register(
    Spec(api="paddle.testonly.allocate_numpy", torch=lambda x, mib: x + 1, paddle=_allocate_numpy,
         signature=lambda x, mib: None, backward=False),
    Spec(api="paddle.testonly.allocate_paddle", torch=lambda x, mib: x, paddle=_allocate_paddle,
         signature=lambda x, mib: None, backward=False),
    Spec(api="paddle.testonly.allocate_torch", torch=_allocate_torch, paddle=lambda x, mib: x,
         signature=lambda x, mib: None, backward=False),
)


def _garbage_answer(x):
    # Stands for a worker whose answer the parent can't read (a library writing to the wrong descriptor): a
    # line that is not JSON on the result pipe (argv: -m apitester.pool --worker JOB_FD RESULT_FD ...).
    os.write(int(sys.argv[3]), b"not a verdict {\n")
    return x


def _kill_executor(x):
    # Stands for whatever takes the executor process down with the config each time (the OOM killer choosing
    # the parent): the worker's parent is the executor; the worker follows it (PR_SET_PDEATHSIG). Not at once: a
    # config's memory grows for a while before the killer picks a process, and the pool sends a freed worker its
    # next config before the executor has stored the verdict it just received (WorkerPool.run), which this
    # test-only kernel would otherwise kill in the middle of -- a verdict that then runs again on resume.
    time.sleep(1.0)
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(60)
    return x


register(
    Spec(api="paddle.testonly.garbage_answer", torch=lambda x: x, paddle=_garbage_answer, signature=lambda x: None,
         backward=False),
    Spec(api="paddle.testonly.kill_executor", torch=lambda x: x, paddle=_kill_executor, signature=lambda x: None,
         backward=False),
)


def _crash_on(x, release):
    # Stands for a config that crashes one release's build: kills its worker on that Paddle release only.
    import paddle

    if paddle.version.full_version == release:
        os.kill(os.getpid(), signal.SIGSEGV)
    return x


register(Spec(api="paddle.testonly.crash_on_release", torch=lambda x, release: x, paddle=_crash_on,
              signature=lambda x, release: None, backward=False))


# A fake release env (tests/releases/fake_envs.py) is the main interpreter with FAKE_PADDLE_RELEASE set: the
# worker reports that release as its build (this module is imported before the worker says it is ready).
if os.environ.get("FAKE_PADDLE_RELEASE"):
    import paddle

    paddle.version.full_version = os.environ["FAKE_PADDLE_RELEASE"]
# ... and with FAKE_TORCH_RELEASE, the Torch it pairs with (an env of `paddle_envs add X --torch V`).
if os.environ.get("FAKE_TORCH_RELEASE"):
    import torch

    torch.__version__ = os.environ["FAKE_TORCH_RELEASE"]


def _moved_reference(x, moved_in):
    import torch

    # Stands for a reference that moved between Torch versions: one more from Torch `moved_in` on.
    return x + 1 if _version(torch.__version__) >= _version(moved_in) else x


register(Spec(api="paddle.testonly.torch_moved", torch=_moved_reference, paddle=lambda x, moved_in: x,
              signature=lambda x, moved_in: None, backward=False))


def _version(text):
    return tuple(int(p) for p in text.split("+")[0].split(".")[:3])


def _fixed_in(x, release):
    import paddle

    # Off by one before `release`: an accuracy error on older builds, a pass from `release` on.
    return x if _version(paddle.version.full_version) >= _version(release) else x + 1


register(Spec(api="paddle.testonly.fixed_in_release", torch=lambda x, release: x, paddle=_fixed_in,
              signature=lambda x, release: None, backward=False))
