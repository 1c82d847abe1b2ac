#!/usr/bin/env bash
# Install everything, load the board and start the dashboard (127.0.0.1:8000) with its django-q2 worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
PY=.venv/bin/python
# The developer server: one user on loopback, DEBUG on (the settings refuse a public start without a
# DJANGO_SECRET_KEY). A public deployment uses scripts/serve.sh instead.
export DJANGO_DEBUG="${DJANGO_DEBUG:-1}"
$PY manage.py migrate --noinput
$PY manage.py createcachetable   # the shared cache's table (rate limits); a no-op once it exists or with REDIS_URL
$PY manage.py bootstrap_board          # board fixture + PaddleAPITest reports when ../shared is there
$PY manage.py compilemessages >/dev/null 2>&1 || true   # .mo files are committed; this only refreshes them
# Extra Paddle releases to re-test on (e.g. PADDLE_RELEASES="3.0.0 3.2.2"); the main .venv's is always there.
$PY manage.py paddle_envs add          # reads PADDLE_RELEASES; idempotent, a no-op when it is empty
# A new board with no runs yet re-tests every CPU task on the main env at once (AUTO_RETEST=0: don't).
if [ "${AUTO_RETEST:-1}" != "0" ]; then
  $PY manage.py retest --first-start
fi
$PY manage.py qcluster &
QCLUSTER_PID=$!
trap 'kill $QCLUSTER_PID 2>/dev/null || true' EXIT INT TERM
echo "Dashboard: http://127.0.0.1:8000/  (worker pid $QCLUSTER_PID)"
$PY manage.py runserver 127.0.0.1:8000 --noreload
