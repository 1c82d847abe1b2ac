"""CLI: engine.py-compatible flags, --json, parse subcommand, coverage, exit codes.

Each run is a real subprocess (python -m apitester) importing real paddle and torch.
"""

import json
import os
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MUL_FP16 = 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )'
CLIP_OK = 'paddle.clip(Tensor([5],"float64"), min=0, )'


def run(*args, extra_env=None, timeout=300):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(HERE)])
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "apitester", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_engine_py_style_flags_and_failing_exit_code():
    proc = run("--accuracy=True", f"--api_config={MUL_FP16}", "--test_cpu=True", "--atol=0.01", "--rtol=0.01")
    assert proc.returncode == 1, proc.stderr
    assert f"[accuracy_error forward] {MUL_FP16}" in proc.stdout
    assert "Mismatched elements:" in proc.stdout and "Greatest absolute difference: inf" in proc.stdout


def test_config_file_json_lines_and_passing_exit_code(tmp_path):
    cfg = tmp_path / "configs.txt"
    cfg.write_text(f"{CLIP_OK}\n\n{CLIP_OK}\n")  # blank line skipped, repeat run once
    proc = run("--accuracy=True", f"--api_config_file={cfg}", "--test_cpu=True", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) == 1 and lines[0]["status"] == "pass" and lines[0]["config"] == CLIP_OK


def test_unsupported_api_exits_1():
    proc = run("--api_config=paddle.apitester_no_such_api(Tensor([3],\"float32\"), )", "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["status"] == "unsupported"


def test_missing_config_is_a_usage_error():
    proc = run("--accuracy=True")
    assert proc.returncode == 2 and "api_config" in proc.stderr


def test_parse_subcommand_reports_file_line_column(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text(f"{CLIP_OK}\n{MUL_FP16}")  # no final newline
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{CLIP_OK}\n  paddle.clip(Tensor([3],float32), )\n")
    ok = run("parse", str(good))
    assert ok.returncode == 0 and ok.stdout.strip().splitlines()[-1] == "parsed 2/2"
    res = run("parse", str(good), str(bad))
    assert res.returncode == 1
    out = res.stdout.strip().splitlines()
    assert out[-1] == "parsed 3/4"
    assert out[0] == f'{bad}:2:26: expected a dtype string like "float32", found \'float32\''


def test_coverage_counts_and_total_line(tmp_path):
    cfg = tmp_path / "cov.txt"
    cfg.write_text("\n".join([
        CLIP_OK, CLIP_OK,                                   # deduped
        MUL_FP16,
        'paddle.apitester_no_such_api(Tensor([3],"float32"), )',
        'apitester_test.broken_domain(Tensor([3],"float32"), )',
        'apitester_test.segfault(Tensor([3],"float32"), )',
        'apitester_test.hang(Tensor([3],"float32"), )',
        'paddle.clip(Tensor([100000, 100000],"float64"), min=0, )',   # 80 GB: skipped
        'paddle.clip(Tensor([3],"float32"), min=, )',                  # syntax error
    ]) + "\n")
    proc = run("coverage", str(cfg), "--workers=2", "--timeout=20", "--quiet",
               extra_env={"APITESTER_EXTRA_SPECS": "apitester_test_specs"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "TOTAL configs=8 verdict=2 unsupported=2 engine_error=1"
    assert lines[-2].startswith("OTHER skipped_too_large=1 crash=1 timeout=1")
    by_api = {line.split()[0]: line for line in lines if not line.startswith((" ", "OTHER", "TOTAL"))}
    assert "crash=1" in by_api["apitester_test.segfault"] and "SIGSEGV" in proc.stdout
    assert "timeout=1" in by_api["apitester_test.hang"]
    assert "engine_error=1" in by_api["apitester_test.broken_domain"]
    assert "accuracy_error=1" in by_api["paddle.Tensor.__mul__"]
    assert "configs=3" in by_api["paddle.clip"] and "skipped_too_large=1" in by_api["paddle.clip"] \
        and "unsupported=1" in by_api["paddle.clip"]


def test_coverage_runs_on_the_worker_pool_and_reports_flaky_crash(tmp_path):
    # Coverage is counting on top of apitester.pool.WorkerPool: a config that kills its worker once
    # is retried in a fresh worker and counted as flaky_crash (with the crashes), as the runner does.
    marker = tmp_path / "died"
    die_once = f'apitester_test.die_once(Tensor([3],"float32"), marker="{marker}", )'
    cfg = tmp_path / "cov.txt"
    cfg.write_text(f"{die_once}\n{CLIP_OK}\n")
    jsonl = tmp_path / "verdicts.jsonl"
    proc = run("coverage", str(cfg), "--workers=1", "--quiet", f"--jsonl={jsonl}",
               extra_env={"APITESTER_EXTRA_SPECS": "apitester_test_specs"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "TOTAL configs=2 verdict=1 unsupported=0 engine_error=0"
    assert lines[-2].startswith("OTHER skipped_too_large=0 crash=1 timeout=0 flaky_crash=1 ")
    verdicts = {v["api"]: v for v in map(json.loads, jsonl.read_text().splitlines())}
    flaky = verdicts["apitester_test.die_once"]
    assert flaky["status"] == "flaky_crash" and flaky["retry_status"] == "pass" and flaky["attempts"] == 2
    assert "SIGILL" in flaky["message"] and marker.exists()
    assert verdicts["paddle.clip"]["status"] == "pass" and verdicts["paddle.clip"]["attempts"] == 1


def test_coverage_only_apis_maps_task_names(tmp_path):
    cfg = tmp_path / "cov.txt"
    cfg.write_text(f"{CLIP_OK}\n{MUL_FP16}\n")
    proc = run("coverage", str(cfg), "--only-apis", "paddle.Tensor.mul", "--workers=1", "--quiet")
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "TOTAL configs=1 verdict=1 unsupported=0 engine_error=0"
    assert lines[0].startswith("paddle.Tensor.__mul__ configs=1")
