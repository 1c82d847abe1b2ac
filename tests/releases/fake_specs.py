"""Test-only spec (APITESTER_EXTRA_SPECS=tests.releases.fake_specs): a kernel that kills its worker on one
Paddle release only, standing for a config that crashes one release's build."""
import os
import signal

from apitester.specs.base import Spec, register


def _crash_on(x, release):
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


def _version(text):
    return tuple(int(p) for p in text.split("+")[0].split(".")[:3])


def _fixed_in(x, release):
    import paddle

    # Off by one before `release`: an accuracy error on older builds, a pass from `release` on.
    return x if _version(paddle.version.full_version) >= _version(release) else x + 1


register(Spec(api="paddle.testonly.fixed_in_release", torch=lambda x, release: x, paddle=_fixed_in,
              signature=lambda x, release: None, backward=False))
