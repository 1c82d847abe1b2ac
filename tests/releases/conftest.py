import pytest

from tracker.services import paddle_envs

# The second release CI provisions next to the main .venv's (scripts/test.sh: manage.py paddle_envs add 3.0.0).
OLD_RELEASE = "3.0.0"
CLIP = 'paddle.clip(x=Tensor([3, 3],"float64"), min=5, max=None, )'
CRASH_ON_OLD = f'paddle.testonly.crash_on_release(x=Tensor([3],"float64"), release="{OLD_RELEASE}", )'


@pytest.fixture
def old_env():
    """The 3.0.0 env must exist: a missing env fails the test (it is provisioned by scripts/test.sh)."""
    found = [env for env in paddle_envs.installed() if env.version == OLD_RELEASE]
    assert found, (f"no Paddle {OLD_RELEASE} env under {paddle_envs.envs_dir()}: "
                   f"run `python manage.py paddle_envs add {OLD_RELEASE}` (scripts/test.sh does)")
    return found[0]
