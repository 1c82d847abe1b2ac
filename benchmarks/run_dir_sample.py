"""Issue #47's measurement: a PaddleAPITest run directory built from what this machine has, imported, and its
classes set beside this board's engine verdicts on the same configs.

PaddleAPITest's own engine is not on this machine (no internet), so no run of it can be made here. What exists is
its newest CPU report's log (`reports/ci_ce_cpu/error_log.log` of the shared data, 2025-08-08): one block per
config, `[accuracy error]` or `[paddle error]` as PaddleAPITest's engine printed it. That is the 2025 vocabulary's
`accuracy_error` and `paddle_error` classes, so `build` lays a sample of those blocks out as that engine's run
directory would hold them (written to --out, outside the repository; the data is read at run time):

    api_config_accuracy_error.txt, api_config_paddle_error.txt   the sample's configs, by the log's result line
    checkpoint.txt                                               every config of the sample
    log_inorder.log                                              the sample's `test begin` and result lines

`--vocabulary 2026` writes the same sample as the 2026 engine would name and frame it (`api_config_paddle_accuracy.txt`,
`>>> CASE` / `<<< CASE` markers): both must import alike.

The sample: at most --per-class configs per (API, class), in the log's order, of at most --max-input-mib MiB of
inputs (the engine's estimate). A config the log reports twice (an accuracy error and a Paddle error) is in both
files, as a run that classified it twice would leave it.

    .venv/bin/python benchmarks/run_dir_sample.py build --out /tmp/i47/test_log
    .venv/bin/python -m apitester coverage /tmp/i47/test_log/checkpoint.txt --workers 1 --threads 1 --quiet --jsonl ours.jsonl
    .venv/bin/python benchmarks/run_dir_sample.py compare /tmp/i47/test_log ours.jsonl [--earlier ours300.jsonl]

`compare` prints the per-class counts (apitester.reports.run_dirs, the importer's reader) and every config whose final
class and this board's verdict differ, with why (our status, its class and its message).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apitester.reports.report_logs import Kind, read_logs  # noqa: E402
from apitester.readings import input_bytes  # noqa: E402
from apitester.reports import reports_dir  # noqa: E402
from apitester.reports.run_dirs import CLASS_GROUPS, CLASS_RENAMES, case_id, read_run_dir  # noqa: E402
from apitester.vocab import status_class  # noqa: E402

SOURCE_LOG = "reports/ci_ce_cpu/error_log.log"
# What each of PaddleAPITest's failing classes agrees with among this board's statuses.
AGREES = {
    "paddle_accuracy": {"accuracy_error", "dtype_mismatch", "shape_mismatch"},
    "paddle_error": {"paddle_error"},
    "paddle_crash": {"crash", "flaky_crash"},
    "pass": {"pass"},
}


def log_2026(sample: list[str], kept: list[str]) -> list[str]:
    """The same cases framed as the 2026 engine frames them (#686): begin marker, config, end marker (FAIL: each
    is in a failing class). The time is the 2025 line's; there is no duration, the old log has none."""
    began = {}
    for line in kept:
        if " test begin: " in line:
            began.setdefault(line.split(" test begin: ", 1)[1].strip(), line.split(" GPU ", 1)[0][:23])
    # The old log names no Paddle version: the header leaves it out rather than invent one.
    lines = [f">>> TEST RUN | {next(iter(began.values()))} | PID 0", "", "--- OPTIONS", "Compute",
             "  --test_cpu: true", "", "--- RUNNING"]
    for config in sample:
        lines += [f">>> CASE {case_id(config)} | {began.get(config, '')} | Slot 0", config,
                  f"<<< CASE {case_id(config)} | FAIL"]
    return lines


def build(out: Path, per_class: int, max_mib: int, vocabulary: str) -> None:
    reading = read_logs(reports_dir())
    failures = [f for f in reading.failures if f.file == SOURCE_LOG]
    taken: dict[tuple[str, str], list[str]] = defaultdict(list)
    lines: dict[str, list[str]] = defaultdict(list)
    source = (reports_dir() / SOURCE_LOG).read_text(encoding="utf-8", errors="replace").splitlines()
    for failure in failures:
        klass = "paddle_error" if failure.kind == Kind.PADDLE_ERROR else "accuracy_error"
        api = failure.config.split("(", 1)[0]
        chosen = taken[(api, klass)]
        if failure.config in chosen or len(chosen) >= per_class or (input_bytes(failure.config) or 0) > max_mib << 20:
            continue
        chosen.append(failure.config)
        lines[klass].append(failure.config)
    out.mkdir(parents=True, exist_ok=True)
    sample = list(dict.fromkeys(c for configs in lines.values() for c in configs))
    for klass, configs in lines.items():
        name = CLASS_RENAMES.get(klass, klass) if vocabulary == "2026" else klass
        (out / f"api_config_{name}.txt").write_text("".join(f"{c}\n" for c in configs))
    (out / "checkpoint.txt").write_text("".join(f"{c}\n" for c in sample))
    wanted = set(sample)
    kept = [line for line in source if any(line.endswith(c) for c in wanted if c in line)]
    kept = log_2026(sample, kept) if vocabulary == "2026" else kept
    (out / "log_inorder.log").write_text("".join(f"{line}\n" for line in kept))
    print(f"{len(sample)} configs ({', '.join(f'{k} {len(v)}' for k, v in sorted(lines.items()))}) "
          f"from {len(failures)} result lines of {SOURCE_LOG} -> {out}")


