"""Persistent worker processes that run configs in isolation (no Django here).

Each worker is a separate Python process that imports paddle and torch once, then runs
configs one after another through ``apitester.readings.run_with_readings`` (``execute.run_config``, with the
stability and closer readings of a config that is not exact when the pool was asked for them).  The parent never
runs paddle itself, so what a config does to its process stays in that process:

* a config that kills its worker (segfault, abort, illegal instruction, ``os._exit``) is
  retried once in a fresh worker: ``crash`` when it dies again, ``flaky_crash`` (naming the
  first death) when the retry gives a verdict.  Real Paddle CPU builds do this: a broadcast
  ``paddle.maximum`` config was seen to die with SIGILL once and pass on the next try;
* a config that runs past its time budget (base + per-element, capped) is ``timeout`` and its
  worker is killed and replaced;
* a config whose estimated memory exceeds the worker's budget is ``skipped_too_large``
  without running;
* each CPU worker runs under a hard address-space limit (RLIMIT_AS): its own size once paddle
  and torch are imported and warmed up, plus ``ADDRESS_SPACE_SLACK``, plus ``HARD_LIMIT_FACTOR``
  × the memory budget (capped by the memory available, shared out among the workers).
  A config that allocates past it fails inside its worker (MemoryError, Paddle's
  ResourceExhausted, Torch's "can't allocate memory", or death by std::bad_alloc): it becomes
  that config's ``crash`` verdict, the worker is replaced, and the host keeps its memory;
* a worker that does not become ready within ``startup_timeout`` (e.g. one that hangs while
  importing) is killed and replaced; a crash retry pinned to it becomes ``crash`` with that reason.

Results are yielded as they finish.  The protocol is JSON lines over two dedicated pipes
(not stdin/stdout, which paddle and glog write to freely).

Each worker gets ``threads_per_worker`` threads (default ``cores // workers``, so N workers don't oversubscribe;
a run pins its count: TestRun.threads): the OMP/MKL env before the imports, then torch.set_num_threads and
paddle's core.set_num_threads (apitester.provenance.pin_threads). Every verdict carries the worker's provenance
(builds, threads, CPU capability, host), read once when the worker starts.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Iterator, TypeVar

from .builds import build_info
from .engine.compare import Verdict
from .paddle_flags import read_flags
from .provenance import pin_threads, provenance, thread_env
from .vocab import RAISED, Device, Status

_REPO_ROOT = Path(__file__).resolve().parents[1]

T = TypeVar("T")

# Pool-made verdict statuses (apitester.vocab names every status).
CRASH = Status.CRASH
FLAKY_CRASH = Status.FLAKY_CRASH
TIMEOUT = Status.TIMEOUT
SKIPPED_TOO_LARGE = Status.SKIPPED_TOO_LARGE

# The memory model (the one place it is defined): peak memory while a config runs is this many
# live copies of its input bytes (``inputs.estimate_bytes``): the numpy source, the paddle tensor,
# the torch tensor, and on the backward pass a gradient per side, plus outputs of the same order.
MEMORY_FACTOR = 6

# What a worker may map beyond its size after start-up, on top of the memory budget.  Measured on
# paddle 3.3.1 (CPU) + torch 2.13.0: VmSize is 1.1 GiB after the imports and 1.26-1.31 GiB after
# the warm-up (1-2 threads); running one small config of each of 66 CPU-task APIs in one worker
# left it at 1.6 GiB (kernels loaded on first use, per-thread malloc arenas).  The limit counts
# virtual memory, not RSS, so this slack covers those mappings and allocator reservations, and the domain values
# a worker keeps for its next configs (at most inputs.REUSED_VALUES_BYTES, 64 MiB).
ADDRESS_SPACE_SLACK = 512 << 20

# The hard limit lets a config use this many times the memory budget: the budget is checked against
# an estimate (MEMORY_FACTOR × input bytes) that runs low for ops with large outputs or workspaces.
# Measured: conv1d(Tensor([16, 64, 25500]) -> 128 channels) and conv2d_transpose(Tensor([263, 256, 14,
# 14])) need at least 3.7x their estimate (they passed unlimited and ran out under a limit of 1x a
# 2 GiB budget); deform_conv2d was seen at ~6 GB RSS against a 1.9 GB estimate.
HARD_LIMIT_FACTOR = 3

# How an allocation failure under the limit shows in a verdict message (numpy/Python, Paddle, Torch).
_OUT_OF_MEMORY = ("MemoryError", "ResourceExhausted", "can't allocate memory", "Cannot allocate memory",
                  "std::bad_alloc", "Out of memory", "out of memory")


class PoolError(RuntimeError):
    """The pool itself cannot work (e.g. workers die before they are ready)."""


@dataclass(frozen=True)
class TimeBudget:
    """Seconds a config may take: ``base + per_million_elements × Mi elements``, capped at ``maximum``."""

    base: float = 60.0
    per_million_elements: float = 5.0
    maximum: float = 900.0

    def for_elements(self, elements: int) -> float:
        # An absurd shape (10**320 elements) has no float; any count past _HUGE_ELEMENTS gets the cap anyway.
        millions = min(int(elements), _HUGE_ELEMENTS) / 1e6
        return min(self.maximum, self.base + self.per_million_elements * millions)


# Past this many elements every budget is at its cap and every estimate over any budget; counts are Python
# ints (exact for any shape), only clamped to this before they meet a float.
_HUGE_ELEMENTS = 10**18


@dataclass
class PoolResult:
    key: Any
    config: str
    verdict: dict  # Verdict.to_dict() of the engine, or a pool-made verdict of the same shape
    seconds: float  # in-worker execution time (0 for configs that never ran)
    attempts: int = 1
    worker_pid: int | None = None
    # The build that produced the verdict, as its worker reported it when ready
    # ({"paddle_version", "paddle_commit", "torch_version", ...}); empty for verdicts made without a worker.
    build: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        return self.verdict.get("status", "")


# The share of the memory available when a pool starts that its workers' budgets add up to; the rest is left to the
# host (the web server, the database, the parent process) and to the estimate running low (HARD_LIMIT_FACTOR).
MEMORY_SHARE = 0.6


def _available_memory() -> int:
    """Bytes of memory available now: /proc/meminfo's MemAvailable, else the free physical pages
    (os.sysconf), else 8 GiB."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return 8 << 30


