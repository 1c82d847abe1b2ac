"""load_board: both renderings of the tracking issue's table, idempotency, changed rows, bad rows."""
import pytest
from django.core.management import CommandError, call_command

from tracker.models import Claim, ClaimStatus, Contributor, Event, PullRequest, Source, Task, TaskStatus
from tracker.services.board_import import BoardFormatError, load_board_file, load_board_text, parse_board

from .conftest import SEED, needs_seed

pytestmark = pytest.mark.django_db

BADGE = '<img src="https://img.shields.io/badge/状态-{}-{}" />'
MARKDOWN_BOARD = """\
### 任务列表

| 序号 | API | kernel类别 | 报名人/状态/PR |
|------|-----|-----------|----------------|
| 1 | paddle.add_n | CPU | @BeingGod {claimed} [#280](https://github.com/PFCCLab/PaddleAPITest/pull/280)<br> @co63oc {pr} [#281](https://github.com/PFCCLab/PaddleAPITest/pull/281)<br> |
| 2 | paddle.all | GPU | @cszdrg {done} [#72992](https://github.com/PaddlePaddle/Paddle/pull/72992)<br> |
| 3 | paddle.any | CPU | @NKNaN <img src="https://img.shields.io/badge/%E7%8A%B6%E6%80%81-%E6%8F%90%E4%BA%A4RFC-9B59B6" /> [#12](https://github.com/PaddlePaddle/Paddle/pull/12) #73000<br> |
| 4 | paddle.argsort | GPU |  |
| 155 | paddle.incubate.nn.functional.fused_layer_norm | GPU | output dtype类型不同，暂不要报名 |

看板信息

| 任务方向 | 任务数量 | 提交作品 / 任务认领 | 提交率 | 完成 | 完成率 |
|---|---|---|---|---|---|
| 精度问题修复 | 5 | 2 / 3 | 40% | 1 | 20% |
""".format(claimed=BADGE.format("报名", "2ECC71"), pr=BADGE.format("提交PR", "F39C12"), done=BADGE.format("完成任务", "27AE60"))


@needs_seed
def test_seed_import_gives_the_board_of_the_tracking_issue():
    report = load_board_file(SEED)
    assert report.form == "plain" and report.errors == [] and report.created == 183
    assert Task.objects.count() == 183
    assert Task.objects.filter(kernel="CPU").count() == 76
    assert Task.objects.filter(kernel="GPU").count() == 107
    locked = Task.objects.exclude(locked_reason="")
    assert sorted(locked.values_list("number", flat=True)) == list(range(155, 181))
    assert set(locked.values_list("locked_reason", flat=True)) == {"output dtype类型不同，暂不要报名"}
    assert set(locked.values_list("status", flat=True)) == {TaskStatus.LOCKED}
    assert Task.objects.filter(claims__isnull=False).distinct().count() == 113
    assert Task.objects.filter(pull_requests__isnull=False).distinct().count() == 103
    assert Contributor.objects.count() == 11
    assert PullRequest.objects.values("number").distinct().count() == 67
    # The plain form says nothing about whose PR is whose or how far each person got.
    assert not PullRequest.objects.filter(author__isnull=False).exists()
    assert set(Claim.objects.values_list("status", flat=True)) == {ClaimStatus.CLAIMED}
    # PR numbers below 10000 are PaddleAPITest's, the others Paddle's.
    assert Task.objects.get(number=2).pull_requests.get().repo == "PFCCLab/PaddleAPITest"
    assert Task.objects.get(number=9).pull_requests.get().repo == "PaddlePaddle/Paddle"
    assert set(Task.objects.get(number=15).pull_requests.values_list("repo", "number")) == {
        ("PaddlePaddle/Paddle", 72897), ("PFCCLab/PaddleAPITest", 212)}
    claim = Claim.objects.get(task__number=1, contributor__login="BeingGod")
    assert claim.source == Source.SEED and claim.source_ref == f"{SEED.name}:23"
    assert list(Task.objects.get(number=1).claims.values_list("contributor__login", flat=True)) == ["BeingGod", "cangtianhuang"]
    assert Task.objects.get(number=22).status == TaskStatus.OPEN  # paddle.kron: nobody


