import pytest

from tests.factories import make_task  # noqa: F401  (the runner tests import it from here)

EXTRA_SPECS = "tests.fake_specs.workers"

# Real report lines (quoted singly) with the verdicts the installed Paddle 3.3.1 CPU build gives.
PASSING = [
    'paddle.logit(x=Tensor([4],"float64"), )',
    'paddle.clip(Tensor([5],"float64"), min=0, )',
    'paddle.maximum(Tensor([872, 16],"float32"), Tensor([1],"float32"), )',
]
FAILING_FORWARD = 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )'
# Paddle's gradient for the Cholesky factor covers only the triangle it reads; Torch's is dense.
FAILING_BACKWARD = 'paddle.linalg.cholesky_solve(x=Tensor([4, 1],"float32"), y=Tensor([4, 4],"float32"), )'
NO_SPEC = 'paddle.nonexistent_api(x=Tensor([3],"float32"), )'


@pytest.fixture
def extra_specs(monkeypatch):
    """Workers load the test-only specs (they inherit this process's environment)."""
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", EXTRA_SPECS)
    return EXTRA_SPECS