def _load(jsonl: Path) -> dict[str, dict]:
    rows = {}
    for line in jsonl.read_text().splitlines():
        if line.strip().startswith("{"):
            row = json.loads(line)
            rows[row["config"]] = row
    return rows


def _agrees(klass: str, verdict: dict | None) -> bool | None:
    return None if verdict is None else verdict["status"] in AGREES.get(klass, set())


def why(klass: str, verdict: dict, earlier: dict | None, earlier_name: str) -> str:
    """Why the class and our verdict differ, from our status's class and (with an earlier release's run) whether
    that release agreed with the class."""
    status, group = verdict["status"], status_class(verdict["status"])
    message = (verdict.get("message") or "").strip().splitlines()
    said = f"; {message[0][:140]}" if message else ""
    before = ""
    if earlier is not None:
        before = (f"; on Paddle {earlier_name}: {earlier['status']}"
                  + (" (agrees with the class: changed between the releases)" if _agrees(klass, earlier) else ""))
    if group == "passing":
        reason = "passes here under this board's rule"
    elif group == "failing":
        reason = "fails here too, as another kind of failure than the class"
    elif group == "no_verdict":
        reason = "no verdict here: an engine gap, not evidence either way"
    elif group == "by_design":
        reason = "a difference Paddle documents"
    else:
        reason = "the evidence here points at Torch"
    return f"{status}: {reason}{before}{said}"


def compare(run_dir: Path, jsonl: Path, earlier_jsonl: Path | None, earlier_name: str) -> None:
    run = read_run_dir(run_dir)
    if run.malformed:
        raise SystemExit("\n".join(str(m) for m in run.malformed))
    ours = _load(jsonl)
    earlier = _load(earlier_jsonl) if earlier_jsonl else {}
    print(f"{len(run.configs)} configs, {run.vocabulary} class names; per class (lines / found / final):")
    for name, counts in run.per_class().items():
        print(f"  {name}: {counts['lines']} / {counts['found']} / {counts['final']}")
    print(f"  in two classes: {len(run.in_two_classes)}")
    agree, differ, missing = Counter(), [], 0
    for config, item in run.configs.items():
        verdict = ours.get(config)
        if verdict is None:
            missing += 1
        elif _agrees(item.result_class, verdict):
            agree[item.result_class] += 1
        else:
            differ.append((item.result_class, config, verdict))
    print(f"agree: {dict(agree)}; differ: {len(differ)}; without a verdict of ours: {missing}")
    print("differ by (class, our status):", dict(Counter((k, v["status"]) for k, _, v in differ)))
    if earlier:
        agreed_before = sum(bool(_agrees(k, earlier.get(c))) for k, c, _ in differ)
        print(f"of those, agreeing with the class on Paddle {earlier_name}: {agreed_before}")
        print(f"agree on Paddle {earlier_name}: "
              f"{sum(bool(_agrees(i.result_class, earlier.get(c))) for c, i in run.configs.items())} of {len(run.configs)}")
    groups = Counter((k, c.split("(", 1)[0], v["status"], (earlier.get(c) or {}).get("status", "-")) for k, c, v in differ)
    print(f"grouped by (class, API, our status, on Paddle {earlier_name or '-'}):")
    for (klass, api, status, before), count in sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0][1])):
        print(f"  {klass} | {api} | {status} | {before} | {count}")
    for klass, config, verdict in sorted(differ, key=lambda d: (d[0], d[2]["status"], d[1])):
        print(f"- [{klass} / {CLASS_GROUPS[klass]}] {config}\n    {why(klass, verdict, earlier.get(config), earlier_name)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--per-class", type=int, default=4)
    b.add_argument("--vocabulary", choices=("2025", "2026"), default="2025",
                   help="2026: the same sample under the renamed classes and with the case markers")
    b.add_argument("--max-input-mib", type=int, default=64)
    c = sub.add_parser("compare")
    c.add_argument("run_dir", type=Path)
    c.add_argument("jsonl", type=Path)
    c.add_argument("--earlier", type=Path, default=None, help="the same configs' verdicts on an earlier release")
    c.add_argument("--earlier-name", default="3.0.0")
    args = parser.parse_args()
    if args.command == "build":
        build(args.out, args.per_class, args.max_input_mib, args.vocabulary)
    else:
        compare(args.run_dir, args.jsonl, args.earlier, args.earlier_name)


if __name__ == "__main__":
    main()
