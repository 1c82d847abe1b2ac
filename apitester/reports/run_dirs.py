"""Read a PaddleAPITest run directory (third-party output, read at run time; no Django here).

A run directory is what PaddleAPITest's engine leaves in its log dir (`tester/api_config/test_log` unless
`--log_dir` says otherwise):
  api_config_<class>[_<id>].txt   one config per line: the configs the run put in that result class
  checkpoint.txt                  every config the run finished (classified or not)
  log_inorder.log                 the workers' output, case after case
  tol.csv, stable.csv, .tmp/      not read here

Two vocabularies of result classes exist. 2025's (`accuracy_error`, `accuracy_diff`, `cuda_error`, `crash`,
`numpy_error`, `match_error`, `paddle_to_torch_failed`, …) was renamed in 2026 (PFCCLab/PaddleAPITest#651:
`paddle_accuracy`, `paddle_bitwise`, `paddle_cuda`, `paddle_crash`, `config_input`, `config_parse`,
`config_convert`); both are read, and every class is reported under its 2026 name (`CLASS_RENAMES`).

One final class per config. PaddleAPITest means a config to end in exactly one class (#678) and warns about
a config found in several; where a run directory still holds one in two, the final class is the first of
`CLASS_PRECEDENCE` among them: a Paddle failure beats a test-side problem, which beats a retest (oom, timeout),
which beats skip, which beats pass — the engine's own rule that an error overrides a pass, extended to every
pair; among Paddle failures the more severe first (crash, CUDA error, exception, accuracy, bitwise). Such a
config is reported with all its classes and counted once, under its final class.

The log: 2026's engine frames each case with markers (#686):
  `>>> CASE <id> | <date time> | Paddle <version> | GPU <n> | PID <pid> | Slot <n>`, the config on the next line,
  `<<< CASE <id> | PASS|FAIL|SKIP|<STATUS> [| <n> ms]`,
where <id> is the first 12 hex digits of the config's SHA-1; a run starts with `>>> TEST RUN | <date time> |
Paddle <version> | PID <pid>` and lists its options (`--atol: x`, `--rtol: y`, `--test_cpu: true`). 2025's
log has `<date time> [GPU <id> <pid>] test begin: <config>` per case and no end marker. A line that breaks
this framing (an end marker without its begin, an id that is not its config's, a begin without a config) is
malformed: reported with file:line, like a config line that is not `api(...)`.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import MalformedLine, check_config_line

# PFCCLab/PaddleAPITest#651: 2025 name → 2026 name.
CLASS_RENAMES = {
    "accuracy_error": "paddle_accuracy",
    "accuracy_diff": "paddle_bitwise",
    "cuda_error": "paddle_cuda",
    "crash": "paddle_crash",
    "numpy_error": "config_input",
    "match_error": "config_parse",
    "paddle_to_torch_failed": "config_convert",
}
# Classes named the same in both vocabularies, and the ones only one of them has.
SHARED_CLASSES = ("pass", "skip", "paddle_error", "torch_error", "oom", "timeout")
ONLY_2025 = ("remote_error", "network_error")
ONLY_2026 = ("paddle_bitwise_knows",)
CLASSES_2025 = tuple(CLASS_RENAMES) + SHARED_CLASSES + ONLY_2025
CLASSES_2026 = tuple(CLASS_RENAMES.values()) + SHARED_CLASSES + ONLY_2026

# What each (2026-named) class says about Paddle; the failing ones become the task's configs.
PADDLE_FAILURE = ("paddle_crash", "paddle_cuda", "paddle_error", "paddle_accuracy", "paddle_bitwise")
CLASS_GROUPS = {
    **{name: "paddle" for name in PADDLE_FAILURE},
    "paddle_bitwise_knows": "known",  # bitwise differences PaddleAPITest already lists as known
    **{name: "test" for name in ("torch_error", "config_convert", "config_parse", "config_input")},
    **{name: "retest" for name in ("oom", "timeout", "remote_error", "network_error")},
    "skip": "skip",
    "pass": "pass",
}
CLASS_PRECEDENCE = (*PADDLE_FAILURE, "paddle_bitwise_knows", "torch_error", "config_convert", "config_parse",
                    "config_input", "oom", "timeout", "remote_error", "network_error", "skip", "pass")

CLASS_FILE_PREFIX = "api_config_"
CHECKPOINT = "checkpoint.txt"
LOG_NAME = "log_inorder.log"

_CASE_BEGIN_RE = re.compile(r"^>>> CASE (?P<id>[0-9a-f]{12}) \| (?P<rest>.*)$")
_CASE_END_RE = re.compile(r"^<<< CASE (?P<id>[0-9a-f]{12}) \| (?P<outcome>[A-Z_]+)(?: \| (?P<ms>\d+) ms)?\s*$")
_RUN_BEGIN_RE = re.compile(r"^>>> TEST RUN \| (?P<when>\d{4}-\d{2}-\d{2} [\d:.]+)(?: \| Paddle (?P<paddle>\S+))?")
_OPTION_RE = re.compile(r"^\s+--(?P<name>atol|rtol|test_cpu|gpu_ids): (?P<value>\S+)\s*$")
_BEGIN_2025_RE = re.compile(r"^(?P<when>\d{4}-\d{2}-\d{2} [\d:.]+) (?:GPU \d+ \d+ )?test begin: (?P<config>.+)$")
_DATE_FIELD_RE = re.compile(r"^\d{4}-\d{2}-\d{2} [\d:.]+$")


def canonical_class(name: str) -> str:
    """A class name of either vocabulary → its 2026 name."""
    return CLASS_RENAMES.get(name, name)


def case_id(config: str) -> str:
    """The id PaddleAPITest's case markers carry: the first 12 hex digits of the config's SHA-1."""
    return hashlib.sha1(config.encode("utf-8", errors="replace")).hexdigest()[:12]


def class_of_file(name: str) -> tuple[str, str] | None:
    """`api_config_<class>[_<id>].txt` → (class as written, vocabulary), the longest known class first
    (`paddle_bitwise_knows` before `paddle_bitwise`); None for any other file."""
    if not (name.startswith(CLASS_FILE_PREFIX) and name.endswith(".txt")):
        return None
    stem = name[len(CLASS_FILE_PREFIX):-len(".txt")]
    for known in sorted(set(CLASSES_2025) | set(CLASSES_2026), key=len, reverse=True):
        if stem == known or stem.startswith(known + "_"):
            vocabulary = "2025" if known in CLASS_RENAMES or known in ONLY_2025 else (
                "2026" if known in CLASS_RENAMES.values() or known in ONLY_2026 else "both")
            return known, vocabulary
    return None


def is_run_dir(path: Path | str) -> bool:
    """A directory holding at least one `api_config_<class>.txt` of a known class at its top level."""
    path = Path(path)
    return path.is_dir() and any(class_of_file(p.name) for p in path.iterdir() if p.is_file())


@dataclass
class ClassFile:
    rel: str
    written_class: str  # as the file name spells it
    result_class: str  # its 2026 name
    vocabulary: str  # 2025 | 2026 | both (a name both vocabularies share)
    lines: int = 0  # config lines read
    configs: int = 0  # distinct configs among them


@dataclass
class RunConfig:
    config: str
    api: str
    result_class: str  # the final class (CLASS_PRECEDENCE)
    classes: list[str]  # every class the run put it in, final first
    file: str
    line: int
    written_class: str = ""  # the final class as its file spelled it
    # What the log says of this config (empty when the log has no case for it).
    log_outcome: str = ""
    log_line: int | None = None
    duration_ms: int | None = None
    started: str = ""  # the case's begin time as the log printed it

    @property
    def group(self) -> str:
        return CLASS_GROUPS[self.result_class]


@dataclass
class RunLog:
    file: str = ""
    run_started: dt.datetime | None = None
    paddle_version: str = ""
    atol: str = ""
    rtol: str = ""
    test_cpu: bool | None = None
    gpus: set[str] = field(default_factory=set)
    cases: int = 0
    unfinished: int = 0  # a case begun and never ended (the worker died there)
    by_config: dict[str, tuple[str, int, int | None, str]] = field(default_factory=dict)  # outcome, line, ms, when


@dataclass
class RunDirectory:
    root: Path
    vocabulary: str  # 2025 | 2026 | mixed | unknown (only classes both share)
    files: list[ClassFile]
    configs: dict[str, RunConfig]
    malformed: list[MalformedLine]
    log: RunLog
    checkpointed: int = 0
    unclassified: int = 0  # in checkpoint.txt, in no class file
    not_read: list[str] = field(default_factory=list)  # api_config_*.txt of a class neither vocabulary has

    def per_class(self) -> dict[str, dict[str, int]]:
        """Per 2026 class: lines read, distinct configs found in it, configs whose final class it is."""
        counts: dict[str, dict[str, int]] = {}
        for item in self.files:
            entry = counts.setdefault(item.result_class, {"lines": 0, "found": 0, "final": 0})
            entry["lines"] += item.lines
        for run_config in self.configs.values():
            for name in run_config.classes:
                counts[name]["found"] += 1
            counts[run_config.result_class]["final"] += 1
        order = {name: i for i, name in enumerate(CLASS_PRECEDENCE)}
        return dict(sorted(counts.items(), key=lambda kv: order.get(kv[0], len(order))))

    @property
    def in_two_classes(self) -> list[RunConfig]:
        return [c for c in self.configs.values() if len(c.classes) > 1]


def _read_lines(path: Path) -> list[str]:
    # newline="" + splitlines: a file without a final newline never glues its last line to anything.
    with open(path, encoding="utf-8", errors="strict", newline="") as fh:
        return fh.read().splitlines()


def _read_class_file(path: Path, rel: str, item: ClassFile, found: dict, malformed: list) -> None:
    seen: set[str] = set()
    for lineno, raw in enumerate(_read_lines(path), 1):
        line = raw.strip()
        if not line:
            continue
        api, error = check_config_line(line)
        if error:
            malformed.append(MalformedLine(rel, lineno, error, line))
            continue
        item.lines += 1
        if line in seen:
            continue
        seen.add(line)
        found.setdefault(line, []).append((item.result_class, rel, lineno, api, item.written_class))
    item.configs = len(seen)


def _final_configs(found: dict) -> dict[str, RunConfig]:
    order = {name: i for i, name in enumerate(CLASS_PRECEDENCE)}
    configs = {}
    for config, places in found.items():
        places = sorted(places, key=lambda p: (order[p[0]], p[1], p[2]))
        classes = list(dict.fromkeys(p[0] for p in places))
        result_class, rel, lineno, api, written = places[0]
        configs[config] = RunConfig(config=config, api=api, result_class=result_class, classes=classes,
                                    file=rel, line=lineno, written_class=written)
    return configs


def _vocabulary(files: list[ClassFile]) -> str:
    seen = {f.vocabulary for f in files} - {"both"}
    if len(seen) > 1:
        return "mixed"
    return seen.pop() if seen else "unknown"


def read_run_dir(root: Path | str) -> RunDirectory:
    """Every class file, the checkpoint and the log of one run directory; never raises on a bad line
    (it is in `malformed` with file:line), raises FileNotFoundError / UnicodeDecodeError on unreadable input."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"run directory {root} does not exist")
    files, malformed, not_read = [], [], []
    found: dict[str, list] = {}
    for path in sorted(p for p in root.iterdir() if p.is_file() and p.name.startswith(CLASS_FILE_PREFIX)):
        known = class_of_file(path.name)
        if known is None:
            not_read.append(path.name)
            continue
        item = ClassFile(rel=path.name, written_class=known[0], result_class=canonical_class(known[0]),
                         vocabulary=known[1])
        _read_class_file(path, path.name, item, found, malformed)
        files.append(item)
    configs = _final_configs(found)
    log = read_run_log(root / LOG_NAME, malformed) if (root / LOG_NAME).is_file() else RunLog()
    for config, (outcome, line, ms, when) in log.by_config.items():
        if config in configs:
            item = configs[config]
            item.log_outcome, item.log_line, item.duration_ms, item.started = outcome, line, ms, when
    run = RunDirectory(root=root, vocabulary=_vocabulary(files), files=files, configs=configs,
                       malformed=malformed, log=log, not_read=not_read)
    if (root / CHECKPOINT).is_file():
        checkpointed = {line.strip() for line in _read_lines(root / CHECKPOINT) if line.strip()}
        run.checkpointed = len(checkpointed)
        run.unclassified = len(checkpointed - set(configs))
    return run


