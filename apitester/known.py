"""Stale known failures: a spec's declared ``KnownFailure`` that a release run no longer reproduces.

As OpInfo fails an expected failure that passes, a declared known failure that does not happen is reported
(issue 34).  Precisely, for one KnownFailure ``k`` of a spec and the verdicts of one run:

* **in scope**: the verdicts of the spec's API (any of its names) whose config ``k.matches`` -- the Paddle
  version the verdict was made on is in ``k.releases``, a config input dtype is in ``k.dtypes`` (any when
  empty), the config line contains ``k.contains`` -- and that judged the config: a pass, a failure of the
  comparison, a documented difference or a Torch suspect (a crash, a timeout, a skipped or unsupported config
  says nothing about whether the failure still happens);
* **reproduced** by a verdict in scope whose status is ``k.status`` and whose direction is ``k.direction``
  (any when None);
* **stale** when at least one verdict is in scope and none reproduces it.

A known failure with nothing in scope is neither (the run did not look).  Plain Python, no paddle or torch:
the board's run page (``tracker.selectors.runs.stale_known_failures``) and ``python -m apitester coverage``
both call ``stale_known_failures``.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

from .config import ConfigSyntaxError, api_name, parse_config
from .specs import get_spec
from .vocab import RUNNER_FAILURES, NO_VERDICT, Status

# A verdict judged the config (it can say the failure is gone): every status but the runner's and no-verdict ones.
JUDGED = frozenset(s for s in Status if s not in NO_VERDICT and s not in RUNNER_FAILURES)


def _dtypes(config: str) -> list[str] | None:
    try:
        return [t.dtype for t in parse_config(config).tensors()]
    except ConfigSyntaxError:
        return None


def stale_known_failures(verdicts: Iterable[Mapping]) -> list[dict]:
    """The stale known failures among these verdicts, each ``{"api", "known": KnownFailure.to_dict(),
    "in_scope": n, "statuses": {status: count}, "versions": [..], "example": config}``, by API then status.

    Each verdict: ``{"config", "status", "direction", "paddle_version"}`` (``api`` optional: read from the config)."""
    scopes: dict[tuple, dict] = {}
    for verdict in verdicts:
        status = str(verdict.get("status") or "")
        if status not in JUDGED:
            continue
        config = str(verdict.get("config") or "")
        spec = get_spec(verdict.get("api") or api_name(config))
        if spec is None or not spec.known_failures:
            continue
        dtypes = _dtypes(config)
        if dtypes is None:
            continue
        version = str(verdict.get("paddle_version") or "")
        for index, known in enumerate(spec.known_failures):
            if not known.matches(version, dtypes, config):
                continue
            scope = scopes.setdefault((spec.api, index), {"api": spec.api, "known": known.to_dict(), "in_scope": 0,
                                                          "reproduced": 0, "statuses": Counter(), "versions": set(),
                                                          "example": config})
            scope["in_scope"] += 1
            scope["statuses"][status] += 1
            scope["versions"].add(version)
            if status == known.status and known.direction in (None, verdict.get("direction") or None):
                scope["reproduced"] += 1
    stale = [s for s in scopes.values() if s["in_scope"] and not s["reproduced"]]
    return [{**{k: v for k, v in s.items() if k != "reproduced"}, "statuses": dict(sorted(s["statuses"].items())),
             "versions": sorted(s["versions"])} for s in sorted(stale, key=lambda s: (s["api"], s["known"]["status"]))]


def describe(stale: Mapping) -> str:
    """One line: "STALE api: known status [direction] (releases …, dtypes …, contains …) — n configs in scope, none
    gives it: pass=3"."""
    known = stale["known"]
    scope = ", ".join(part for part in (
        f"releases {known['releases']}" if known["releases"] else "",
        f"dtypes {'/'.join(known['dtypes'])}" if known["dtypes"] else "",
        f"contains {known['contains']!r}" if known["contains"] else "") if part) or "every config"
    statuses = " ".join(f"{s}={n}" for s, n in stale["statuses"].items())
    return (f"STALE {stale['api']}: known {known['status']}{' ' + known['direction'] if known['direction'] else ''} "
            f"({scope}) on Paddle {', '.join(stale['versions']) or '?'}: {stale['in_scope']} configs in scope, "
            f"none gives it: {statuses}")
