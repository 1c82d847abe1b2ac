"""The test-only specs, one copy for every test (the engine's, the runner's, the releases', the deployment's).

Load a module by its path, in-process (`import tests.fake_specs.engine`) or in the workers a test starts
(APITESTER_EXTRA_SPECS=tests.fake_specs.workers; the workers need the repository on PYTHONPATH):

* `engine`: `apitester_test.*` specs for the engine's own paths (gradients, dtypes, domains, adaptations,
  draws). Their names can never collide with a Paddle API, and the engine tests' registry walks skip them.
* `workers`: `paddle.testonly.*` kernels that misbehave inside a worker process (crash, hang, exhaust memory,
  die once, regress, crash on one Paddle release) for the runner, release and deployment tests. They are a
  module of their own so that the engine tests, which read every `paddle.*` spec as the real registry
  (the adaptations table, the tolerance and draw rules), never load them.

The misbehaving kernels both modules register are defined here once.
"""
import os
import signal
import time


def segfault(x):
    os.kill(os.getpid(), signal.SIGSEGV)


def hang(x):
    time.sleep(3600)


def die_once(x, marker):
    # The first call leaves a marker file and dies like the real SIGILL seen on paddle.maximum;
    # the retry in a fresh worker finds the marker and behaves.
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGILL)
    return x * 2
