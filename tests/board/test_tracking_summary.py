"""The tracking issue's own summary figures (看板信息): read from its text by the board import, stored once, shown
where the board cannot count for itself offline; a malformed summary line is reported with where and why and
changes nothing (issue 37 item 4)."""
import pytest

from tracker.models import Event, Source
from tracker.selectors.board import tracking_summary
from tracker.services.board_import import load_board_file, load_board_text
from tracker.services.tracking_summary import SummaryError, parse_summary

from .conftest import SEED, needs_seed

pytestmark = pytest.mark.django_db

HEADER = "任务方向\t任务数量\t提交作品 / 任务认领\t提交率\t完成\t完成率"
TABLE = "序号\tAPI\tkernel类别\t报名人/状态/PR\n1\tpaddle.add_n\tCPU\t@alice\n2\tpaddle.all\tGPU\n"


def board_text(values: str, header: str = HEADER) -> str:
    """A small board in the seed's plain form: the task table (lines 1-3), a blank line, the summary (lines 5-7)."""
    return f"{TABLE}\n看板信息\n{header}\n{values}\n"


def summary_events():
    return list(Event.objects.filter(kind="tracking_summary").order_by("id").values_list("source_ref", "data"))


@needs_seed
def test_the_seed_summary_is_imported_with_its_line_and_kept_once():
    report = load_board_file(SEED)
    assert report.errors == []
    figures = report.figures
    assert (figures.tasks, figures.submitted, figures.claimed, figures.completed) == (183, 103, 139, 86)
    assert (figures.submit_rate, figures.completed_rate) == ("56.28%", "46.99%")
    # the values row's own line: the one after the 任务方向 header
    lines = SEED.read_text(encoding="utf-8").splitlines()
    assert lines[figures.line - 2].startswith("任务方向") and lines[figures.line - 1].startswith("精度问题修复")
    shown = tracking_summary()
    assert shown["completed"] == 86 and shown["source_ref"] == f"{SEED.name}:{figures.line}"
    event = Event.objects.get(kind="tracking_summary")
    assert event.task is None and event.source == Source.SEED
    # the same text again records nothing
    assert load_board_file(SEED).errors == [] and Event.objects.filter(kind="tracking_summary").count() == 1
    assert "its summary: 183 tasks, 103 / 139 submitted / claimed, 86 completed" in report.summary()


def test_markdown_and_plain_summaries_read_alike_and_a_change_is_a_new_summary():
    markdown = (TABLE + "\n### 看板信息\n\n| 任务方向 | 任务数量 | 提交作品 / 任务认领 | 提交率 | 完成 | 完成率 |\n"
                "| :----: | :----: | :----:  | :----: | :----: | :----: |\n| 精度问题修复 | 8 | 4 / 6 | 50.0% | 1 | 12.5% |\n")
    parsed = parse_summary(markdown)
    assert (parsed.line, parsed.tasks, parsed.submitted, parsed.claimed, parsed.completed) == (9, 8, 4, 6, 1)
    assert load_board_text(markdown, source="v1.md").errors == []
    assert load_board_text(board_text("精度问题修复\t8\t5/6\t62.5 %\t2\t25%"), source="v2.txt").errors == []
    assert [ref for ref, _ in summary_events()] == ["v1.md:9", "v2.txt:7"]
    assert tracking_summary()["completed"] == 2 and tracking_summary()["submitted"] == 5


def test_a_text_without_a_summary_imports_the_board_and_no_figures():
    report = load_board_text(TABLE, source="plain.txt")
    assert report.errors == [] and report.created == 2 and report.figures is None
    assert summary_events() == [] and tracking_summary() is None


@pytest.mark.parametrize("values, header, line, why", [
    ("精度问题修复\t183\t103 / 139\t56.28%\t86", HEADER, 7, "expected 6 cells"),
    ("精度问题修复\t183\t103 / 139\t56.28%\tmany\t46.99%", HEADER, 7, "完成 'many' is not a whole number"),
    ("精度问题修复\t183\t103 of 139\t56.28%\t86\t46.99%", HEADER, 7, "提交作品 / 任务认领 '103 of 139' is not two whole"),
    ("精度问题修复\t183\t103 / 139\t56.28%\t86\t47.5%", HEADER, 7, "完成率 47.5% does not match 86 of 183 tasks (46.99%)"),
    ("精度问题修复\t183\t103 / 139\tmost\t86\t46.99%", HEADER, 7, "提交率 'most' is not a percentage"),
    ("精度问题修复\t83\t103 / 139\t56.28%\t86\t46.99%", HEADER, 7, "提交作品 103 is more than the 83 tasks"),
    ("", HEADER, 6, "the header has no row of figures under it"),
])
def test_a_malformed_summary_line_is_reported_with_where_and_why_and_changes_nothing(values, header, line, why):
    load_board_text(board_text("精度问题修复\t183\t103 / 139\t56.28%\t86\t46.99%"), source="good.txt")
    before = summary_events()
    report = load_board_text(board_text(values, header), source="bad.txt")
    assert len(report.errors) == 1
    assert report.errors[0].startswith(f"bad.txt:{line}: 看板信息 summary not imported: ") and why in report.errors[0]
    assert report.figures is None and report.unchanged == 2  # the board's rows still imported, unchanged
    assert summary_events() == before and tracking_summary()["completed"] == 86
    with pytest.raises(SummaryError) as error:
        parse_summary(board_text(values, header))
    assert error.value.line == line
