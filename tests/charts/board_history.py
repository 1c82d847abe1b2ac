"""A small, known board history (claims, PRs, a verified fix, report versions) for the chart tests."""
from datetime import date, datetime, timedelta, timezone as dt_timezone

from tracker.models import Claim, ConfigResult, Contributor, Event, FailingConfig, PullRequest, TestRun

DAY0 = datetime(2025, 5, 12, 9, 0, tzinfo=dt_timezone.utc)
DAYS = [(DAY0 + timedelta(days=i)).date().isoformat() for i in range(3)]


def at(day: int, hour: int = 0) -> datetime:
    return DAY0 + timedelta(days=day, hours=hour)


def seed_history(done, pr_open, fresh) -> None:
    """Three unlocked CPU tasks: `done` is claimed, PR'd, merged and verified; `pr_open` claimed and PR'd;
    `fresh` claimed on the last day. alice works on the first two, bob on the third."""
    alice, bob = Contributor.objects.create(login="alice"), Contributor.objects.create(login="bob")
    for task, kind, when in ((done, "claimed", at(0)), (done, "claim_added", at(2)),  # a task counts once
                             (pr_open, "claimed", at(1)), (done, "pr_opened", at(1)), (pr_open, "pr_linked", at(2)),
                             (done, "pr_merged", at(2)), (done, "fix_verified", at(2, 5)), (fresh, "claimed", at(2))):
        Event.objects.create(task=task, kind=kind, source="comment", created=when)
    Claim.objects.create(task=done, contributor=alice, status="完成任务", source="seed", created=at(0))
    Claim.objects.create(task=pr_open, contributor=alice, status="提交PR", source="seed", created=at(1))
    Claim.objects.create(task=fresh, contributor=bob, status="报名", source="seed", created=at(2))
    pr = PullRequest.objects.create(repo="PaddlePaddle/Paddle", number=73001, author=alice, state="merged",
                                    created_at=at(1), merged_at=at(2))
    pr.tasks.add(done)
    # The report history: `done`'s config listed on days 0–1, `pr_open`'s on days 1–2.
    configs = []
    for i, (task, first, last) in enumerate(((done, 0, 1), (pr_open, 1, 2))):
        configs.append(FailingConfig.objects.create(
            task=task, config=f'{task.api}(Tensor([{i + 2}],"float32"), )', config_hash=f"history-{i}",
            origin_file="f", first_seen=date.fromisoformat(DAYS[first]), last_seen=date.fromisoformat(DAYS[last])))
    # `done`'s fix passes on the cpu lane: verified.
    run = TestRun.objects.create(lane="cpu", state="done", paddle_version="3.3.1")
    ConfigResult.objects.create(run=run, failing_config=configs[0], task=done, status="pass")
