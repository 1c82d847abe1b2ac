"""Honest dates and counts offline (issue 37 item 4), on real SQLite through the real write paths: a claim or PR
imported from the tracking issue's text has no date — shown "before import", left out of the burn-down's dated
series (which starts at the first dated event) until a dated comment of the same person dates it — and
"completed" is "unknown offline" beside the issue's own summary until GitHub has told the board a PR state."""
import re
from datetime import datetime, timezone

import pytest
from django.utils import timezone as dj_timezone

from tests.github import payloads
from tracker.models import Claim, PullRequest, Source, SyncCursor, Task
from tracker.selectors import charts as sel
from tracker.selectors.board import pr_states_known
from tracker.services.board_import import load_board_text
from tracker.services.claim_rules import claim_task, contributor_for
from tracker.services.claims import apply_comment
from tracker.services.status import refresh_task_status

pytestmark = pytest.mark.django_db

IMPORTED = datetime(2026, 12, 2, 13, 29, tzinfo=timezone.utc)  # the import's own time
BOARD = ("序号\tAPI\tkernel类别\t报名人/状态/PR\n"
         "1\tpaddle.add_n\tCPU\t@alice #280\n"
         "2\tpaddle.all\tGPU\n"
         "3\tpaddle.any\tCPU\n"
         "4\tpaddle.kron\tCPU\t@carol\n"
         "\n任务方向\t任务数量\t提交作品 / 任务认领\t提交率\t完成\t完成率\n"
         "精度问题修复\t4\t1 / 2\t25.0%\t1\t25.0%\n")


@pytest.fixture
def imported(db):
    report = load_board_text(BOARD, source="issue.txt", when=IMPORTED)
    assert report.errors == [] and report.created == 4
    return report


def dated_claim(number: int, login: str, day: datetime):
    assert claim_task(Task.objects.get(number=number), contributor_for(login), source=Source.COMMENT,
                      source_ref=f"https://github.com/o/r/issues/1#issuecomment-{number}", when=day)


def test_imported_claims_stay_out_of_the_dated_series_and_the_burndown_starts_at_the_first_dated_event(imported):
    dated_claim(2, "bob", datetime(2025, 6, 3, 9, tzinfo=timezone.utc))
    dated_claim(4, "dave", datetime(2025, 6, 5, 9, tzinfo=timezone.utc))  # task 4 was imported claimed too
    burndown = sel.burndown_from_events()
    # the first point is the first dated claim, not the import day sixteen months later
    assert burndown["days"] == ["2025-06-03", "2025-06-05"]
    assert burndown["claims"] == [1, 2] and burndown["prs"] == [0, 0]
    assert burndown["unclaimed"] == [3, 2]
    # What only the import says: task 1's claim and PR (task 4 has a dated claim, so it is drawn on its day).
    assert burndown["before_import"] == {"claims": 1, "prs": 1, "merged": 0, "verified": 0, "unclaimed": 1}
    assert burndown["import_day"] == "2026-12-02"


def test_with_only_the_import_no_day_is_drawn_and_the_overview_labels_it_before_import(imported, client):
    burndown = sel.burndown_from_events()
    assert burndown["days"] == [] and burndown["claims"] == []
    assert burndown["before_import"] == {"claims": 2, "prs": 1, "merged": 0, "verified": 0, "unclaimed": 2}
    for language, label, note in (("en", "before import", "No dated event yet"), ("zh-hans", "导入前", "还没有带日期的事件")):
        html = client.get("/charts/overview", HTTP_ACCEPT_LANGUAGE=language).content.decode()
        table = re.search(r'<table class="data" id="burndown-table">.*?</table>', html, re.S).group(0)
        first_row = re.search(r"<tbody>\s*<tr[^>]*>(.*?)</tr>", table, re.S).group(1)
        assert re.findall(r"<td[^>]*>([^<]*)</td>", first_row) == [label, "2", "2", "1", "0", "0"], language
        assert note in table
    # the figure draws no board-event line, and says what it leaves out
    assert "Before import (undated, not drawn): 2 tasks claimed, 1 with a PR" in \
        client.get("/charts/overview", HTTP_ACCEPT_LANGUAGE="en").content.decode()


