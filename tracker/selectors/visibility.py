"""What a page or the API shows of a stored reference, by who is looking — one rule for the task page, the
run list and the JSON API.

A site claim's `source_ref` is `user:<site user name>`, a run's `requested_by` and a cancelled run's
message name a staff account: a name is half of a password guess, so only staff see them; the worker host a run
ran on likewise (a map of the deployment). A report import's `source_ref` is the
directory it read: shown relative to the reports root (PADDLEAPITEST_REPORTS), never the server's path.
"""
from __future__ import annotations

import os
from pathlib import PurePath

from .reported import reports_root

SITE_USER_PREFIX = "user:"
# How a path under the reports root is shown: the setting's name, then the path inside it.
REPORTS_ROOT_LABEL = "PADDLEAPITEST_REPORTS"


def shown_source_ref(source_ref: str, *, staff: bool) -> str:
    """`source_ref` as the viewer may see it: without a site user name unless staff, paths relative to the
    reports root."""
    if source_ref.startswith(SITE_USER_PREFIX):
        return source_ref if staff else ""
    if os.path.isabs(source_ref):
        return reports_relative(source_ref)
    return source_ref


def shown_staff_name(name: str, *, staff: bool) -> str:
    """A staff account's name (who requested a run) for staff only; others see nothing."""
    return name if staff else ""


# services/runs.cancel_run's message names the staff member who cancelled: "cancelled by <name>".
CANCELLED_BY = "cancelled by "


def shown_run_message(message: str, *, staff: bool) -> str:
    """A run's message without the name of the staff member who cancelled it, unless staff."""
    if not staff and message.startswith(CANCELLED_BY):
        return "cancelled"
    return message


def shown_host(host: str, *, staff: bool) -> str:
    """The worker host that ran a run, for staff only: a host name maps the deployment for an attacker."""
    return host if staff else ""


def shown_run_summary(summary: dict, *, staff: bool) -> dict:
    """GET /api/runs/<id>'s body (selectors.runs.run_summary) with its and its lanes' messages and hosts shown (the
    `host` key stays, empty for visitors: scripts read it)."""
    lanes = [shown_run_summary(lane, staff=staff) for lane in summary.get("lanes") or []]
    return {**summary, "message": shown_run_message(summary.get("message") or "", staff=staff),
            **({"provenance": shown_provenance(summary["provenance"], staff=staff)} if "provenance" in summary else {}),
            **({"host": shown_host(summary["host"] or "", staff=staff)} if "host" in summary else {}),
            **({"lanes": lanes} if "lanes" in summary else {})}


def shown_provenance(rows: list[dict], *, staff: bool) -> list[dict]:
    """Provenance rows (selectors.provenance) with their host for staff only (the key stays, empty: scripts read it)."""
    return [{**row, "host": shown_host(row.get("host") or "", staff=staff)} for row in rows]


def reports_relative(path: str) -> str:
    """`PADDLEAPITEST_REPORTS/<path inside it>` for a path under the reports root; for any other absolute
    path only its last part (the server's directories are nobody's business)."""
    root = PurePath(os.path.normpath(reports_root()))
    target = PurePath(os.path.normpath(path))
    try:
        inside = target.relative_to(root)
    except ValueError:
        return target.name
    return REPORTS_ROOT_LABEL if str(inside) == "." else f"{REPORTS_ROOT_LABEL}/{inside.as_posix()}"
