"""Storing one config's verdict: the ConfigResult fields of an engine verdict, checked against the run's Paddle
build; a verdict no column can hold is stored as that config's ``unsupported`` with the reason."""
from __future__ import annotations

import math

from django.db import DataError, IntegrityError, transaction

from apitester.engine.compare import FLOAT_FIELDS, Verdict, decode_float, encode_float
from apitester.inputs import Draw
from apitester.paddle_flags import format_flags
from apitester.paddle_flags import matches as flags_match

from ...models import ConfigResult, FailingConfig, TestRun
from ...vocab import CACHE_EVENTS, PHASE_NAMES, Status
from .. import latest, paddle_envs
from ..provenance import provenance_id


def _float(value):
    """Finite float or None (the engine encodes NaN/inf as strings; the message keeps them)."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _seconds(value) -> float:
    """A duration a worker reported: a finite number ≥ 0, else 0 (it is a figure, never a reason to lose the
    verdict)."""
    return max(_float(value) or 0.0, 0.0)


def _figures(value, names: tuple[str, ...], number) -> dict:
    """A verdict's per-phase seconds or cache counts: the known names with a number each, nothing else (a worker's
    dict is a figure, never a reason to lose the verdict)."""
    if not isinstance(value, dict):
        return {}
    kept = {key: number(value[key]) for key in names if key in value}
    return {key: figure for key, figure in kept.items() if figure is not None}


def _diff_map(verdict: Verdict) -> dict | None:
    """The engine's |paddle − torch| grid plus its NaN/inf-mismatch mask, as the task page draws them (NaN and inf
    as the engine's JSON writes them)."""
    if verdict.diff_map is None:
        return None
    return {"values": [[encode_float(v) for v in row] for row in verdict.diff_map], "mask": verdict.diff_map_nonfinite,
            "shape": list(verdict.diff_shape) if verdict.diff_shape is not None else None, "output": verdict.output}


def _layers(verdict: Verdict) -> dict:
    """The strict and adapted layers of an engine verdict as ConfigResult fields.

    A verdict without layers (the runner's crash / timeout, an older engine) is its own strict layer.
    """
    strict = verdict.strict if isinstance(verdict.strict, dict) else {}
    adapted = verdict.adapted if isinstance(verdict.adapted, dict) else {}
    return {
        "strict_status": strict.get("status") or verdict.status or Status.UNSUPPORTED,
        "strict_direction": (strict.get("direction") if strict else verdict.direction) or "",
        "adapted_status": adapted.get("status") or "",
        "adapted_direction": adapted.get("direction") or "",
        "adapted_max_abs": _float(adapted.get("max_abs")),
        "adapted_max_rel": _float(adapted.get("max_rel")),
        "adapted_mismatched": adapted.get("mismatched"),
        "adapted_message": (adapted.get("message") or "")[:5000],
        "adaptations": list(verdict.adaptations or []),
        "evidence": (verdict.evidence or "")[:2000],
        "known_failure": _spec_note(verdict.known_failure),
        "comparison": _spec_note(verdict.comparison),
    }


def _spec_note(note) -> dict | None:
    """The spec's known-failure / comparison entry as stored: short plain values only (a worker sends JSON)."""
    if not isinstance(note, dict):
        return None
    kept = {}
    for key, value in list(note.items())[:10]:
        if isinstance(value, list):
            value = [str(v)[:40] for v in value[:10]]
        elif value is not None:
            value = str(value)[:1000]
        kept[str(key)[:40]] = value
    return kept


class WrongBuild(RuntimeError):
    """A verdict from a Paddle build other than the run's release: never stored."""


def expected_paddle(run: TestRun) -> str:
    return run.release or paddle_envs.main_version()


def check_build(run: TestRun, build: dict) -> None:
    """The verdict's build is the run's: its Paddle release, read with the run's Paddle flags."""
    check_release_build(run, build)
    check_flags_in_effect(run, build)
    check_torch_build(run, build)


def check_torch_build(run: TestRun, build: dict) -> None:
    """A run asking for another Torch stores only verdicts given against it; a run on the project's Torch only those of
    a worker whose Torch is the project's (its main env's pin, every plain env's)."""
    expected = run.torch or paddle_envs.main_torch()
    got = str((build or {}).get("torch_version", "")).split("+")[0]
    if got and got != expected:
        raise WrongBuild(f"run {run.pk} judges against Torch {expected} but the worker runs Torch {got}")


def check_release_build(run: TestRun, build: dict) -> None:
    expected = expected_paddle(run)
    got = (build or {}).get("paddle_version", "")
    if expected and got != expected:
        raise WrongBuild(f"run {run.pk} is for Paddle {expected} but the worker runs Paddle {got or 'unknown'}")


def check_flags_in_effect(run: TestRun, build: dict) -> None:
    """The worker read the run's Paddle flags (``build["paddle_flags"]``: its ``paddle.get_flags`` values), and no
    flag a run without flags did not ask for: a verdict given with other flags is never stored."""
    wanted = run.paddle_flags if isinstance(run.paddle_flags, dict) else {}
    read = (build or {}).get("paddle_flags") or {}
    if (wanted or read) and not (set(read) == set(wanted) and flags_match(wanted, read)):
        raise WrongBuild(f"run {run.pk} runs with Paddle flags {format_flags(wanted) or 'none'} but the worker read "
                         f"{', '.join(f'{k}={v}' for k, v in sorted(read.items())) or 'none'}")


_BIGINT = (-2**63, 2**63 - 1)  # what a BigIntegerField column holds on every backend


def bigint_or_none(value):
    """An integer a BigIntegerField column holds, or None (an absurd shape's element count fits no column)."""
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if _BIGINT[0] <= number <= _BIGINT[1] else None