def test_pages_show_an_imported_claims_date_as_before_import(imported, client):
    dated_claim(1, "bob", datetime(2025, 6, 3, 9, tzinfo=timezone.utc))
    page = client.get("/tasks/1", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    claims = re.search(r"<table[^>]*>.*?@alice.*?</table>", page, re.S).group(0)
    alice = re.search(r"<tr[^>]*>(?:(?!</tr>).)*@alice.*?</tr>", claims, re.S).group(0)
    bob = re.search(r"<tr[^>]*>(?:(?!</tr>).)*@bob.*?</tr>", claims, re.S).group(0)
    assert ">before import</span>" in alice and "2026-12-02" not in re.sub(r'title="[^"]*"', "", alice)
    assert "2025-06-03 09:00" in bob and "before import" not in bob
    assert ">导入前</span>" in client.get("/tasks/1", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert ">before import</span>" in client.get("/contributors/alice").content.decode()
    # the API says so too: no date of its own
    claims = {c["login"]: c for c in client.get("/api/tasks/1").json()["claims"]}
    assert claims["alice"]["created"] is None and claims["alice"]["dated"] is False
    assert claims["bob"]["created"].startswith("2025-06-03T09:00") and claims["bob"]["dated"] is True
    # an imported claim gives no lead time (it was made some time before the import)
    PullRequest.objects.filter(number=280).update(author=contributor_for("alice"), created_at=IMPORTED)
    assert next(r for r in sel.contributor_stats() if r["login"] == "alice")["median_claim_to_pr_days"] is None


def chip(html: str, ident: str) -> str:
    return re.sub(r"<[^>]+>", "", re.search(rf'id="{ident}".*?</(?:a|span)>\s*(?=<a |<span class="chip|</p>)', html,
                                            re.S).group(0)).split(">", 1)[1]


def test_completed_is_unknown_offline_beside_the_issues_figures_until_github_tells_a_pr_state(imported, client):
    assert not pr_states_known()
    en = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    completed = " ".join(chip(en, "chip-completed").split())
    assert completed == "completed: unknown offline · tracking issue: completed 1, submitted 1 / claimed 2 of 4"
    zh = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert " ".join(chip(zh, "chip-completed").split()) == "已完成: 离线未知 · 跟踪 issue：完成 1，提交作品 1 / 任务认领 2，共 4"
    overview = client.get("/charts/overview", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    row = re.search(r'<tr id="funnel-completed">.*?</tr>', overview, re.S).group(0)
    assert "unknown offline" in row and "tracking issue: completed 1" in row
    # A poll that read GitHub's PR search (its cursor keeps the answer's ETag): PR states are known, even none merged.
    SyncCursor.objects.create(key="pulls:PaddlePaddle/Paddle:Accuracy diff", etag='W/"abc"', since=dj_timezone.now())
    assert pr_states_known()
    assert " ".join(chip(client.get("/").content.decode(), "chip-completed").split()) == "completed 0"
    SyncCursor.objects.all().delete()
    assert not pr_states_known()
    # A webhook (or poll) told the state of one PR: merged, so its task is completed.
    PullRequest.objects.filter(number=280).update(state=PullRequest.State.MERGED)
    refresh_task_status(Task.objects.get(number=1))
    assert pr_states_known()
    assert " ".join(chip(client.get("/").content.decode(), "chip-completed").split()) == "completed 1"
    row = re.search(r'<tr id="funnel-completed">.*?</tr>', client.get("/charts/overview").content.decode(), re.S).group(0)
    assert re.findall(r"<td>(\d+)</td>", row) == ["1", "1", "0"]


def test_a_dated_comment_saying_an_imported_claim_gives_it_its_date(imported, settings):
    """The same person's comment, written before the import, dates the imported claim (the comment's day and
    source); one written after the import says nothing of when the claim was made, so it stays "before import"."""
    settings.GITHUB_BOT_ACCOUNTS = ["paddle-bot"]
    later = apply_comment(payloads.comment(2874900101, "carol", "【报名】: 4", "2026-12-20T00:00:00Z"))
    assert later.claimed == [] and Claim.objects.get(task__number=4).source == Source.SEED
    result = apply_comment(payloads.comment(2874900102, "alice", "【报名】: 1", "2025-06-01T08:00:00Z"))
    assert result.claimed == [1]
    claim = Claim.objects.get(task__number=1, contributor__login="alice")
    assert (claim.source, claim.created) == (Source.COMMENT, datetime(2025, 6, 1, 8, tzinfo=timezone.utc))
    assert claim.source_ref.endswith("#issuecomment-2874900102")
    burndown = sel.burndown_from_events()
    assert burndown["days"] == ["2025-06-01"] and burndown["claims"] == [1]
    assert burndown["before_import"]["claims"] == 1  # task 4: carol's claim, still undated
    # saying it again changes nothing
    assert apply_comment(payloads.comment(2874900103, "alice", "【报名】: 1", "2025-05-01T08:00:00Z")).claimed == []