def default_memory_budget(workers: int, available: int | None = None) -> int:
    """Bytes per worker: MEMORY_SHARE of the memory available (now, unless given), shared out among the workers.

    No fixed cap: on a 24 GiB host with 19.5 GiB available, two workers get 5.85 GiB each, so a config estimated
    at 2.5 GiB runs (a fixed 2 GiB made such ``linear`` configs ``skipped_too_large``)."""
    available = _available_memory() if available is None else available
    return int(available * MEMORY_SHARE / max(1, workers))


def describe_memory_budget(budget: int, workers: int, derived: bool, available: int | None = None) -> str:
    """How the pool's budget came about, for the verdicts and the logs that state it."""
    if not derived:
        return f"{describe_mib(budget)} per worker, as set"
    available = _available_memory() if available is None else available
    return (f"{describe_mib(budget)} per worker: {MEMORY_SHARE:.0%} of the {describe_mib(available)} available "
            f"shared by {max(1, workers)} worker{'s' if workers > 1 else ''}")


def address_space_allowance(memory_budget: int, workers: int) -> int:
    """Bytes a worker may map beyond its size after start-up: the slack plus HARD_LIMIT_FACTOR × the
    budget, but never more than 90 % of the memory available now shared out among the workers, so
    the workers together cannot take the host's memory."""
    share = int(_available_memory() * 0.9 / max(1, workers))
    return ADDRESS_SPACE_SLACK + min(HARD_LIMIT_FACTOR * memory_budget, share)


def config_elements(config: str) -> int:
    """Total elements of the config's tensors (0 when it doesn't parse: the engine will say why)."""
    from .config import parse_config

    try:
        return sum(math.prod(t.shape) for t in parse_config(config).tensors())
    except Exception:
        return 0


def dispatch_order(jobs: Iterable[T], size_of: Callable[[T], int],
                   group_of: Callable[[T], Hashable] | None = None) -> list[T]:
    """The order jobs are handed to workers.

    Without groups: largest first (elements as a proxy for time), so the slow configs don't form a tail
    at the end where one worker is busy and the others idle.

    With groups (the runner groups a run's configs by task): first each group's smallest job, smallest
    of those first, so every task has a first verdict after a short while instead of the heavy configs
    of a few tasks taking the first hours; then the rest, largest first, for the makespan. Ties keep the
    input order, so the order is deterministic.
    """
    sized = [(size_of(job), index, job) for index, job in enumerate(jobs)]
    if group_of is None:
        return [job for _, _, job in sorted(sized, key=lambda item: (-item[0], item[1]))]
    first_of_group: dict[Hashable, tuple[int, int, T]] = {}
    for item in sized:
        group = group_of(item[2])
        if group not in first_of_group or item[0] < first_of_group[group][0]:
            first_of_group[group] = item
    firsts = {index for _, index, _ in first_of_group.values()}
    phase_one = sorted(first_of_group.values(), key=lambda item: (item[0], item[1]))
    phase_two = sorted((item for item in sized if item[1] not in firsts), key=lambda item: (-item[0], item[1]))
    return [job for _, _, job in phase_one + phase_two]


