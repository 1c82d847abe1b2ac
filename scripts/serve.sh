#!/usr/bin/env bash
# The production web server: migrate, collect static files (hashed + compressed, served by WhiteNoise),
# then gunicorn serving config.asgi with its `asgi` worker (config/worker.py: a deadline for each request head, at
# most WEB_MAX_CONNECTIONS connections per worker below the descriptor limit): the event loop reads each request's
# headers and whole body (config/buffered.py) before one of WEB_THREADS threads runs the WSGI application, so
# clients that trickle headers or bodies hold no thread (benchmarks/slow_clients.py, benchmarks/serve_limits.py).
# DEBUG stays off: DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS and the other production variables of
# docs/deployment.md must be set. Run the django-q2 worker
# (`manage.py qcluster`) beside it, on this host or on worker hosts.
#
#   WEB_BIND     address to listen on (default 127.0.0.1:8000; put a TLS proxy in front)
#   WEB_WORKERS  gunicorn worker processes (default: CPU cores + 1)
#   WEB_THREADS  threads per worker that run the application on complete requests (default 4)
#   WEB_BODY_SECONDS  a request body not complete after this many seconds is refused with 408 (default 30)
#   WEB_HEADER_SECONDS  a request head not complete after this many seconds is answered 408, closed (default 10)
#   WEB_MAX_CONNECTIONS  connections one worker keeps open (default 1000; lowered to stay below `ulimit -n`)
#   WEB_PENDING_BODY_BYTES  all request bodies one worker holds, together; past it 503 (default 32 MiB)
#   WEB_CREATE_DATABASE  1 for a new site: migrate may create the missing SQLite file (default: refuse)
#   WEB_TIMEOUT  seconds without a heartbeat before a worker is restarted (default 60)
#   DB_CONN_MAX_AGE  seconds a thread keeps its database connection (default 60)
#   WEB_SHARED_RENDERINGS  1: visitors' pages rendered once for all workers, and warmed at start (warm_pages)
#   PYTHON       the interpreter of the project's venv (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
WORKERS=${WEB_WORKERS:-$(( $(nproc 2>/dev/null || echo 1) + 1 ))}
# Each gunicorn thread keeps its database connection between requests instead of opening one per request.
export DB_CONN_MAX_AGE="${DB_CONN_MAX_AGE:-60}"
export WEB_THREADS="${WEB_THREADS:-4}"   # read by config/settings.py: the asgi worker has no --threads
# A missing SQLite file is refused, not created empty by migrate (WEB_CREATE_DATABASE=1 for a new site).
$PY manage.py check_database_file
$PY manage.py migrate --noinput
$PY manage.py createcachetable   # the shared cache's table (rate limits); a no-op once it exists or with REDIS_URL
$PY manage.py collectstatic --noinput >/dev/null
# glibc returns a freed request body (up to 2.5 MB) to the system at once instead of keeping it in the heap: its
# default threshold grows after the first large free, and 200 incomplete bodies left 221 MB held after they closed.
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-262144}"
if [ "${WEB_SHARED_RENDERINGS:-0}" -gt 0 ] 2>/dev/null; then
  # The public pages rendered for visitors beside gunicorn's start, so none waits for a first rendering
  # (tracker/web/warm.py; each finished run does it again for what it changed). Its lines go to the server's log.
  # The site's pages first, then every task's (minutes on a year-old board, at a lower priority than the web's).
  (nice -n 10 $PY manage.py warm_pages --all-tasks 2>&1 | sed 's/^/warm_pages: /' >&2 || true) &
fi
exec $PY -m gunicorn config.asgi:application \
  --bind "${WEB_BIND:-127.0.0.1:8000}" \
  --workers "$WORKERS" --worker-class config.worker.BoardASGIWorker \
  --timeout "${WEB_TIMEOUT:-60}" --graceful-timeout 30 \
  --access-logfile "${WEB_ACCESS_LOG:--}" --forwarded-allow-ips "${WEB_FORWARDED_ALLOW_IPS:-127.0.0.1}"
