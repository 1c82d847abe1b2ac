"""How the board reads verdict statuses (apitester's plus the runner's).

A config *fails* when the verdict blames Paddle (or Paddle's kernel crashed / hung); it has *no
verdict* when the engine could not judge it — an engine gap is never counted as a Paddle bug.

Two statuses are neither (docs/verdicts.md):
* ``documented_difference`` — Paddle still differs from the plain Torch call (the strict layer
  fails) but agrees with Paddle's documented behaviour (the adapted layer passes). Not a pass:
  the difference the task was filed for is still there, by design. Not counted as a failure
  either: it is not a bug to fix in Paddle's kernel, and a task whose configs all read so says
  "differs from Torch by design".
* ``torch_suspect`` — the strict layer fails, and the engine has evidence the plain Torch call is
  the side that is off (Paddle matches a higher-precision reference). Not a pass (the strict layer
  failed), not a Paddle failure: a human reads the evidence.

"Fix verified", runs, regressions and the charts read PASSING = {"pass"} only, and an engine
verdict is ``pass`` only when its strict layer passes — so all of them follow the strict layer.
"""

PASSING = frozenset({"pass"})
FAILING = frozenset(
    {"accuracy_error", "dtype_mismatch", "shape_mismatch", "paddle_error", "crash", "flaky_crash", "timeout"}
)
NO_VERDICT = frozenset({"unsupported", "torch_error", "skipped_too_large"})
BY_DESIGN = frozenset({"documented_difference"})
TORCH_SUSPECT = frozenset({"torch_suspect"})


def is_failing(status: str) -> bool:
    return status in FAILING


def is_passing(status: str) -> bool:
    return status in PASSING