def estimate_bytes(config: str) -> int:
    """Peak memory estimate for running a config: its input bytes (the engine's estimate) × copies alive."""
    from .config import parse_config
    from .inputs import estimate_bytes as input_bytes

    try:
        call = parse_config(config)
    except Exception:
        return 0  # the engine reports a bad config itself
    return MEMORY_FACTOR * int(input_bytes(call))


def describe_mib(nbytes: int) -> str:
    """Bytes as MiB for a message, in integer arithmetic: exact for any size, short for absurd ones
    ("12 MiB", "3.81e+314 MiB"), never an OverflowError."""
    mib = int(nbytes) >> 20
    digits = str(mib)
    if len(digits) <= 15:
        return f"{mib} MiB"
    return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1} MiB"


def _pool_verdict(status: str, message: str, **extra) -> dict:
    """A verdict the pool makes itself, in the engine's Verdict.to_dict() shape."""
    verdict = Verdict(status, message=message).to_dict()
    verdict.update(extra)
    return verdict


def _describe_exit(returncode: int | None) -> tuple[str, str]:
    """('SIGSEGV', 'killed by SIGSEGV') or ('exit 3', 'exited with code 3')."""
    if returncode is None:
        return "unknown", "died"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return name, f"killed by {name}"
    return f"exit {returncode}", f"exited with code {returncode}"


# ------------------------------------------------------------------------------- the parent


@dataclass
class _Job:
    key: Any
    config: str
    attempt: int = 1
    first_death: str | None = None  # e.g. "SIGILL" after the first attempt killed its worker
    first_death_detail: str = ""
    worker: Any = None  # a retry is pinned to the fresh worker spawned for it


