"""Test-only spec module (APITESTER_EXTRA_SPECS=tests.runner.hang_on_import_specs) whose import
hangs once the file named by APITESTER_TEST_HANG_MARKER exists: it stands for a worker that hangs
while importing (a wedged shared filesystem, a stuck driver).

``paddle.testonly.crash_then_hang_on_start`` creates the marker and kills its worker, so the
retry's fresh worker hangs during start-up.
"""
import os
import signal
import time

from apitester.specs.base import Spec, register

_MARKER = os.environ.get("APITESTER_TEST_HANG_MARKER", "")

if _MARKER and os.path.exists(_MARKER):
    time.sleep(3600)


def _crash_then_hang_on_start(x):
    open(os.environ["APITESTER_TEST_HANG_MARKER"], "w").close()
    os.kill(os.getpid(), signal.SIGSEGV)


register(
    Spec(api="paddle.testonly.crash_then_hang_on_start", torch=lambda x: x, paddle=_crash_then_hang_on_start,
         signature=lambda x: None, backward=False),
)
