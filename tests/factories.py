"""Rows the tests start from, one factory each (the suite's only task / config factories)."""
import hashlib

LOCKED_REASON = "output dtype类型不同，暂不要报名"


def make_task(number, api=None, configs=(), kernel="CPU", status="open", locked_reason=None):
    """A board task (api defaults to a name of its own) with a FailingConfig per config string; a locked
    task gets the tracking issue's usual reason unless one is given."""
    from tracker.models import FailingConfig, Task

    task = Task.objects.create(number=number, api=api or f"paddle.api_{number}", kernel=kernel, status=status,
                               locked_reason=locked_reason if locked_reason is not None
                               else LOCKED_REASON if status == "locked" else "")
    for config in configs:
        FailingConfig.objects.create(task=task, config=config, config_hash=hashlib.sha256(config.encode()).hexdigest(),
                                     origin_file="reports/ci_ce_cpu/error_config.txt")
    return task