@dataclass
class _Worker:
    proc: subprocess.Popen
    to_worker: Any  # binary file object (write end of the job pipe)
    from_worker: int  # fd (read end of the result pipe)
    stderr_path: str
    ready: bool = False
    info: dict = field(default_factory=dict)
    buffer: bytes = b""
    job: _Job | None = None
    deadline: float = math.inf
    started: float = 0.0
    retiring: bool = False  # ran out of memory: it exits after answering and takes no new job

    def stderr_tail(self, lines: int = 3) -> str:
        try:
            with open(self.stderr_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 4000))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        kept = [line for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(kept)


class WorkerPool:
    """``with WorkerPool(2) as pool: for result in pool.run([(key, config), ...]): ...``"""

    def __init__(
        self,
        workers: int | None = None,
        *,
        threads_per_worker: int | None = None,
        memory_budget: int | None = None,
        time_budget: TimeBudget | None = None,
        device: Device | str = Device.CPU,
        atol: float = 1e-2,
        rtol: float = 1e-2,
        seed: int = 0,
        env: dict[str, str] | None = None,
        startup_timeout: float = 300.0,
        python: str | None = None,
        address_space_limit: bool = True,
        paddle_flags: dict[str, str] | None = None,
        readings_per_group: int = 0,
        readings: bool = False,
    ):
        self.workers = max(1, workers or os.cpu_count() or 1)
        cores = os.cpu_count() or 1
        self.threads_per_worker = threads_per_worker or max(1, cores // self.workers)
        available = _available_memory()
        self.memory_budget = memory_budget or default_memory_budget(self.workers, available)
        # Stated in every skipped_too_large verdict: the budget, and whether it was set or derived from the host.
        self.memory_budget_origin = describe_memory_budget(self.memory_budget, self.workers, not memory_budget,
                                                           available)
        self.time_budget = time_budget or TimeBudget()
        self.device = device
        self.atol, self.rtol, self.seed = atol, rtol, seed
        self.extra_env = dict(env or {})
        # Paddle flags (apitester.paddle_flags): in each worker's environment before it imports Paddle, which reads
        # FLAGS_* from there; the worker reports the values paddle.get_flags then gives (info["paddle_flags"]).
        self.paddle_flags = dict(sorted((paddle_flags or {}).items()))
        # The readings of a config that is not exact (apitester.readings), only when asked for (``readings``: a run
        # started with --readings; issue #43), for at most this many configs of each API x dtypes group per worker
        # and per ``readings_token`` (a run: set both before each run; 0 = every config).
        self.readings = readings
        self.readings_per_group = readings_per_group
        # The Torch result cache's directory and bound (apitester.engine.torch_cache; None: off), per run like the readings:
        # a release matrix's lanes share Torch's results across Paddle builds.
        self.torch_cache: dict | None = None
        self.readings_token = ""
        self.startup_timeout = startup_timeout
        # The interpreter of the Paddle environment the workers run in (a release lane); default: this one.
        self.python = python or sys.executable
        # RLIMIT_AS breaks the CUDA driver's large virtual reservations: only CPU workers get it.
        self.address_space_limit = address_space_limit and device == Device.CPU
        self.address_space_allowance = address_space_allowance(self.memory_budget, self.workers)
        self._workers: list[_Worker] = []
        self._selector = selectors.DefaultSelector()
        self._tmpdir = tempfile.TemporaryDirectory(prefix="apitester-pool-")
        self._spawned = 0
        self._startup_failures = 0
        self.info: dict = {}  # the first ready worker's versions / capabilities

    # -- lifecycle

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self) -> None:
        while len(self._workers) < self.workers:
            self._spawn()

    def close(self) -> None:
        for worker in list(self._workers):
            self._stop(worker, kill=worker.job is not None)
        self._workers.clear()
        self._selector.close()
        self._tmpdir.cleanup()

    def _worker_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(thread_env(self.threads_per_worker))
        # The worker imports the same code (and test-only spec modules) as this process.
        paths = [str(_REPO_ROOT), *[p for p in sys.path if p]]
        # (abspath, not realpath: every venv python is a symlink to the same base interpreter)
        if os.path.abspath(self.python) != os.path.abspath(sys.executable):
            # Another env's interpreter: its own paddle/torch/numpy must win, so none of this process's
            # installed packages (its prefix) go on the path — only the repo and test-only directories.
            mine = tuple(os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
            paths = [p for p in paths if not os.path.realpath(p).startswith(mine)]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        env.setdefault("GLOG_minloglevel", "2")
        env.update(self.extra_env)
        env.update(self.paddle_flags)
        return env

    def _spawn(self) -> _Worker:
        job_read, job_write = os.pipe()
        result_read, result_write = os.pipe()
        self._spawned += 1
        stderr_path = os.path.join(self._tmpdir.name, f"worker-{self._spawned}.log")
        with open(stderr_path, "wb") as stderr:
            proc = subprocess.Popen(
                [self.python, "-m", "apitester.pool", "--worker", str(job_read), str(result_write),
                 str(self.threads_per_worker),
                 str(self.address_space_allowance if self.address_space_limit else 0),
                 json.dumps(sorted(self.paddle_flags))],
                stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, env=self._worker_env(),
                pass_fds=(job_read, result_write), cwd=str(_REPO_ROOT),
            )
        os.close(job_read)
        os.close(result_write)
        worker = _Worker(proc=proc, to_worker=os.fdopen(job_write, "wb", buffering=0), from_worker=result_read,
                         stderr_path=stderr_path, started=time.monotonic())
        self._workers.append(worker)
        self._selector.register(result_read, selectors.EVENT_READ, worker)
        return worker

    def _stop(self, worker: _Worker, *, kill: bool) -> None:
        try:
            self._selector.unregister(worker.from_worker)
        except (KeyError, ValueError):
            pass
        try:
            worker.to_worker.close()  # EOF on its job pipe: an idle worker exits by itself
        except OSError:
            pass
        if kill and worker.proc.poll() is None:
            worker.proc.kill()
        try:
            worker.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.proc.kill()
            worker.proc.wait()
        os.close(worker.from_worker)
        if worker in self._workers:
            self._workers.remove(worker)

    @property
    def busy(self) -> bool:
        """Some worker holds a job (a config in flight)."""
        return any(w.job for w in self._workers)

    def replace_exited(self) -> int:
        """Replace the workers that exited while idle (killed, out of memory between runs), before any job is sent:
        a job sent to one would read as that config's crash. Returns how many were replaced."""
        exited = [w for w in self._workers if w.job is None and w.proc.poll() is not None]
        for worker in exited:
            self._stop(worker, kill=True)
            self._spawn()
        return len(exited)

    def wait_ready(self) -> dict:
        """Block until one worker is ready; returns its info (versions, cuda)."""
        self.start()
        deadline = time.monotonic() + self.startup_timeout
        while not any(w.ready for w in self._workers):
            if time.monotonic() > deadline:
                raise PoolError("no worker became ready in time")
            for _ in self._poll(1.0):
                pass  # no job is in flight, so nothing can be yielded here
        return self.info

    @property
    def build(self) -> dict:
        """The build of this pool's workers (from the first ready worker; {} before one is ready)."""
        return _build_of(self.info)

    # -- running

    def run(self, jobs: Iterable[tuple[Any, str]], *, should_stop=None,
            group_of: Callable[[Any], Hashable] | None = None,
            more: Callable[[], Iterable[tuple[Any, str]]] | None = None) -> Iterator[PoolResult]:
        """Run every (key, config); yield a PoolResult per config as it finishes (any order).

        ``should_stop()`` is asked at least every few seconds (also while a slow config runs);
        when it returns True the run stops and configs in flight are abandoned (close() kills them).
        ``group_of(key)`` (a task, say) turns on first-verdicts-first dispatch: see ``dispatch_order``.
        ``more()`` is asked for the next batch of jobs once every job so far has been sent and a worker is free
        (an empty batch: there is no more), so a caller feeding work in batches keeps every worker busy across
        the batches' ends; each batch is dispatched in its own ``dispatch_order``.
        """
        self.start()
        pending: deque[_Job] = deque()
        yield from self._admit(jobs, pending, group_of)

        def top_up() -> Iterator[PoolResult]:
            """Every free worker gets its next job (from ``more()`` once ``pending`` is empty)."""
            nonlocal more
            while more is not None and not pending and (self._free_worker() or not self.busy):
                if not (yield from self._admit(more(), pending, group_of)):
                    more = None  # an empty batch: nothing more to come
                # (a batch of only too-large configs was answered at once: ask for the next)
            yield from self._send(pending)

        while True:
            if should_stop is not None and should_stop():
                return
            yield from top_up()
            if not (pending or self.busy):
                return
            now = time.monotonic()
            deadlines = [w.deadline for w in self._workers if w.job]
            wait = max(0.0, min(deadlines) - now) if deadlines else 1.0
            finished = [*self._poll(min(wait, 5.0), pending), *self._expire(pending), *self._expire_startup(pending)]
            if finished:
                # The freed workers' next jobs go out before the caller sees these results: the caller handles each
                # one (the runner writes it to the database) before it resumes this loop, and a worker whose next
                # job waited for that sat idle.
                finished += list(top_up())
            yield from finished

    def _send(self, pending: deque) -> Iterator[PoolResult]:
        """Send each free worker the first pending job it may take (a retried job only to its own worker); a job
        that can't be sent is answered here."""
        for worker in self._workers:
            if self._can_take(worker) and pending:
                job = next((j for j in pending if j.worker is None or j.worker is worker), None)
                if job is not None:
                    pending.remove(job)
                    unsent = self._dispatch(worker, job)
                    if unsent is not None:
                        yield unsent

    def _admit(self, jobs: Iterable[tuple[Any, str]], pending: deque, group_of) -> Iterator[PoolResult]:
        """Size each job: a too-large config's verdict is yielded at once, the rest join ``pending`` in
        dispatch order. Returns how many jobs there were."""
        admitted = []
        count = 0
        for key, config in jobs:
            count += 1
            try:
                too_large = self._too_large(key, config)
            except Exception as exc:  # one config's sizing must not stop the run: it becomes that config's verdict
                too_large = self._runner_error(_Job(key, config), "sizing the config", exc)
            if too_large is not None:
                yield too_large
            else:
                admitted.append(_Job(key, config))
        pending.extend(dispatch_order(admitted, lambda job: config_elements(job.config),
                                      None if group_of is None else (lambda job: group_of(job.key))))
        return count

    def _free_worker(self) -> bool:
        return any(self._can_take(w) for w in self._workers)

    @staticmethod
    def _can_take(worker: _Worker) -> bool:
        return worker.ready and not worker.retiring and worker.job is None

    def _too_large(self, key: Any, config: str) -> PoolResult | None:
        """The config's skipped_too_large verdict when its estimate exceeds the budget, else None."""
        need = estimate_bytes(config)  # a Python int: exact even for a 10**320-element shape
        if need <= self.memory_budget:
            return None
        return PoolResult(key, config, _pool_verdict(
            SKIPPED_TOO_LARGE,
            f"estimated {describe_mib(need)} exceeds the worker budget of {self.memory_budget_origin}",
            estimated_bytes=need), 0.0, attempts=0, build=dict(self.build))

    def _runner_error(self, job: _Job, doing: str, exc: BaseException) -> PoolResult:
        """A config the pool itself failed on (a gap in the runner, not Paddle's behaviour): ``unsupported``."""
        return PoolResult(job.key, job.config, _pool_verdict(
            "unsupported", f"runner error while {doing}: {type(exc).__name__}: {str(exc)[:300]}", engine_error=True),
            0.0, attempts=job.attempt, build=dict(self.build))

    def _dispatch(self, worker: _Worker, job: _Job) -> PoolResult | None:
        """Send the job to the worker; a config that can't even be sent gets its verdict here (returned)."""
        try:
            deadline = time.monotonic() + self.time_budget.for_elements(config_elements(job.config))
            line = (json.dumps({"config": job.config, "device": self.device, "atol": self.atol, "rtol": self.rtol,
                                "seed": self.seed,
                                "readings": [self.readings_per_group, self.readings_token] if self.readings else None,
                                "torch_cache": self.torch_cache})
                    + "\n").encode()
        except Exception as exc:
            return self._runner_error(job, "sending the config to a worker", exc)
        worker.job, worker.deadline = job, deadline
        try:
            worker.to_worker.write(line)
        except (BrokenPipeError, OSError):
            pass  # it died between jobs; the EOF on its result pipe is handled as a death
        return None

    def _poll(self, timeout: float, pending: deque | None = None) -> Iterator[PoolResult]:
        for selkey, _ in self._selector.select(timeout):
            worker: _Worker = selkey.data
            chunk = os.read(worker.from_worker, 1 << 16)
            if not chunk:
                yield from self._died(worker, pending)
                continue
            worker.buffer += chunk
            while b"\n" in worker.buffer:
                line, worker.buffer = worker.buffer.split(b"\n", 1)
                try:
                    result = self._message(worker, line)
                except Exception as exc:
                    # An answer the parent can't read: the job's verdict says so, and a worker that speaks
                    # garbage is not trusted with another job (replaced like a dead one).
                    job, worker.job, worker.deadline = worker.job, None, math.inf
                    if job is not None:
                        yield self._runner_error(job, "reading the worker's answer", exc)
                    yield from self._died(worker, pending)
                    break
                if result is not None:
                    yield result

    def _message(self, worker: _Worker, line: bytes) -> PoolResult | None:
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError(f"expected a JSON object, got {type(message).__name__}")
        if "ready" in message:
            worker.ready = True
            self._startup_failures = 0
            if not self.info:
                self.info = message["ready"]
            worker.info = message["ready"]
            return None
        verdict, seconds = message["verdict"], float(message["seconds"])
        if not isinstance(verdict, dict) or not isinstance(verdict.get("status"), str):
            raise ValueError("the verdict is not an object with a status")
        # read back by the engine's own schema (Verdict.from_dict); the pool's own keys a worker adds beside it (a
        # crash answer's "signal") are kept
        verdict = {**verdict, **Verdict.from_dict(verdict).to_dict()}
        if worker.job is None:
            raise ValueError("a verdict from a worker that has no job")
        job, worker.job, worker.deadline = worker.job, None, math.inf
        if verdict.get("status") == CRASH:  # only the worker's out-of-memory answer; it exits next
            worker.retiring = True
        if job.first_death and verdict.get("status") != CRASH:  # (a retry that ran out of memory stays crash)
            retry_status = verdict.get("status")
            verdict = dict(verdict, status=FLAKY_CRASH, retry_status=retry_status, signal=job.first_death,
                           message=f"worker {job.first_death_detail} on the first try; the retry gave "
                                   f"{retry_status}" + (f": {verdict.get('message')}" if verdict.get("message") else ""))
        return PoolResult(job.key, job.config, verdict, seconds, attempts=job.attempt,
                          worker_pid=worker.proc.pid, build=_build_of(worker.info))

    def _died(self, worker: _Worker, pending: deque | None) -> Iterator[PoolResult]:
        job = worker.job
        was_ready = worker.ready
        tail = worker.stderr_tail()
        self._stop(worker, kill=True)
        name, detail = _describe_exit(worker.proc.returncode)
        if not was_ready:
            self._startup_failures += 1
            if self._startup_failures >= 3:
                raise PoolError(f"workers die before they are ready ({detail}): {tail}")
        fresh = self._spawn()
        for waiting in pending or ():
            if waiting.worker is worker:
                waiting.worker = fresh  # its fresh worker died before starting it
        if job is None:
            return
        if job.attempt == 1 and pending is not None:
            # Retry once in a fresh process (no state left by earlier configs), ahead of everything else.
            pending.appendleft(_Job(job.key, job.config, attempt=2, first_death=name, first_death_detail=detail,
                                    worker=fresh))
            return
        first = job.first_death or name
        message = f"worker {detail} twice" if job.first_death else f"worker {detail}"
        if tail:
            message += f" (stderr: {tail[-300:]})"
        yield PoolResult(job.key, job.config, _pool_verdict(CRASH, message, signal=first), 0.0,
                         attempts=job.attempt, worker_pid=worker.proc.pid, build=dict(self.build))

    def _expire(self, pending: deque) -> Iterator[PoolResult]:
        now = time.monotonic()
        for worker in list(self._workers):
            if worker.job is not None and now >= worker.deadline:
                job = worker.job
                budget = self.time_budget.for_elements(config_elements(job.config))
                pid = worker.proc.pid
                self._stop(worker, kill=True)
                self._spawn()
                yield PoolResult(job.key, job.config, _pool_verdict(
                    TIMEOUT, f"no verdict within the {budget:.0f} s budget; worker replaced", budget_seconds=budget),
                    budget, attempts=job.attempt, worker_pid=pid, build=dict(self.build))

    def _expire_startup(self, pending: deque) -> Iterator[PoolResult]:
        """Kill workers that are not ready within startup_timeout (e.g. hung while importing)."""
        now = time.monotonic()
        for worker in list(self._workers):
            if worker.ready or now - worker.started < self.startup_timeout:
                continue
            tail = worker.stderr_tail()
            self._stop(worker, kill=True)
            self._startup_failures += 1
            if self._startup_failures >= 3:
                raise PoolError(f"workers do not become ready within {self.startup_timeout:g} s: {tail}")
            fresh = self._spawn()
            for job in [j for j in pending if j.worker is worker]:
                if job.first_death:  # a crash retry was pinned to the hung worker
                    pending.remove(job)
                    yield PoolResult(job.key, job.config, _pool_verdict(
                        CRASH, f"worker {job.first_death_detail} on the first try; the fresh worker for the retry "
                               f"did not become ready within {self.startup_timeout:g} s, so no retry ran",
                        signal=job.first_death, startup_timeout=self.startup_timeout), 0.0, attempts=job.attempt)
                else:
                    job.worker = fresh


# Started pools kept idle between runs (warm_pool), least recently used first. A release matrix runs lane after
# lane, release after release, and a fresh pool pays each worker's start: importing paddle and torch and the
# warm-up calls (2-6 s a worker), and ~1 s for the workers to exit.
_IDLE_POOLS: "OrderedDict[str, WorkerPool]" = OrderedDict()


@contextmanager
def warm_pool(keep: int, workers: int | None = None, **options) -> Iterator[WorkerPool]:
    """``with warm_pool(keep, workers, python=..., ...) as pool:`` -- a started WorkerPool for these options: an
    idle one an earlier block left, or a new one. On leaving the block the pool stays idle for the next block with
    the same options when none of its workers holds a job (a block left by an exception, or by a stop with configs
    in flight, closes it); at most ``keep`` pools stay idle, the least recently used closed first. ``keep`` 0 is
    ``with WorkerPool(...)``. An idle worker that died meanwhile is replaced like any dead worker."""
    key = repr((workers, sorted(options.items())))
    pool = _IDLE_POOLS.pop(key, None) or WorkerPool(workers, **options)
    left_cleanly = False
    try:
        pool.replace_exited()
        pool.start()
        yield pool
        left_cleanly = True
    finally:
        if left_cleanly and keep > 0 and not pool.busy:
            _IDLE_POOLS[key] = pool
            while len(_IDLE_POOLS) > keep:
                _IDLE_POOLS.popitem(last=False)[1].close()
        else:
            pool.close()


def idle_pools() -> int:
    """How many started pools are kept idle in this process."""
    return len(_IDLE_POOLS)


@atexit.register
def close_idle_pools() -> None:
    """Close every idle pool (their workers also die with this process: the parent-death signal)."""
    while _IDLE_POOLS:
        _IDLE_POOLS.popitem(last=False)[1].close()


def _build_of(info: dict) -> dict:
    """The build a verdict came from: Paddle's version and commit, Torch's, the Paddle flags the worker read
    (only when flags were asked for) and the worker's provenance (apitester.provenance; a pool-made verdict —
    crash, timeout — carries it from here)."""
    return {key: info[key] for key in ("paddle_version", "paddle_commit", "torch_version", "paddle_flags", "provenance")
            if key in (info or {})}


# ------------------------------------------------------------------------------- the worker


def _vm_size() -> int:
    """This process's virtual memory size in bytes (VmSize)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmSize in /proc/self/status")


def _limit_address_space(extra: int) -> dict:
    """RLIMIT_AS = the current size (paddle and torch imported) + ``extra``; returns what was set."""
    import resource

    baseline = _vm_size()
    limit = baseline + extra
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return {"address_space_baseline": baseline, "address_space_limit": limit}


def _out_of_memory(verdict: dict) -> bool:
    """Did the config fail because an allocation failed (under the worker's address-space limit)?"""
    if verdict.get("status") not in RAISED:
        return False
    message = verdict.get("message") or ""
    return any(marker in message for marker in _OUT_OF_MEMORY)




def _set_parent_death_signal() -> None:
    """Die with the parent (kill -9 of the runner must not leave workers behind)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _warm_up(paddle, torch) -> None:
    """One tiny forward+backward per framework: first-use costs (kernel registry, autograd engine,
    allocator) are paid before the worker says ready, not inside the first config's time budget."""
    try:
        x = paddle.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
        (x * x).sum().backward()
        t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (t * t).sum().backward()
    except Exception:
        pass  # a broken framework shows up in the first config's verdict


def _worker_main(job_fd: int, result_fd: int, threads: int, address_space_extra: int = 0,
                 flag_names: list[str] | None = None) -> None:
    _set_parent_death_signal()
    if os.getppid() == 1:
        return
    results = os.fdopen(result_fd, "wb", buffering=0)
    jobs = os.fdopen(job_fd, "rb")

    import paddle
    import torch

    pin_threads(threads)
    from . import specs
    from .engine import torch_cache
    from .readings import Quota, run_with_readings

    specs.all_specs()  # import every spec module now, not inside the first config's budget
    _warm_up(paddle, torch)
    info = {"pid": os.getpid(), **build_info(), "threads": threads, "python": sys.executable,
            "provenance": provenance()}
    if flag_names:  # the values this Paddle read from the environment at import (None: a flag it does not define)
        info["paddle_flags"] = read_flags(paddle, flag_names)
    if address_space_extra:
        info.update(_limit_address_space(address_space_extra))
    results.write((json.dumps({"ready": info}) + "\n").encode())
    quotas: dict[str, Quota] = {}  # per readings token (a run): a new run starts with its quota whole
    for line in jobs:
        request = json.loads(line)
        started = time.perf_counter()
        cache = request.get("torch_cache") or {}
        torch_cache.use(cache.get("dir"), max_bytes=int(cache.get("max_bytes") or 2 << 30))
        asked = request.get("readings")  # [per group, token] when the run asked for the readings, else None
        per_group, token = asked or (0, "")
        if token not in quotas:
            quotas.clear()
            quotas[token] = Quota(per_group)
        try:
            verdict = run_with_readings(request["config"], device=request["device"], atol=request["atol"],
                                        rtol=request["rtol"], seed=request["seed"], readings=asked is not None,
                                        quota=quotas[token]).to_dict()
        except Exception as exc:  # run_config never raises by contract; if it does, it's our gap
            verdict = _pool_verdict(Status.UNSUPPORTED, f"engine error: {type(exc).__name__}: {exc}", engine_error=True)
        verdict["provenance"] = info["provenance"]  # read once at start: the same dict every verdict
        seconds = time.perf_counter() - started
        out_of_memory = address_space_extra and _out_of_memory(verdict)
        if out_of_memory:
            # Our limit, not Paddle's or Torch's behaviour: the config needs more memory than the worker
            # may have.  The worker exits after answering (an allocator that failed once may have left
            # state behind) and the pool starts a fresh one.
            verdict = _pool_verdict(CRASH, f"out of memory under the worker's address-space limit of "
                                           f"{info['address_space_limit'] / 2**30:.2f} GiB: "
                                           f"{(verdict.get('message') or '')[:300]}",
                                    signal="MemoryError", first_status=verdict.get("status"))
        results.write((json.dumps({"verdict": verdict, "seconds": seconds}) + "\n").encode())
        if out_of_memory:
            os._exit(0)


if __name__ == "__main__":
    if len(sys.argv) in (5, 6, 7) and sys.argv[1] == "--worker":
        _worker_main(*(int(a) for a in sys.argv[2:6]), *([json.loads(sys.argv[6])] if len(sys.argv) == 7 else []))
    else:
        sys.exit("usage: python -m apitester.pool --worker JOB_FD RESULT_FD THREADS "
                 "[ADDRESS_SPACE_EXTRA_BYTES [FLAG_NAMES_JSON]] (started by WorkerPool)")
