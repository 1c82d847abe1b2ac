"""apitester.reports (Django-free): layout, dates, categories, line handling, malformed lines."""
import datetime as dt
import subprocess
import sys

from apitester.reports import build_index, check_config_line, discover_report_files, iter_report_configs

from .conftest import REPO, REPORTS, needs_reports, write_report_tree

D = dt.date


def test_reader_does_not_import_django():
    code = "import sys, apitester.reports; assert 'django' not in sys.modules, sorted(m for m in sys.modules if 'django' in m)"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


@needs_reports
def test_layout_dates_and_categories_of_the_real_reports():
    files = {f.rel: f for f in discover_report_files(REPORTS)}
    top = files["reports/ci_ce_cpu/error_config.txt"]
    # The top-level report has no date of its own: it is the newest history version.
    assert (top.kernel, top.date, top.kind) == ("CPU", D(2025, 8, 8), "report")
    assert files["reports/ci_ce_cpu/20250529/6_accuracy_amp/error_config.txt"].category == "amp"
    assert files["reports/ci_ce_cpu/20250607/amp_cpu_error/error_config.txt"].category == "amp"
    assert files["reports/ci_ce_cpu/20250607/cpu_error/error_config.txt"].category == "accuracy"
    gpu = {rel.split("/")[-2]: f for rel, f in files.items() if "/20250606/" in rel}
    assert {name: f.category for name, f in gpu.items()} == {
        "error": "accuracy", "dtype_diff_error": "dtype_diff", "amp_dtype_dff_error": "amp_dtype_diff",
        "amp_error": "amp", "grads_diff_error": "grads_diff", "uncertain_error": "uncertain"}
    assert {f.kernel for f in gpu.values()} == {"GPU"} and {f.date for f in gpu.values()} == {D(2025, 6, 6)}
    assert files["reports/ci_ce_gpu/test_history/20250526_2/error_config.txt"].date == D(2025, 5, 26)
    history = [f for f in files.values() if f.kind == "history"]
    assert len([f for f in history if f.kernel == "CPU"]) == 11 and len([f for f in history if f.kernel == "GPU"]) == 2
    assert files["history/ci_ce_cpu/2025-06-10_b3dec64d.txt"].date == D(2025, 6, 10)
    assert not any(rel.endswith("error_api.txt") or rel.endswith(".log") for rel in files)


@needs_reports
def test_a_file_without_final_newline_keeps_its_last_line():
    path = REPORTS / "history/ci_ce_cpu/2025-05-09_5ae633af.txt"
    raw = path.read_bytes()
    assert not raw.endswith(b"\n")  # the real file this test is about
    lines = [c for c in iter_report_configs(REPORTS) if c.file == "history/ci_ce_cpu/2025-05-09_5ae633af.txt"]
    last = raw.decode().split("\n")[-1].strip()
    assert lines[-1].config == last and lines[-1].line == raw.count(b"\n") + 1
    assert len(lines) == raw.count(b"\n") + 1


def test_lines_are_never_glued_and_malformed_lines_are_reported(tmp_path):
    root = write_report_tree(tmp_path, {
        "history/ci_ce_cpu/2025-05-01_aaaa.txt": 'paddle.abs(Tensor([2],"float32"), )',  # no final newline
        "history/ci_ce_cpu/2025-05-02_bbbb.txt": 'paddle.abs(Tensor([3],"float32"), )\n',
        "reports/ci_ce_cpu/error_config.txt": (
            'paddle.abs(Tensor([3],"float32"), )\n'
            'not a config\n'
            'paddle.sum(Tensor([2],"float32"), )paddle.abs(Tensor([2],"float32"), )\n'
            'paddle.sum(x=Tensor([4],"float32"), name="a)b", )\n'
            '\n'
            'paddle.max(Tensor([2],"float32"), \n'
        ),
    })
    errors = []
    configs = list(iter_report_configs(root, errors.append))
    assert [(c.file.split("/")[-1], c.line, c.config) for c in configs] == [
        ("2025-05-01_aaaa.txt", 1, 'paddle.abs(Tensor([2],"float32"), )'),
        ("2025-05-02_bbbb.txt", 1, 'paddle.abs(Tensor([3],"float32"), )'),
        ("error_config.txt", 1, 'paddle.abs(Tensor([3],"float32"), )'),
        ("error_config.txt", 4, 'paddle.sum(x=Tensor([4],"float32"), name="a)b", )'),
    ]
    assert [(e.file, e.line) for e in errors] == [
        ("reports/ci_ce_cpu/error_config.txt", 2), ("reports/ci_ce_cpu/error_config.txt", 3), ("reports/ci_ce_cpu/error_config.txt", 6)]
    assert "glued" in errors[1].message and str(errors[1]).startswith("reports/ci_ce_cpu/error_config.txt:3: ")
    assert configs[2].date == D(2025, 5, 2)  # top-level report dated by the newest history version


def test_first_last_seen_and_gone_since(tmp_path):
    a, b, c = ('paddle.abs(Tensor([%d],"float32"), )' % n for n in (1, 2, 3))
    root = write_report_tree(tmp_path, {
        "history/ci_ce_cpu/2025-05-01_aaaa.txt": f"{a}\n{b}\n",
        "history/ci_ce_cpu/2025-06-01_bbbb.txt": f"{a}\n",
        "history/ci_ce_cpu/2025-07-01_cccc.txt": f"{c}\n",
        "reports/ci_ce_cpu/error_config.txt": f"{c}\n",
        "reports/ci_ce_cpu/20250420/amp_error/error_config.txt": f"{a}\n",
    })
    index = build_index(root)
    ta, tb, tc = (index.configs[("CPU", x)] for x in (a, b, c))
    assert (ta.first_seen, ta.last_seen, ta.in_latest_report, ta.gone_since) == (D(2025, 4, 20), D(2025, 6, 1), False, D(2025, 7, 1))
    assert (tb.first_seen, tb.last_seen, tb.gone_since) == (D(2025, 5, 1), D(2025, 5, 1), D(2025, 6, 1))
    assert (tc.in_latest_report, tc.gone_since, tc.newest_origin["file"]) == (True, None, "reports/ci_ce_cpu/error_config.txt")
    assert [o["category"] for o in ta.origins] == ["amp", "accuracy", "accuracy"]


def test_check_config_line():
    assert check_config_line('paddle.Tensor.__getitem__(Tensor([6, 5],"int64"), list[0,2,], )') == ("paddle.Tensor.__getitem__", "")
    assert check_config_line('paddle.where(Tensor([2],"bool"), x=1.0, y=Tensor([2],"float32"), )')[0] == "paddle.where"
    assert check_config_line("x = 1")[0] is None
    assert check_config_line('paddle.abs(Tensor([2],"float32"), ')[1] == "does not end with `)`"
    assert check_config_line('paddle.abs(x="unterminated)')[1] == "unterminated string at column 14"
    assert "column" in check_config_line("paddle.abs(x))")[1]
