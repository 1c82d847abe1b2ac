"""Storing the provenance a worker reported (apitester.provenance, issue #46): one Provenance row per distinct
provenance, looked up once per run and provenance (the executor passes one TestRun object for the whole run), so a
result costs one more integer column, not a row or a query."""
from __future__ import annotations

from django.db import IntegrityError, transaction

from apitester.provenance import fingerprint, thread_count

from ..models import Provenance, TestRun


def _text(value, limit: int) -> str:
    return str(value if value is not None else "")[:limit]


def _plain(value, depth: int = 0):
    """A worker's JSON cut to short plain values (it is a record, never a reason to lose the verdict)."""
    if isinstance(value, dict) and depth < 2:
        return {str(k)[:40]: _plain(v, depth + 1) for k, v in list(value.items())[:20]}
    if isinstance(value, list) and depth < 2:
        return [_plain(v, depth + 1) for v in value[:20]]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)[:200]


def clean(prov) -> dict | None:
    """The provenance as stored: apitester.provenance's keys with short plain values; None when it is not a dict."""
    if not isinstance(prov, dict):
        return None
    threads = prov.get("threads") if isinstance(prov.get("threads"), dict) else {}
    cpu = prov.get("cpu_capability") if isinstance(prov.get("cpu_capability"), dict) else {}
    return {"paddle_version": _text(prov.get("paddle_version"), 50), "paddle_commit": _text(prov.get("paddle_commit"), 64),
            "torch_version": _text(prov.get("torch_version"), 50), "numpy_version": _text(prov.get("numpy_version"), 50),
            "threads": _plain(threads), "cpu_capability": _plain(cpu), "host": _text(prov.get("host"), 200)}


def provenance_id(run: TestRun, prov) -> int | None:
    """The Provenance row of this provenance (created the first time it is seen), cached on the run object."""
    cleaned = clean(prov)
    if cleaned is None:
        return None
    key = fingerprint(cleaned)
    known = run.__dict__.setdefault("_provenance_ids", {})
    if key not in known:
        known[key] = _row(key, cleaned).pk
    return known[key]


def _row(key: str, cleaned: dict) -> Provenance:
    fields = {"paddle_version": cleaned["paddle_version"], "paddle_commit": cleaned["paddle_commit"],
              "torch_version": cleaned["torch_version"], "numpy_version": cleaned["numpy_version"],
              "threads": _small(thread_count(cleaned)), "thread_detail": cleaned["threads"],
              "cpu_capability": cleaned["cpu_capability"], "host": cleaned["host"]}
    try:
        with transaction.atomic():
            return Provenance.objects.get_or_create(fingerprint=key, defaults=fields)[0]
    except IntegrityError:  # another executor stored the same provenance meanwhile
        return Provenance.objects.get(fingerprint=key)


def _small(value: int | None) -> int | None:
    return value if value is not None and 0 < value < 32768 else None
