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
