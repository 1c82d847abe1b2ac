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
$PY manage.py bootstrap_board          # board fixture + PaddleAPITest reports when ../shared is there
$PY manage.py compilemessages >/dev/null 2>&1 || true   # .mo files are committed; this only refreshes them
$PY manage.py qcluster &
QCLUSTER_PID=$!
trap 'kill $QCLUSTER_PID 2>/dev/null || true' EXIT INT TERM
echo "Dashboard: http://127.0.0.1:8000/  (worker pid $QCLUSTER_PID)"
$PY manage.py runserver 127.0.0.1:8000 --noreload