def _when(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def _begin_fields(log: RunLog, rest: str) -> str:
    """The fields after a case's id: its time, `Paddle v`, `GPU n`, …; returns the time as printed."""
    when = ""
    for part in (p.strip() for p in rest.split("|")):
        if _DATE_FIELD_RE.match(part):
            when = part
        elif part.startswith("Paddle ") and not log.paddle_version:
            log.paddle_version = part.split(" ", 1)[1]
        elif part.startswith("GPU "):
            log.gpus.add(part.split(" ", 1)[1])
    return when


def _header_line(log: RunLog, line: str) -> bool:
    """The run's own header lines (start, options); True when the line was one."""
    run = _RUN_BEGIN_RE.match(line)
    if run:
        log.run_started = log.run_started or _when(run.group("when"))
        log.paddle_version = log.paddle_version or run.group("paddle") or ""
        return True
    option = _OPTION_RE.match(line)
    if option:
        name, value = option.group("name"), option.group("value")
        if name == "test_cpu":
            log.test_cpu = value == "true"
        elif name in ("atol", "rtol"):
            setattr(log, name, value)
        return True
    return False


def read_run_log(path: Path, malformed: list[MalformedLine]) -> RunLog:
    """Per config, the outcome of its case: 2026 markers (begin, config, end) or 2025 `test begin` lines."""
    log = RunLog(file=path.name)
    lines = _read_lines(path)
    open_case: tuple[str, int, str, str] | None = None  # id, line, config, when
    lineno = 0
    while lineno < len(lines):
        line = lines[lineno]
        lineno += 1
        if _header_line(log, line):
            continue
        begin = _CASE_BEGIN_RE.match(line)
        if begin:
            if open_case:
                log.unfinished += 1
            config = lines[lineno].strip() if lineno < len(lines) else ""
            if case_id(config) != begin.group("id"):
                malformed.append(MalformedLine(log.file, lineno, "a case begin not followed by its config "
                                               f"(the next line's id is {case_id(config)})", line))
                open_case = None
                continue
            open_case = (begin.group("id"), lineno, config, _begin_fields(log, begin.group("rest")))
            log.cases += 1
            lineno += 1
            continue
        end = _CASE_END_RE.match(line)
        if end:
            if not open_case or open_case[0] != end.group("id"):
                malformed.append(MalformedLine(log.file, lineno, "a case end without its case begin", line))
                continue
            ms = int(end.group("ms")) if end.group("ms") else None
            log.by_config[open_case[2]] = (end.group("outcome"), open_case[1], ms, open_case[3])
            open_case = None
            continue
        old = _BEGIN_2025_RE.match(line)
        if old:
            log.cases += 1
            # Its `GPU <id>` names the worker's slot, printed by CPU runs too: not the device tested.
            log.run_started = log.run_started or _when(old.group("when"))
            log.by_config.setdefault(old.group("config").strip(), ("", lineno, None, old.group("when")))
    if open_case:
        log.unfinished += 1
    return log
