"""Two writers seeing the same new comment at once, in real processes: neither fails, the later version wins.

Process A applies a claim comment in a transaction and holds it open; process B applies the comment's
edit meanwhile. On PostgreSQL B's row lock finds no row (A's insert is not committed), so B inserts
too, waits for A's commit and collides on the unique comment id — the poller of CI's run on record died
with that IntegrityError. The change must then be applied over A's committed row, as if B had come second:
one stored comment, the edit's claim active, the first version's claim withdrawn.
"""
from __future__ import annotations

import json
import subprocess

from tests.github import payloads

from . import concurrency as cc
from .production import PYTHON, REPO, clean_env

FIRST = payloads.comment(3_100_000_001, "race-login", "【报名】: 1", "2025-05-12T03:00:00Z")
EDITED = payloads.comment(3_100_000_001, "race-login", "【报名】: 2", "2025-05-12T03:00:00Z", "2025-05-12T04:00:00Z")

HOLD = """
import json, sys, time
from django.db import transaction
from tracker.services.claims import apply_comment
with transaction.atomic():
    print(json.dumps(apply_comment(json.loads(sys.stdin.readline())).claimed), flush=True)
    time.sleep(4)  # the other process applies the edit meanwhile
"""

APPLY = """
import json, sys
from tracker.services.claims import apply_comment_atomic
result = apply_comment_atomic(json.loads(sys.stdin.readline()))
print(json.dumps({"claimed": result.claimed, "withdrawn": result.withdrawn}))
"""

DUMP = """
import json
from tracker.models import Claim, IssueComment
print(json.dumps({"comments": IssueComment.objects.count(),
                  "active": sorted(c.task.number for c in Claim.objects.filter(withdrawn_at__isnull=True)),
                  "claims": Claim.objects.count()}))
"""


def _start(env: dict, code: str, comment: dict) -> subprocess.Popen:
    process = subprocess.Popen([PYTHON, "manage.py", "shell", "-v", "0", "-c", code], cwd=REPO, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdin.write(json.dumps(comment) + "\n")
    process.stdin.flush()
    return process


def test_an_edit_applied_while_the_first_version_is_being_inserted_lands_over_it(database_url):
    env = clean_env(DATABASE_URL=database_url, DJANGO_DEBUG="1")
    cc.manage(env, "migrate", "-v", "0")
    cc.shell(env, cc.SEED % {"tasks": 3, "site_users": 0})

    holder = _start(env, HOLD, FIRST)
    assert json.loads(holder.stdout.readline()) == [1], holder.stderr.read()
    editor = _start(env, APPLY, EDITED)
    edit_out, edit_err = editor.communicate(timeout=120)
    holder.communicate(timeout=120)
    assert holder.returncode == 0
    assert editor.returncode == 0, f"the concurrent edit failed: {edit_err[-3000:]}"
    assert json.loads(edit_out) == {"claimed": [2], "withdrawn": [1]}
    assert json.loads(cc.shell(env, DUMP)) == {"comments": 1, "active": [2], "claims": 2}
