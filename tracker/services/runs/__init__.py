"""Re-test runs, one module per job:

- ``scope``: the tasks a scope names, checked against the lane; the releases a run may ask for;
- ``create``: a run for a scope, lane and release, cut into shards, queued;
- ``matrix``: one scope on several releases (a parent and one lane per release), bisection rounds, cancelling;
- ``store``: one config's verdict as a ConfigResult, checked against the run's Paddle build;
- ``executor``: claim a run, lease its shards, feed them to apitester.pool, end the run;
- ``sweep``: the heartbeat round's resume of orphaned runs, resend of lost jobs, requeue of declined runs;
- ``outcomes``: the fix_verified and regression Events a finished run proves.

The names callers use are re-exported here, so ``tracker.services.runs.<name>`` means what it meant when this
was one module.
"""
from .create import create_run, start_run
from .executor import (EXECUTOR_ERROR, GPU_DECLINED, RELEASE_DECLINED, ExecutionReport, execute_run, executor_name,
                       mark_dequeued, pool_options, runner_workers)
from .matrix import (BISECT, FULL, MATRIX, cancel_run, create_matrix_run, matrix_observations, plan_next_round,
                     refresh_matrix, start_matrix_run)
from .outcomes import record_run_outcomes
from .scope import (LANES, SCOPE_KINDS, RunError, check_paddle_flags, check_release, check_torch, known_releases,
                    parse_releases, resolve_scope)
from .store import WrongBuild, bigint_or_none, check_build, expected_paddle, store_result
from .sweep import (RESENT, executor_dead, max_requeues, queued_resend_after, requeue_declined_gpu_runs,
                    requeue_declined_release_runs, requeue_lost_queued_runs, resend_unclaimed_runs,
                    resume_orphaned_runs, stale_after)

__all__ = [
    "BISECT", "EXECUTOR_ERROR", "FULL", "GPU_DECLINED", "LANES", "MATRIX", "RELEASE_DECLINED", "RESENT", "SCOPE_KINDS",
    "ExecutionReport", "RunError", "WrongBuild", "bigint_or_none", "cancel_run", "check_build", "check_paddle_flags",
    "check_release", "check_torch",
    "create_matrix_run", "create_run", "execute_run", "executor_dead", "executor_name", "expected_paddle",
    "known_releases", "mark_dequeued", "matrix_observations", "max_requeues", "parse_releases", "plan_next_round",
    "pool_options", "queued_resend_after", "record_run_outcomes", "refresh_matrix", "requeue_declined_gpu_runs",
    "requeue_declined_release_runs", "requeue_lost_queued_runs", "resend_unclaimed_runs", "resolve_scope",
    "resume_orphaned_runs", "runner_workers", "stale_after", "start_matrix_run", "start_run", "store_result",
]