@needs_seed
def test_seed_reimport_changes_nothing():
    load_board_file(SEED)
    before = (Event.objects.count(), Claim.objects.count(), PullRequest.objects.count(),
              list(Task.objects.values_list("number", "status", "updated")))
    report = load_board_file(SEED)
    assert (report.created, report.updated, report.unchanged) == (0, 0, 183)
    after = (Event.objects.count(), Claim.objects.count(), PullRequest.objects.count(),
             list(Task.objects.values_list("number", "status", "updated")))
    assert after == before


def test_markdown_table_gives_statuses_authors_and_repos():
    report = load_board_text(MARKDOWN_BOARD, source="issue.md")
    assert report.form == "markdown" and report.errors == [] and report.created == 5
    task1 = Task.objects.get(number=1)
    assert {c.contributor.login: c.status for c in task1.claims.all()} == {"BeingGod": "报名", "co63oc": "提交PR"}
    assert PullRequest.objects.get(number=280).author.login == "BeingGod"
    assert PullRequest.objects.get(number=281).author.login == "co63oc"
    assert task1.status == TaskStatus.PR_SUBMITTED
    assert Task.objects.get(number=2).status == TaskStatus.COMPLETED
    # A link names the repo outright, even for a small number; a bare #N follows the number rule.
    task3 = Task.objects.get(number=3)
    assert set(task3.pull_requests.values_list("repo", "number")) == {("PaddlePaddle/Paddle", 12), ("PaddlePaddle/Paddle", 73000)}
    assert task3.claims.get().status == ClaimStatus.RFC  # URL-encoded badge
    assert Task.objects.get(number=4).status == TaskStatus.OPEN
    locked = Task.objects.get(number=155)
    assert locked.locked_reason == "output dtype类型不同，暂不要报名" and locked.status == TaskStatus.LOCKED
    # Only the task table is read, not the 看板信息 table under it.
    assert Task.objects.count() == 5
    claim = Claim.objects.get(task__number=1, contributor__login="co63oc")
    assert claim.source_ref == "issue.md:5"


def test_markdown_reimport_changes_nothing():
    load_board_text(MARKDOWN_BOARD, source="issue.md")
    events = Event.objects.count()
    report = load_board_text(MARKDOWN_BOARD, source="issue.md")
    assert (report.created, report.updated, report.unchanged) == (0, 0, 5)
    assert Event.objects.count() == events


def test_changed_row_updates_only_what_changed_with_events():
    load_board_text(MARKDOWN_BOARD, source="v1.md")
    untouched = {n: list(Event.objects.filter(task__number=n).values_list("id", flat=True)) for n in (2, 3, 4, 155)}
    claims_before = {c.pk: (c.status, c.created) for c in Claim.objects.exclude(task__number=1)}
    changed = MARKDOWN_BOARD.replace(
        "@BeingGod " + BADGE.format("报名", "2ECC71"),
        "@BeingGod " + BADGE.format("提交PR", "F39C12"),
    ).replace("| 4 | paddle.argsort | GPU |  |", "| 4 | paddle.argsort | GPU | @Z-NAVY " + BADGE.format("报名", "2ECC71") + "<br> |")
    report = load_board_text(changed, source="v2.md")
    assert (report.created, report.updated, report.unchanged) == (0, 2, 3)
    status_event = Event.objects.get(kind="claim_status", task__number=1)
    assert status_event.source == Source.SEED and status_event.source_ref == "v2.md:5"
    assert status_event.data == {"login": "BeingGod", "old": "报名", "new": "提交PR"}
    assert Claim.objects.get(task__number=1, contributor__login="BeingGod").status == ClaimStatus.PR_SUBMITTED
    new_claim = Event.objects.get(kind="claimed", task__number=4)
    assert new_claim.source_ref == "v2.md:8" and Task.objects.get(number=4).status == TaskStatus.CLAIMED
    assert {n: list(Event.objects.filter(task__number=n).values_list("id", flat=True)) for n in (2, 3, 155)} == {
        n: untouched[n] for n in (2, 3, 155)}
    for pk, before in claims_before.items():
        claim = Claim.objects.get(pk=pk)
        assert (claim.status, claim.created) == before


