"""Worker heartbeats: what a qcluster advertises it can serve (lanes and Paddle releases)."""
from __future__ import annotations

import socket

from django.utils import timezone

from ..models import WorkerHeartbeat


def advertise(name: str, lanes: list[str], paddle_version: str, releases: list[str] | None = None) -> str:
    """Record (or refresh) this worker's heartbeat; `releases` defaults to its main env's Paddle."""
    releases = releases if releases is not None else ([paddle_version] if paddle_version else [])
    WorkerHeartbeat.objects.update_or_create(
        name=name, defaults={"host": socket.gethostname(), "lanes": lanes, "paddle_version": paddle_version,
                             "releases": releases, "last_seen": timezone.now()})
    return name
