"""Writes that can race with another writer inserting the same row.

A row lock (`select_for_update`) cannot cover a row that does not exist yet: on PostgreSQL two writers
that both find no row for a comment (or a pull request, a claim) both insert it; the second insert
waits for the first transaction to commit and then fails on the unique key. Applying the change again
then finds the committed row, locks it and takes the path for a row already stored, as it would have
had the two writers come one after the other. (SQLite's BEGIN IMMEDIATE serialises writers, so there
the retry is never needed.)
"""
from __future__ import annotations

import functools

from django.db import IntegrityError, transaction

ATTEMPTS = 3  # a third collision on the same keys would mean a bug, not a race: let it raise


def retry_on_conflict(apply):
    """Run `apply` in a savepoint; when a unique key collides, run it again over the committed rows."""
    @functools.wraps(apply)
    def applied_once(*args, **kwargs):
        for attempt in range(1, ATTEMPTS + 1):
            try:
                with transaction.atomic():
                    return apply(*args, **kwargs)
            except IntegrityError:
                if attempt == ATTEMPTS:
                    raise
    return applied_once
