"""How the board reads verdict statuses (apitester's plus the runner's).

A config *fails* when the verdict blames Paddle (or Paddle's kernel crashed / hung); it has *no
verdict* when the engine could not judge it — an engine gap is never counted as a Paddle bug.
"""

PASSING = frozenset({"pass"})
FAILING = frozenset(
    {"accuracy_error", "dtype_mismatch", "shape_mismatch", "paddle_error", "crash", "flaky_crash", "timeout"}
)
NO_VERDICT = frozenset({"unsupported", "torch_error", "skipped_too_large"})


def is_failing(status: str) -> bool:
    return status in FAILING


def is_passing(status: str) -> bool:
    return status in PASSING