def test_a_person_dropped_from_the_board_is_withdrawn_and_status_never_moves_back():
    load_board_text(MARKDOWN_BOARD, source="v1.md")
    # co63oc disappears from row 1; cszdrg's badge goes back to 报名 in a stale table.
    stale = MARKDOWN_BOARD.replace(
        "<br> @co63oc " + BADGE.format("提交PR", "F39C12") + " [#281](https://github.com/PFCCLab/PaddleAPITest/pull/281)", ""
    ).replace("@cszdrg " + BADGE.format("完成任务", "27AE60"), "@cszdrg " + BADGE.format("报名", "2ECC71"))
    load_board_text(stale, source="v2.md")
    assert Claim.objects.get(task__number=1, contributor__login="co63oc").withdrawn_at is not None
    assert Event.objects.filter(kind="withdrawn", task__number=1, source_ref="v2.md:5").exists()
    assert Claim.objects.get(task__number=2).status == ClaimStatus.COMPLETED


def test_reimport_revives_only_withdrawals_a_board_import_made():
    from django.contrib.auth import get_user_model

    from tracker.services.claim_rules import withdraw_claim
    from tracker.services.claims import apply_comment

    load_board_text(MARKDOWN_BOARD, source="v1.md")
    # Row 1 lists BeingGod and co63oc, row 3 NKNaN. BeingGod withdraws on GitHub, co63oc on the site;
    # NKNaN is dropped by a newer board and then listed again by the older one.
    apply_comment({"id": 2875100001, "user": {"login": "BeingGod"}, "body": "【取消报名】: 1",
                   "html_url": "https://github.com/PaddlePaddle/Paddle/issues/72667#issuecomment-2875100001",
                   "created_at": "2025-06-01T00:00:00Z", "updated_at": "2025-06-01T00:00:00Z"})
    site_user = get_user_model().objects.create_user("co63oc-site")
    withdraw_claim(Task.objects.get(number=1), Contributor.objects.get(login="co63oc"), source=Source.WEB,
                   source_ref=f"user:{site_user.username}")
    load_board_text(MARKDOWN_BOARD.replace("| 3 | paddle.any | CPU | @NKNaN", "| 3 | paddle.any | CPU | ").replace(
        '<img src="https://img.shields.io/badge/%E7%8A%B6%E6%80%81-%E6%8F%90%E4%BA%A4RFC-9B59B6" /> '
        "[#12](https://github.com/PaddlePaddle/Paddle/pull/12) #73000<br>", ""), source="v2.md")
    nknan = Claim.objects.get(task__number=3, contributor__login="NKNaN")
    assert nknan.withdrawn_at is not None and nknan.withdrawn_source == Source.SEED

    report = load_board_text(MARKDOWN_BOARD, source="v1-again.md")  # the older board, again
    being, co63 = (Claim.objects.get(task__number=1, contributor__login=login) for login in ("BeingGod", "co63oc"))
    assert being.withdrawn_at is not None and being.withdrawn_source == Source.COMMENT
    assert co63.withdrawn_at is not None and co63.withdrawn_source == Source.WEB
    assert report.kept_withdrawn == [
        "v1-again.md:5: No.1: @BeingGod withdrew (issue comment); the board still lists them",
        "v1-again.md:5: No.1: @co63oc withdrew (web user); the board still lists them",
    ]
    # The board's own withdrawal is the board's to undo.
    nknan.refresh_from_db()
    assert nknan.withdrawn_at is None and nknan.withdrawn_source == ""
    assert not Event.objects.filter(kind="claimed", task__number=1, source_ref="v1-again.md:5").exists()
    assert Event.objects.filter(kind="claimed", task__number=3, source_ref="v1-again.md:7").exists()


