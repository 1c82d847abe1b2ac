#!/usr/bin/env bash
# Install everything (venv, test extras, Debian chromium for the browser tests) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh test
if [ ! -x /usr/bin/chromium ] || ! fc-list 2>/dev/null | grep -qi "WenQuanYi"; then
  # Browser tests drive Debian's chromium (Playwright's own browser download cannot work offline);
  # a CJK font makes the Chinese pages and screenshots legible.
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei) >/dev/null
fi
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  # tests/hardening/test_nginx_proxy.py runs the documented proxy (deploy/nginx/board-proxy.conf) before serve.sh.
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx) >/dev/null
fi
bash scripts/ensure_services.sh
# The release tests need a second Paddle next to the main .venv's: 3.0.0 in var/paddle-envs (uv, shared
# wheel cache; a no-op when it is already there).
DJANGO_DEBUG=1 .venv/bin/python manage.py paddle_envs add 3.0.0
# pytest-xdist workers (PYTEST_WORKERS overrides; a later -n in "$@" wins), each test file on
# one worker (its module-scoped servers and databases are set up once), the files in collection order —
# tests/conftest.py puts the slowest first (SLOW_FILES) — not xdist's most-tests-first; the rules a test
# follows to run beside the others are in tests/conftest.py's docstring.
# One worker more than the cores: most slow tests wait on child processes (paddle/torch imports, qclusters,
# gunicorn), and two workers kept 2 cores only ~65 % busy (user+sys 15-18 min in 12-14 min of wall, 2026-12-06).
workers="${PYTEST_WORKERS:-$(( $(nproc) + 1 ))}"
set +e
.venv/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$status"
