"""PaddleAPITest run directories (`import_reports DIR --kernel cpu|gpu`), built in tmp_path in both
vocabularies: one final class per config, per-class counts, a malformed line refused with file:line and
nothing stored lost, the external results apart from the board's verdicts, and the task page's label."""
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apitester.reports.run_dirs import case_id, class_of_file, read_run_dir
from tests.factories import make_task
from tracker.models import ConfigResult, Event, ExternalResult, ExternalRun, FailingConfig
from tracker.services.external_runs import RunDirRefused, import_run_dir

ADD = 'paddle.add(x=Tensor([2, 3],"float32"), y=Tensor([2, 3],"float32"), )'
ADD_BF16 = 'paddle.add(x=Tensor([4],"bfloat16"), y=Tensor([4],"bfloat16"), )'
ADD_PASSING = 'paddle.add(x=Tensor([1],"float64"), y=Tensor([1],"float64"), )'
SUM = 'paddle.sum(x=Tensor([8, 8],"float16"), axis=0, )'
MEAN = 'paddle.mean(x=Tensor([5],"float32"), )'
NO_TASK = 'paddle.linalg.svd(x=Tensor([3, 3],"float32"), )'


def write_run(root: Path, files: dict[str, list[str] | str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (root / name).write_text(lines if isinstance(lines, str) else "".join(f"{line}\n" for line in lines))
    return root


def log_2026(cases: list[tuple[str, str, int]], *, gpu="0", atol="0.01", rtol="0.001") -> str:
    """A log_inorder.log as PaddleAPITest 2026 writes it: run header, options, one framed block per case."""
    lines = [">>> TEST RUN | 2026-11-30 08:15:02.118 | Paddle 3.3.1 | PID 4242", "", "--- OPTIONS", "Accuracy",
             f"  --atol: {atol}", f"  --rtol: {rtol}", "Compute", f"  --gpu_ids: {gpu}", "", "--- RUNNING"]
    for config, outcome, ms in cases:
        lines += [f">>> CASE {case_id(config)} | 2026-11-30 08:16:00.000 | Paddle 3.3.1 | GPU {gpu} | PID 4243 | Slot 0",
                  config, "W1130 some warning the worker printed", f"<<< CASE {case_id(config)} | {outcome} | {ms} ms"]
    return "\n".join(lines) + "\n"


def run_2026(root: Path) -> Path:
    return write_run(root, {
        "api_config_paddle_accuracy.txt": [ADD, SUM],
        "api_config_paddle_crash.txt": [ADD_BF16],
        "api_config_pass.txt": [ADD, ADD_PASSING, MEAN],  # ADD also failed: its final class is paddle_accuracy
        "api_config_config_parse.txt": [NO_TASK],
        "checkpoint.txt": [ADD, SUM, ADD_BF16, ADD_PASSING, MEAN, NO_TASK, 'paddle.abs(x=Tensor([1],"int8"), )'],
        "log_inorder.log": log_2026([(ADD, "FAIL", 12), (SUM, "FAIL", 30), (ADD_PASSING, "PASS", 4)]),
    })


def run_2025(root: Path) -> Path:
    return write_run(root, {
        "api_config_accuracy_error.txt": [SUM, ADD],
        "api_config_crash.txt": [ADD],  # crash beats an accuracy error
        "api_config_paddle_to_torch_failed.txt": [MEAN],
        "api_config_pass.txt": [ADD_PASSING],
        "log_inorder.log": f"2025-06-01 10:00:00.123 GPU 1 77 test begin: {ADD}\n[accuracy error] {ADD}\n"
                           f"2025-06-01 10:00:01.000 GPU 1 77 test begin: {SUM}\n",
    })


def test_2026_reader_keeps_one_final_class_and_counts_per_class(tmp_path):
    run = read_run_dir(run_2026(tmp_path / "test_log"))
    assert run.malformed == [] and run.vocabulary == "2026"
    add = run.configs[ADD]
    assert (add.result_class, add.classes, add.file, add.line) == ("paddle_accuracy", ["paddle_accuracy", "pass"],
                                                                    "api_config_paddle_accuracy.txt", 1)
    assert (add.log_outcome, add.duration_ms, add.log_line) == ("FAIL", 12, 11)
    assert [c.config for c in run.in_two_classes] == [ADD]
    assert run.per_class() == {
        "paddle_crash": {"lines": 1, "found": 1, "final": 1},
        "paddle_accuracy": {"lines": 2, "found": 2, "final": 2},
        "config_parse": {"lines": 1, "found": 1, "final": 1},
        "pass": {"lines": 3, "found": 3, "final": 2},  # ADD counted once, under paddle_accuracy
    }
    assert len(run.configs) == 6 and sum(c["final"] for c in run.per_class().values()) == 6
    assert (run.checkpointed, run.unclassified) == (7, 1)
    assert (run.log.atol, run.log.rtol, run.log.gpus, run.log.paddle_version) == ("0.01", "0.001", {"0"}, "3.3.1")


def test_2025_reader_maps_the_old_names_and_reads_test_begin_lines(tmp_path):
    run = read_run_dir(run_2025(tmp_path / "old"))
    assert run.malformed == [] and run.vocabulary == "2025"
    assert run.configs[ADD].result_class == "paddle_crash" and run.configs[ADD].written_class == "crash"
    assert run.configs[ADD].classes == ["paddle_crash", "paddle_accuracy"]
    assert run.configs[MEAN].result_class == "config_convert"
    assert {k: v["final"] for k, v in run.per_class().items()} == {
        "paddle_crash": 1, "paddle_accuracy": 1, "config_convert": 1, "pass": 1}
    assert run.log.cases == 2 and run.log.gpus == set() and str(run.log.run_started) == "2025-06-01 10:00:00.123000"
    assert class_of_file("api_config_paddle_bitwise_knows_gpu3.txt") == ("paddle_bitwise_knows", "2026")
    assert class_of_file("api_config_accuracy_diff.txt") == ("accuracy_diff", "2025")


def test_broken_log_framing_is_malformed_with_file_and_line(tmp_path):
    log = log_2026([(ADD, "FAIL", 1)]).replace(f"<<< CASE {case_id(ADD)}", f"<<< CASE {case_id(SUM)}")
    root = write_run(tmp_path / "r", {"api_config_paddle_accuracy.txt": [ADD], "log_inorder.log": log})
    assert [(m.file, m.line) for m in read_run_dir(root).malformed] == [("log_inorder.log", 14)]
    wrong_id = log_2026([(ADD, "FAIL", 1)]).replace(f"\n{ADD}\n", f"\n{SUM}\n")
    write_run(root, {"log_inorder.log": wrong_id})
    assert [(m.file, m.line) for m in read_run_dir(root).malformed][0] == ("log_inorder.log", 11)


@pytest.mark.django_db
def test_import_attaches_failing_classes_and_keeps_the_runs_outcome_apart(tmp_path):
    add = make_task(1, api="paddle.add", configs=[ADD_PASSING])  # a config the board already held
    make_task(2, api="paddle.sum")
    make_task(3, api="paddle.mean")
    make_task(4, api="paddle.add", kernel="GPU")
    results_before = ConfigResult.objects.count()
    result = import_run_dir(run_2026(tmp_path / "test_log"), "cpu")
    run = result.run
    assert (run.device, str(run.run_date), run.date_from, run.tolerance) == ("GPU 0", "2026-11-30", "log",
                                                                             "atol=0.01, rtol=0.001")
    # Failing classes become configs of the CPU tasks; a passing config the board never held is not stored.
    assert sorted(FailingConfig.objects.filter(task__number__in=[1, 2]).values_list("config", flat=True)) == sorted(
        [ADD, ADD_BF16, ADD_PASSING, SUM])
    assert not FailingConfig.objects.filter(config=MEAN).exists() and not FailingConfig.objects.filter(task__number=4)
    assert result.configs_added == 3 and dict(result.not_stored) == {"pass": 1, "config_parse": 1}
    outcome = {r.failing_config.config: (r.result_class, r.classes, r.log_outcome) for r in ExternalResult.objects.all()}
    assert outcome == {ADD: ("paddle_accuracy", ["paddle_accuracy", "pass"], "FAIL"), SUM: ("paddle_accuracy", ["paddle_accuracy"], "FAIL"),
                       ADD_BF16: ("paddle_crash", ["paddle_crash"], ""), ADD_PASSING: ("pass", ["pass"], "PASS")}
    assert ConfigResult.objects.count() == results_before  # never one of the board's verdicts
    assert run.per_class["pass"] == {"lines": 3, "found": 3, "final": 2}
    events = Event.objects.count()
    again = import_run_dir(tmp_path / "test_log", "cpu")
    assert again.already_imported and again.run.pk == run.pk
    assert (ExternalRun.objects.count(), ExternalResult.objects.count(), Event.objects.count()) == (1, 4, events)
    assert add.external_results.count() == 3


def _stored():
    return (sorted(FailingConfig.objects.values_list("task__number", "config")),
            sorted(ExternalResult.objects.values_list("run_id", "failing_config_id", "result_class")),
            ExternalRun.objects.count(), Event.objects.count())


@pytest.mark.django_db
def test_a_malformed_line_refuses_the_whole_import_and_loses_nothing(tmp_path, capsys):
    make_task(1, api="paddle.add")
    make_task(2, api="paddle.sum")
    call_command("import_reports", str(run_2025(tmp_path / "first")), "--kernel", "cpu")
    before = _stored()
    assert before[2] == 1 and len(before[0]) == 2
    root = run_2026(tmp_path / "second")
    (root / "api_config_paddle_accuracy.txt").write_text(f"{SUM}\n\npaddle.add(x=Tensor([2],\"float32\"), \n{ADD}\n")
    with pytest.raises(CommandError, match="1 malformed line"):
        call_command("import_reports", str(root), "--kernel", "cpu")
    assert "api_config_paddle_accuracy.txt:3: does not end with `)`" in capsys.readouterr().err
    assert _stored() == before
    with pytest.raises(RunDirRefused) as refused:
        import_run_dir(root, "cpu")
    assert refused.value.lines[0].startswith("api_config_paddle_accuracy.txt:3:")


@pytest.mark.django_db
def test_command_says_what_it_read_per_class(tmp_path, capsys):
    make_task(1, api="paddle.add")
    call_command("import_reports", str(run_2025(tmp_path / "r")), "--kernel", "cpu")
    out = capsys.readouterr().out
    assert "(2025 class names; CPU, 2025-06-01 from the log; tolerance not stated in the log)" in out
    assert "  paddle_crash: 1 lines read, 1 configs found, 1 final" in out
    assert "  paddle_accuracy: 2 lines read, 2 configs found, 1 final" in out
    assert f"in 2 classes, counted once as paddle_crash: paddle_crash, paddle_accuracy — {ADD}" in out
    assert "  failing, no CPU task: paddle.sum: 1" in out
    with pytest.raises(CommandError, match="--kernel cpu"):
        call_command("import_reports", str(tmp_path / "r"))


@pytest.mark.django_db
@pytest.mark.parametrize("language, label, klass", [
    ("en", "PaddleAPITest's result (GPU 0, 2026-11-30)", "PaddleAPITest's class"),
    ("zh-hans", "PaddleAPITest 的结果（GPU 0，2026-11-30）", "PaddleAPITest 的分类"),
])
def test_task_page_shows_the_runs_outcome_labelled_as_paddleapitests(tmp_path, client, language, label, klass):
    make_task(1, api="paddle.add")
    import_run_dir(run_2026(tmp_path / "test_log"), "cpu")
    page = client.get("/tasks/1", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    panel = page.split('id="external-results"', 1)[1].split("</section>", 1)[0]
    assert label in panel and klass in panel and "atol=0.01, rtol=0.001" in panel
    assert "paddle_accuracy" in panel
    assert panel.count('<code class="config">') == 2  # ADD and ADD_BF16: the task's two configs of the run


def test_mixed_names_an_unknown_class_and_the_known_bitwise_list(tmp_path):
    root = write_run(tmp_path / "mixed", {
        "api_config_accuracy_diff_gpu1.txt": [ADD],  # 2025's bitwise class, with an id suffix
        "api_config_paddle_bitwise_knows.txt": [ADD, SUM],  # 2026's known list: a bitwise failure still beats it
        "api_config_something_new.txt": [MEAN],
    })
    run = read_run_dir(root)
    assert run.vocabulary == "mixed" and run.not_read == ["api_config_something_new.txt"]
    assert (run.configs[ADD].result_class, run.configs[ADD].classes) == ("paddle_bitwise", ["paddle_bitwise", "paddle_bitwise_knows"])
    assert run.configs[SUM].result_class == "paddle_bitwise_knows" and MEAN not in run.configs