def _figures_readable(data: dict) -> dict:
    """The verdict with each float figure the engine could not decode ("abc" where seconds go) left out: a figure is
    never a reason to lose the verdict."""
    kept = dict(data)
    for key in FLOAT_FIELDS:
        try:
            decode_float(kept.get(key))
        except (TypeError, ValueError):
            kept.pop(key)
    return kept


def _result_fields(data: dict, seconds) -> dict:
    """ConfigResult fields of one verdict (the engine's, or a pool-made one of the same shape), read with the
    engine's own ``Verdict.from_dict``; what is checked here is what a column holds (finite floats, 64-bit
    integers, lengths)."""
    verdict = Verdict.from_dict(_figures_readable(data))
    message = verdict.message or ""
    extras = []
    for key in ("max_abs", "max_rel"):
        value = getattr(verdict, key)
        if value is not None and not math.isfinite(value):  # the message keeps "nan" / "inf" / "-inf"
            extras.append(f"{key}={encode_float(value)}")
    if verdict.output:
        extras.append(f"output: {verdict.output}")
    if extras:
        message = (message + "\n" if message else "") + "; ".join(extras)
    return dict(
        status=str(verdict.status or Status.UNSUPPORTED)[:30], direction=str(verdict.direction or "")[:10],
        statistical=bool(verdict.statistical), max_abs=_float(verdict.max_abs),
        max_rel=_float(verdict.max_rel), mismatched=bigint_or_none(verdict.mismatched),
        total_elements=bigint_or_none(verdict.total),
        worst_index=list(verdict.worst_index) if verdict.worst_index is not None else None,
        message=str(message)[:5000], seconds=_seconds(seconds),
        framework_seconds=_seconds(verdict.framework_seconds), diff_map=_diff_map(verdict),
        phases=_figures(verdict.phases, PHASE_NAMES, _seconds),
        torch_cache=_figures(verdict.torch_cache, CACHE_EVENTS, bigint_or_none),
        draw=_draw_text(verdict.draw), **_layers(verdict), **_exact_readings(verdict),
    )


def _exact_readings(verdict: Verdict) -> dict:
    """The exact rule's fields of a verdict (the top level reads the strict layer) and the readings of one that is
    not exact; a pool-made verdict (crash, timeout) or an older engine's has none."""
    exact, stable = verdict.exact, verdict.stable
    ulp = bigint_or_none(verdict.max_ulp)
    if ulp is None and isinstance(verdict.max_ulp, int) and verdict.max_ulp > 0:
        ulp = _BIGINT[1]  # a NaN against a float64 number: farther than the column counts
    return {
        "exact": exact if isinstance(exact, bool) else None,
        "max_ulp": ulp,
        "stable": stable if isinstance(stable, bool) else None,
        "nondeterministic": str(verdict.nondeterministic or "")[:10],
        "closer": str(verdict.closer or "")[:20],
        "closer_code": str(verdict.closer_code or "")[:20],
        "closer_output": str(verdict.closer_output or "")[:60],
        "closer_skipped": str(verdict.closer_skipped or "")[:300],
        "paddle_rmse": _float(verdict.paddle_rmse),
        "torch_rmse": _float(verdict.torch_rmse),
    }


def _draw_text(draw) -> str:
    """The verdict's draw as the CLI's --draw text ("edge:0@2": with its format, so a replay draws the same values
    after the engine's next format); "" for none, as for format 1's typical draw (the column's meaning then)."""
    if not isinstance(draw, dict):
        return ""
    try:
        text = str(Draw.parse(draw))[:40]
    except ValueError:
        return ""
    return "" if text == "typical:0" else text


def _unstorable(verdict, exc: Exception) -> dict:
    """The verdict stored instead of one the runner could not store: an engine gap, with the reason."""
    status = verdict.get("status") if isinstance(verdict, dict) else None
    return {"status": "unsupported",
            "message": f"runner error: the verdict{f' ({status!r})' if status else ''} could not be stored: "
                       f"{type(exc).__name__}: {str(exc)[:300]}"}


def store_result(run: TestRun, failing_config: FailingConfig, verdict: dict, seconds: float, attempts: int = 1,
                 build: dict | None = None):
    """Write one config's verdict; a second write for the same (run, config) is ignored.

    ``build`` is the worker's {paddle_version, paddle_commit, torch_version}; it must be the run's release
    (the executor always passes it; None only for verdicts that no worker produced, e.g. synthetic data).
    A verdict that can't be read or stored (a value no column holds) is stored as that config's
    ``unsupported`` with the reason: one config never stops the run.
    """
    if build is not None:
        check_build(run, build)
    build = build or {}
    versions = {"paddle_version": str(build.get("paddle_version", ""))[:50],
                "paddle_commit": str(build.get("paddle_commit", ""))[:64],
                "torch_version": str(build.get("torch_version", ""))[:50]}
    # the worker's provenance (every verdict of a worker carries it; a pool-made one through the build)
    prov = verdict.get("provenance") if isinstance(verdict, dict) else None
    versions["provenance_id"] = provenance_id(run, prov or build.get("provenance"))

    def create(fields):
        try:
            with transaction.atomic():  # the verdict and its config's newest-verdict row together
                result = ConfigResult.objects.create(run=run, failing_config=failing_config,
                                                     task_id=failing_config.task_id, **versions, **fields)
                latest.record(result, run)
                return result
        except IntegrityError:
            return None

    try:
        fields = _result_fields(verdict, seconds)
    except Exception as exc:  # a verdict of an unexpected shape
        return create(_result_fields(_unstorable(verdict, exc), 0.0))
    try:
        return create(fields)
    except (DataError, OverflowError, ValueError, TypeError) as exc:  # a value its column can't hold
        return create(_result_fields(_unstorable(verdict, exc), 0.0))
