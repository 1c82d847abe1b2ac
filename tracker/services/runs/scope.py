"""What a run covers: the tasks a scope names (checked against the lane) and the Paddle releases it may be run on."""
from __future__ import annotations

from django.db import connection

from apitester.builds import version_key
from apitester.paddle_flags import FlagError, check_flags, parse_flags

from ...models import Task, TaskStatus, TestRun
from ...vocab import Lane, ScopeKind
from ...selectors.board import task_number_span
from ...selectors.envs import env_key, split_key
from ...selectors.runs import advertised_releases
from .. import paddle_envs


# what resolve_scope resolves; a CPU-evidence run's scope is made by services/cpu_evidence.py alone
SCOPE_KINDS = tuple(kind for kind in ScopeKind if kind != ScopeKind.CPU_EVIDENCE)

LANES = (TestRun.Lane.CPU.value, TestRun.Lane.GPU.value)


class RunError(ValueError):
    """A run request that can't be honoured (unknown task, wrong lane, nothing to run)."""


def _lane_kernel(lane: str) -> str:
    return Lane(lane).kernel


def task_number_range() -> tuple[int, int]:
    """The task numbers the database can hold (Task.number's column range on this backend)."""
    lowest, highest = connection.ops.integer_field_range(Task._meta.get_field("number").get_internal_type())
    return max(1, lowest or 0), highest if highest is not None else 2**63 - 1


def board_numbers_text() -> str:
    """The task numbers this board really has, for an error message ("No.1 to No.183"; not the column's range)."""
    span = task_number_span()
    if span is None:
        return "the board has no tasks yet (is it imported?)"
    return f"the board's tasks go from No.{span[0]} to No.{span[1]}"


def resolve_scope(kind: str, *, tasks=None, api: str | None = None, lane: str = Lane.CPU) -> list[Task]:
    """The tasks a scope names, checked against the lane (a CPU task's configs run on the cpu lane)."""
    if lane not in LANES:
        raise RunError(f"unknown lane {lane!r}: use one of {', '.join(LANES)}")
    if kind not in SCOPE_KINDS:
        raise RunError(f"unknown scope {kind!r}: use one of {', '.join(SCOPE_KINDS)}")
    kernel = _lane_kernel(lane)
    if kind in (ScopeKind.TASK, ScopeKind.TASKS):
        numbers = [int(n) for n in (tasks or [])]
        if not numbers:
            raise RunError("name at least one task number")
        lowest, highest = task_number_range()
        out_of_range = [n for n in numbers if not lowest <= n <= highest]
        if out_of_range:
            # The database can't even compare such a number (SQLite: OverflowError): no task has it.
            shown = str(out_of_range[0])
            shown = shown if len(shown) <= 30 else f"{shown[:12]}…({len(shown)} digits)"
            raise RunError(f"no task No.{shown} on the board: {board_numbers_text()}")
        if kind == ScopeKind.TASK and len(numbers) != 1:
            raise RunError("scope 'task' takes exactly one task number")
        found = {t.number: t for t in Task.objects.filter(number__in=numbers)}
        missing = [n for n in numbers if n not in found]
        if missing:
            raise RunError(f"no task No.{', No.'.join(map(str, missing))} on the board: {board_numbers_text()}")
        wrong = [found[n] for n in numbers if found[n].kernel != kernel]
        if wrong:
            raise RunError(
                f"No.{wrong[0].number} is a {wrong[0].kernel} task; its configs run on the "
                f"{wrong[0].lane} lane, not {lane}")
        return [found[n] for n in dict.fromkeys(numbers)]
    if kind == ScopeKind.API:
        if not api:
            raise RunError("name an API, e.g. paddle.clip")
        found = list(Task.objects.filter(api=api, kernel=kernel))
        if not found:
            raise RunError(f"no {kernel} task for {api} on the board")
        return found
    if kind == ScopeKind.ALL:  # every task of the lane's kernel (the first start's re-test)
        return list(Task.objects.filter(kernel=kernel))
    # all_open: every task whose fix isn't completed yet (locked ones too: they still fail).
    return list(Task.objects.filter(kernel=kernel).exclude(status=TaskStatus.COMPLETED))


def known_releases() -> list[str]:
    """Releases some worker can run: this host's envs plus what fresh worker heartbeats advertise (not their envs
    pairing a release with another Torch: those are no release of their own)."""
    advertised = {key for key in advertised_releases() if not split_key(key)[1]}
    return sorted(set(paddle_envs.releases()) | advertised, key=version_key)


def check_torch(release: str, torch: str) -> str:
    """The Torch a run is asked to judge against, normalised ("" = the project's own); RunError (nothing created)
    when it is no Torch number or no worker has an env pairing the release with it."""
    try:
        torch = paddle_envs.normal_torch(torch)
    except paddle_envs.EnvError as exc:
        raise RunError(str(exc)) from None
    if not torch:
        return ""
    key = env_key(release or paddle_envs.main_version(), torch)
    if key not in set(paddle_envs.served_keys()) | set(advertised_releases()):
        try:
            paddle_envs.interpreter_for(release, torch)
        except paddle_envs.EnvError as exc:
            raise RunError(str(exc)) from None
    return torch


def check_release(release: str) -> str:
    """The release a run is asked for, normalised ("" = main env); unknown → RunError naming what exists."""
    release = (release or "").strip()
    if not release:
        return ""
    if release not in known_releases():
        raise RunError(paddle_envs.unknown_release_message(release))
    return release


def parse_releases(value: str) -> list[str]:
    """--releases "all" | "3.0.0,3.3.1" → the releases, oldest first, each checked."""
    value = (value or "").strip()
    if value == "all":
        found = known_releases()
    else:
        found = [part for part in value.replace(" ", ",").split(",") if part]
    if not found:
        raise RunError("name at least one release (e.g. 3.0.0,3.3.1) or 'all'")
    for release in found:
        check_release(release)
    return sorted(dict.fromkeys(found), key=version_key)


def check_paddle_flags(flags, releases: list[str]) -> dict[str, str]:
    """The Paddle flags a run asks for (a ``NAME=VALUE, ...`` string or a dict), checked before anything is
    created or queued: well-formed (apitester.paddle_flags), and defined by the Paddle of every release the run
    covers ("" = the main env's), as that release's own interpreter answers. RunError names what is wrong and
    the release that lacks a flag. {} for none (nothing is asked of any Paddle)."""
    try:
        wanted = parse_flags(flags) if isinstance(flags, str) or flags is None else \
            parse_flags(" ".join(f"{k}={v}" for k, v in dict(flags).items()))
    except FlagError as exc:
        raise RunError(f"{exc}; nothing queued") from None
    if not wanted:
        return {}
    for release in dict.fromkeys(releases or [""]):
        shown = release or paddle_envs.main_version() or "of the main environment"
        try:
            defined = paddle_envs.defined_flags(release, list(wanted))
        except paddle_envs.EnvError as exc:
            raise RunError(f"the Paddle flags can't be checked against Paddle {shown} on this host ({exc}); "
                           "nothing queued") from None
        try:
            wanted = check_flags(wanted, defined, release=shown)
        except FlagError as exc:
            raise RunError(f"{exc}; nothing queued") from None
    return wanted
