"""Every state change is written as an Event with where it came from."""
from django.utils import timezone

from ..models import Event, Task


def record_event(
    *, task: Task | None, kind: str, source: str, source_ref: str = "", actor: str = "", message: str = "",
    data: dict | None = None, when=None,
) -> Event:
    return Event.objects.create(
        task=task, kind=kind, source=source, source_ref=source_ref, actor=actor, message=message,
        data=data or {}, created=when or timezone.now(),
    )