@needs_seed
def test_bad_rows_are_reported_with_file_and_line_and_lose_nothing():
    load_board_file(SEED)
    task9 = Task.objects.get(number=9)
    snapshot = (task9.api, task9.kernel, task9.status, list(task9.claims.values_list("contributor__login", "status")),
                list(task9.pull_requests.values_list("repo", "number")))
    events = Event.objects.count()
    text = (
        "序号\tAPI\tkernel类别\t报名人/状态/PR\n"
        "9\tpaddle.broadcast_to\tTPU\t@ooooo-create\n"          # line 2: unknown kernel
        "x1\tpaddle.all\tGPU\n"                                 # line 3: bad number
        "10\tpaddle.broadcast_to\tCPU\t@ooooo-create #72992 ???\n"  # line 4: unreadable cell
        "11\tpaddle.clip\tCPU\t@BeingGod @ooooo-create @co63oc @NewPerson #73492\n"  # line 5: good, changed
        "11\tpaddle.clip\tGPU\n"                                # line 6: duplicate number
    )
    report = load_board_text(text, source="broken.txt")
    assert report.errors == [
        "broken.txt:2: kernel 'TPU' is neither CPU nor GPU — '9\\tpaddle.broadcast_to\\tTPU\\t@ooooo-create'",
        "broken.txt:3: task number 'x1' is not a positive integer — 'x1\\tpaddle.all\\tGPU'",
        "broken.txt:4: unrecognised text in the status cell: '???' — '10\\tpaddle.broadcast_to\\tCPU\\t@ooooo-create #72992 ???'",
        "broken.txt:6: task number 11 already used on line 5",
    ]
    assert (report.updated, report.rows) == (1, 1)
    task9.refresh_from_db()
    assert (task9.api, task9.kernel, task9.status, list(task9.claims.values_list("contributor__login", "status")),
            list(task9.pull_requests.values_list("repo", "number"))) == snapshot
    assert Task.objects.get(number=10).claims.count() == 1
    assert Task.objects.count() == 183
    assert Claim.objects.filter(task__number=11, contributor__login="NewPerson", source_ref="broken.txt:5").exists()
    assert Event.objects.count() == events + 1


@needs_seed
def test_a_row_failing_in_the_database_is_rolled_back_alone():
    load_board_file(SEED)
    claims, contributors, events = Claim.objects.count(), Contributor.objects.count(), Event.objects.count()
    text = (
        "序号\tAPI\tkernel类别\t报名人/状态/PR\n"
        "11\tpaddle.clip\tCPU\t@BeingGod @ooooo-create @co63oc @Newcomer #99999999999999999999999\n"  # PR number too big to store
        "12\tpaddle.concat\tCPU\t@BeingGod @Other\n"
    )
    report = load_board_text(text, source="broken.txt")
    assert len(report.errors) == 1 and report.errors[0].startswith("broken.txt:2: ")
    # The failing row's new claimant and contributor were rolled back with it; the next row applied.
    assert not Contributor.objects.filter(login="Newcomer").exists()
    assert Contributor.objects.count() == contributors + 1
    assert Claim.objects.count() == claims + 1 and Claim.objects.filter(task__number=12, contributor__login="Other").exists()
    assert Event.objects.count() == events + 1
    assert Task.objects.get(number=11).claims.count() == 3


def test_load_board_reads_stdin(monkeypatch, capsys):
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO(MARKDOWN_BOARD))
    call_command("load_board", "-")
    assert "<stdin>: markdown board, 5 rows — 5 created" in capsys.readouterr().out


def test_load_board_command_reports_errors_and_strict_fails(tmp_path, capsys):
    path = tmp_path / "board.md"
    path.write_text(MARKDOWN_BOARD.replace("| 4 | paddle.argsort | GPU |  |", "| 4 | paddle.argsort | XPU |  |"), encoding="utf-8")
    call_command("load_board", str(path))
    captured = capsys.readouterr()
    assert "board.md:8: kernel 'XPU' is neither CPU nor GPU" in captured.err
    assert "4 created" in captured.out and "1 skipped with errors" in captured.out
    with pytest.raises(CommandError, match="1 row"):
        call_command("load_board", str(path), "--strict")
    empty = tmp_path / "empty.txt"
    empty.write_text("no table here\n", encoding="utf-8")
    with pytest.raises(CommandError, match="no task table found"):
        call_command("load_board", str(empty))
    assert Task.objects.count() == 4


def test_a_pr_listed_under_two_people_has_no_author():
    shared = MARKDOWN_BOARD.replace("[#281](https://github.com/PFCCLab/PaddleAPITest/pull/281)",
                                    "[#280](https://github.com/PFCCLab/PaddleAPITest/pull/280)")
    load_board_text(shared, source="issue.md")
    assert PullRequest.objects.get(number=280).author is None
    assert PullRequest.objects.get(number=72992).author.login == "cszdrg"


def test_parse_board_without_a_table_raises():
    with pytest.raises(BoardFormatError):
        parse_board("| a | b |\n|---|---|\n| 1 | 2 |\n")
