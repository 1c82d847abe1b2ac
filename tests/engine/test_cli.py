"""CLI: engine.py-compatible flags, --json, parse subcommand, coverage, exit codes.

Each run is a real subprocess (python -m apitester) importing real paddle and torch.
"""

import json

from tests.engine_helpers.cli import FAKE_SPECS, run

MUL_FP16 = 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )'
CLIP_OK = 'paddle.clip(Tensor([5],"float64"), min=0, )'


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
               extra_env={"APITESTER_EXTRA_SPECS": FAKE_SPECS})
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
               extra_env={"APITESTER_EXTRA_SPECS": FAKE_SPECS})
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


FUZZ_SEEDS = [
    CLIP_OK, MUL_FP16,
    'paddle.concat(list[Tensor([2, 3],"float32"),Tensor([2, 3],"float32"),], axis=0, )',
    'paddle.nn.functional.pad(Tensor([1, 2, 3],"float64"), pad=tuple(1,1,), mode="constant", value=-math.inf, )',
    'paddle.Tensor.__getitem__(Tensor([4, 5],"int64"), tuple(slice(None,2,None),1,), )',
    'paddle.full(shape=list[2,3,], fill_value=complex(nan,math.inf), dtype=Dtype(float16), )',
    'paddle.clip(x=Tensor([3, 3],"float64"), min=Tensor([1],"float64"), max=None, )',
]
FUZZ_PIECES = ["(", ")", "[", "]", ",", "=", "-", '"', "\\", " ", "\t", "1", "9" * 50, "1e309", ".", "inf", "nan",
               "Tensor", "list", "tuple", "slice", "complex", "math.inf", "None", "True", "a.b", "报", "\x00", "\x0b",
               "\x0c", "\x85", "\u2028", "\udcff", "😀", "\r", "list[" * 40, "(" * 50, "1" * 4400]


WORST_LINES = [b"paddle.x(" + b"[" * 100_000, b"paddle.x(" + b"list[" * 1000 + b"]" * 1000 + b")",
               b"paddle.x(" + b"1" * 5000 + b", )", b"paddle.x(-" + b"7" * 100_000 + b", )",
               b'paddle.x(Tensor([' + b"9" * 4301 + b'],"float32"), )', b"paddle.x(complex(" + b"1" * 400 + b",0), )",
               b"paddle.x(" + b"1," * 50_000 + b")", b'paddle.x("' + b"a" * 100_000, b'paddle.x("' + b'\\"' * 50_000,
               b"paddle.x(\xff\xfe)", b"\xc3", b"paddle.x(a", b"paddle.x(", b"(" * 65536, b"-" * 65536, b" " * 65536]


def fuzz_lines(rng) -> list[bytes]:
    """The worst cases by hand (lines 1-16), then generated config lines (as bytes: some are not UTF-8;
    some hold a carriage return, which also ends a line)."""
    lines = list(WORST_LINES)
    for _ in range(3000):
        text = rng.choice(FUZZ_SEEDS)
        for _ in range(rng.randint(0, 4)):
            at = rng.randint(0, len(text))
            piece = rng.choice(FUZZ_PIECES)
            text = rng.choice([text[:at] + piece + text[at:], text[:at] + text[at + len(piece):],
                               text[:at] + piece + text[at + 1:]])
        lines.append(text.encode("utf-8", "surrogateescape"))
    return lines


def test_parse_subcommand_never_stops_on_a_line(tmp_path):
    """Generated and worst-case lines: no traceback, and every line the parser refuses is reported with
    file:line:column and what was expected and found; the other lines count as parsed."""
    import random
    import re

    from apitester.config import ConfigSyntaxError, parse_config

    path = tmp_path / "fuzz.txt"
    path.write_bytes(b"\n".join(fuzz_lines(random.Random(17))) + b"\n")
    proc = run("parse", str(path), timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr and proc.stderr == "", proc.stderr[-3000:]
    assert proc.returncode == 1

    # What the parser says about each line, read the way the CLI reads the file (no other exception allowed).
    refused, total = set(), 0
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            total += 1
            try:
                if re.search("[\udc80-\udcff]", raw):
                    raise ConfigSyntaxError(raw, 1, "UTF-8 text", "")
                parse_config(raw.strip())
            except ConfigSyntaxError:
                refused.add(lineno)
    out = proc.stdout.splitlines()
    assert out[-1] == f"parsed {total - len(refused)}/{total}"
    reported = {}
    for line in out[:-1]:
        match = re.fullmatch(re.escape(str(path)) + r":(\d+):(\d+): expected .+, found .+", line)
        assert match, f"not a file:line:column report: {line[:300]!r}"
        reported[int(match.group(1))] = line
    assert set(reported) == refused
    assert 100 < len(refused) < total - 100  # the generator makes both kinds
    worst = {1: "tokens", 2: "levels of nesting", 3: "at most 4300 digits", 4: "at most 4300 digits", 5: "a dimension of at most 4300 digits",
             6: "numbers a float can hold", 7: "tokens", 8: "an unterminated string", 10: "UTF-8 text, found the byte 0xff",
             11: "UTF-8 text, found the byte 0xc3", 12: "',' or ')'", 13: "a value", 16: None}
    for lineno, why in worst.items():
        if why is None:
            assert lineno not in reported  # a line of spaces is blank
        else:
            assert why in reported[lineno], reported[lineno][:300]
