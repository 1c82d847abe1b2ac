"""Fixed-window limits counted in the shared cache, exact across web processes.

A window holds `limit` numbered slots per name (e.g. one user's site claims); an attempt takes the first
free slot with `cache.add`, which is atomic on every shared backend — on the database cache a second
INSERT of the same key fails on the primary key, on Redis it is SET NX — so any number of concurrent
attempts in any number of processes take at most `limit` slots. (`cache.incr` is not atomic on the
database cache: it reads the value and writes it back.) The cache must be shared by all web processes:
config/settings.py's CACHES "default" (the database cache, or Redis with REDIS_URL).

The database cache's `add` also answers False when the INSERT fails for another reason (a read-only or
missing database: it swallows every DatabaseError). A refused `add` whose key is then not in the cache
was not a taken slot but a failed write: `CountUnavailable`, never "limit reached".
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from django.core.cache import cache
from django.db import OperationalError


class CountUnavailable(OperationalError):
    """The shared cache could not record an attempt (e.g. the database is read-only): the limit is
    unknown, which is not the same as reached. An OperationalError, so the site answers it as a database
    problem (web/middleware.py: 503 with what to check)."""


@dataclass
class Slot:
    key: str | None  # None: every slot of the window is taken
    retry_after: int  # seconds until the window ends

    @property
    def allowed(self) -> bool:
        return self.key is not None

    def release(self) -> None:
        """Give the slot back (an attempt that should not count, e.g. a successful sign-in)."""
        if self.key is not None:
            cache.delete(self.key)
            self.key = None


def take_slot(name: str, limit: int, window: int) -> Slot:
    """One attempt of `name` in the current `window`-second window; refused once `limit` are taken."""
    now = int(time.time())
    start = now - now % window
    retry_after = start + window - now
    # Hashed: a name may hold anything (a typed user name), cache keys may not.
    prefix = f"throttle:{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:40]}:{start}:"
    keys = [f"{prefix}{i}" for i in range(limit)]
    taken = cache.get_many(keys)  # one round trip to skip the slots already taken
    for key in keys:
        if key in taken:
            continue
        if cache.add(key, now, timeout=retry_after + 5):
            return Slot(key, retry_after)
        if cache.get(key) is None:  # the add failed, yet nobody holds the slot
            if cache.add(key, now, timeout=retry_after + 5):  # it was given back in between: take it
                return Slot(key, retry_after)
            raise CountUnavailable("the shared cache could not record the attempt: its database cannot be "
                                   "written (read-only, or failing)")
    return Slot(None, retry_after)
