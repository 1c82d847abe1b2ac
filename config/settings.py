"""Settings for the accuracy-diff task board.

Defaults run everything on one machine: SQLite and django-q2's ORM broker. A shared deployment sets
DATABASE_URL (PostgreSQL) and REDIS_URL (Redis broker) so that worker hosts — a GPU box for the GPU
lane — run `manage.py qcluster` against the same database and queue.
"""
import os
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.token_urls import check_api_url

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in {"1", "true", "yes", "on"}


def _env_list(name: str, default: str = "") -> list[str]:
    """A comma-separated variable as a list, each item stripped once here (readers never strip again)."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _env_number(name: str, default, kind):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return kind(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {'an integer' if kind is int else 'a number'}, "
                                   f"not {value!r}") from None


def _env_int(name: str, default: int) -> int:
    """An integer variable (unset or empty: `default`); anything else refuses to start, naming the variable."""
    return _env_number(name, default, int)


def _env_float(name: str, default: float) -> float:
    """A number variable (unset or empty: `default`); anything else refuses to start, naming the variable."""
    return _env_number(name, float(default), float)


# --- Safe by default -------------------------------------------------------------------------
# DEBUG is off unless the developer server (scripts/run.sh exports DJANGO_DEBUG=1) or the test runner
# turns it on: a debug error page would show DATABASE_URL / REDIS_URL to anyone.
RUNNING_TESTS = "pytest" in sys.modules or sys.argv[1:2] == ["test"]
DEBUG = _env_bool("DJANGO_DEBUG", RUNNING_TESTS)

INSECURE_DEV_SECRET_KEY = "dev-only-insecure-key-change-me"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "") or INSECURE_DEV_SECRET_KEY
if not DEBUG and SECRET_KEY == INSECURE_DEV_SECRET_KEY:
    # django-q2 signs its pickled jobs with this key: with the public default, anyone who can write to the
    # queue runs code on every worker. Refuse to start rather than run a public site with it.
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set and DEBUG is off: refusing to start with the built-in development key. "
        "Set DJANGO_SECRET_KEY to a long random value (the same on every host of a deployment), e.g. "
        "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`, or set DJANGO_DEBUG=1 on a "
        "developer machine (scripts/run.sh does)."
    )

ALLOWED_HOSTS = _env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
# Origins (scheme://host[:port]) allowed to POST forms over HTTPS when the host differs, e.g. behind a proxy.
CSRF_TRUSTED_ORIGINS = _env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

# Transport security: on by default whenever DEBUG is off; each can be switched off by its variable.
SECURE_SSL_REDIRECT = _env_bool("DJANGO_SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = _env_bool("DJANGO_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# HSTS is sticky in browsers, so its lifetime is the operator's choice (docs/deployment.md sets a year).
SECURE_HSTS_SECONDS = _env_int("DJANGO_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = _env_bool("DJANGO_HSTS_PRELOAD", False)
# Behind a TLS-terminating proxy: "HTTP_X_FORWARDED_PROTO,https" trusts the proxy's header. Only set it
# when the proxy always sets (overwrites) that header, otherwise clients can claim HTTPS.
_proxy_ssl_header = _env_list("DJANGO_SECURE_PROXY_SSL_HEADER")
if _proxy_ssl_header:
    if len(_proxy_ssl_header) != 2:
        raise ImproperlyConfigured("DJANGO_SECURE_PROXY_SSL_HEADER must be 'HEADER,value', e.g. 'HTTP_X_FORWARDED_PROTO,https'")
    SECURE_PROXY_SSL_HEADER = tuple(_proxy_ssl_header)
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    # First: its createsuperuser (which applies the password validators under --noinput) replaces Django's.
    "tracker.accounts",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_q",
    "tracker",
    # Site sign-in through GitHub OAuth (the claim is made for the proven login).
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.github",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (plotly.js included) with hashed names and gzip/brotli variants, served by the WSGI app.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "tracker.web.middleware.RejectNulCharactersMiddleware",
    # A view's OperationalError (read-only or emptied database) is a 503 saying what to do, not a 500.
    "tracker.web.middleware.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A visitor's GET past WEB_READ_SECONDS is a 503 (statement_timeout on PostgreSQL), not a page computed on for
    # a client that left; below DatabaseUnavailableMiddleware, so its 503 names the time, not an unavailable database.
    "tracker.web.budget.BoundedReadsMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # a page rendered once for every anonymous visitor gets a placeholder CSRF token (tracker.web.conditional)
                "tracker.web.conditional.shared_csrf_token",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"
# scripts/serve.sh serves config.asgi (gunicorn's `asgi` worker): it reads each request whole in its event loop
# before the WSGI application sees it (config/buffered.py), so slow clients hold no thread. WEB_THREADS threads
# per worker run the application; a body larger than WEB_MAX_BODY_BYTES is refused with 413 (Django's own cap on
# a request body it reads, DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB by default), one not complete within
# WEB_BODY_SECONDS with 408. All bodies a worker holds before their application call ends total at most
# WEB_PENDING_BODY_BYTES: a body that would go past it is refused with 503 (issue #45: 200 incomplete bodies held
# 610 MB). The worker (config/worker.py) closes a connection whose request head is not complete within
# WEB_HEADER_SECONDS (408) and keeps at most WEB_MAX_CONNECTIONS connections, fewer if the descriptor limit needs.
# scripts/serve.sh refuses to start on a missing SQLite file (migrate would create an empty board) unless this
# is a new site (manage.py check_database_file).
WEB_CREATE_DATABASE = _env_bool("WEB_CREATE_DATABASE", False)
WEB_THREADS = max(1, _env_int("WEB_THREADS", 4))
WEB_MAX_BODY_BYTES = _env_int("WEB_MAX_BODY_BYTES", 2_621_440)
WEB_BODY_SECONDS = _env_float("WEB_BODY_SECONDS", 30)
WEB_PENDING_BODY_BYTES = _env_int("WEB_PENDING_BODY_BYTES", 32 * 2**20)
WEB_HEADER_SECONDS = _env_float("WEB_HEADER_SECONDS", 10)
WEB_MAX_CONNECTIONS = max(1, _env_int("WEB_MAX_CONNECTIONS", 1000))
# A visitor's GET/HEAD (not staff's) that takes longer is answered 503 "took too long" (tracker/web/budget.py): on
# PostgreSQL its statements run under this statement_timeout, and every query first checks the time left. Below
# gunicorn's WEB_TIMEOUT (60 s) and a proxy's read timeout (nginx: 60 s by default). 0 turns the bound off.
WEB_READ_SECONDS = _env_float("WEB_READ_SECONDS", 10)
# An anonymous visitor's page is served from the per-data-version cache; the data version itself (a few queries:
# 6 ms for the board, 12–45 ms for a large task on a year-old board — nearly all of a cached page's cost) is read again
# at most every WEB_VERSION_SECONDS per process and page for visitors, so a public page may lag a write by that long.
# Signed-in users always read it afresh. 0 (the default) reads it on every request; docs/deployment.md sets 1.
WEB_VERSION_SECONDS = max(0.0, _env_float("WEB_VERSION_SECONDS", 0))
# When an anonymous visitor's page has no rendering for the current data version yet but one made at most
# WEB_STALE_SECONDS ago, that one is answered at once (marked X-Board-Rendering: previous, with its Age) and the new
# one is computed after the answer is sent (tracker/web/conditional.py visitor_cached): on a year-old board a
# rendering takes seconds, and every write would otherwise make the next visitors wait for it. A visitor may then
# see a write up to WEB_STALE_SECONDS (+ WEB_VERSION_SECONDS) late; signed-in users never. 0 (the default): off;
# docs/deployment.md sets 300.
WEB_STALE_SECONDS = max(0.0, _env_float("WEB_STALE_SECONDS", 0))
# Anonymous visitors' renderings of the public pages kept in the site's shared cache (CACHES "default": Redis with
# REDIS_URL, else the database's cache table) besides each process's memory: one process renders a page for all of
# them (each rendered it for itself: three renderings of seconds each per write with 3 workers), and a process that
# never rendered a page can answer with its previous rendering (WEB_STALE_SECONDS). 0 (the default): per process.
WEB_SHARED_RENDERINGS = _env_int("WEB_SHARED_RENDERINGS", 0) > 0

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=_env_int("DB_CONN_MAX_AGE", 0),
        # A kept connection is checked before each request reuses it (scripts/serve.sh keeps them 60 s).
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server, the poller and the qcluster write concurrently. WAL lets readers run beside the one
    # writer; IMMEDIATE takes the write lock at BEGIN, so a read-then-write transaction waits (up to the
    # busy timeout) instead of failing with "database is locked" when it tries to upgrade its lock.
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;",
    })

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# createsuperuser, changepassword and the password change forms refuse short, common, all-digit passwords
# and ones close to the user name.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT") or BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Production serves collectstatic's output: content-hashed names (cached forever) with compressed
    # variants. DEBUG (runserver, tests) serves the source files by their plain names, no manifest needed.
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage" if DEBUG
                    else "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "tracker.staticfinders.PlotlyJsFinder",  # plotly.js from the installed plotly package
]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- PaddleAPITest report data --------------------------------------------------------------
# Third-party PaddleAPITest data, read at run time (never copied into the repository). Empty: where the engine
# looks for it on its own (apitester.reports.reports_dir; the board asks through
# tracker.selectors.reported.reports_root, so the default is defined once, in the engine).
PADDLEAPITEST_REPORTS = os.environ.get("PADDLEAPITEST_REPORTS", "")

# --- Background work (django-q2) ------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
Q_CLUSTER = {
    # The site name is also django-q's signing salt: every cluster of the site must share it. Which
    # queue a cluster consumes comes from env Q_CLUSTER_NAME (read by django-q itself), e.g.
    # `Q_CLUSTER_NAME=gpu python manage.py qcluster` on a GPU host serves the GPU lane's queue.
    "name": os.environ.get("Q_SITE_NAME", "board"),
    "ALT_CLUSTERS": {},
    "workers": _env_int("Q_WORKERS", 1),
    "timeout": _env_int("Q_TIMEOUT", 86400),
    "retry": _env_int("Q_RETRY", 90000),
    "max_attempts": 0,
    "catch_up": False,
    "label": "Django Q",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# --- Caches ----------------------------------------------------------------------------------
# "default" is shared by every process of the site: rate limits (site claims, failed sign-ins, allauth's
# limits), the site account's login. The database cache (table board_cache, made by `manage.py
# createcachetable`, which scripts/run.sh and scripts/serve.sh run after migrate) unless REDIS_URL is set,
# then Redis. "pages" holds rendered pages and board rows keyed by data version (tracker/conditional.py):
# a process may as well render its own copy, so it stays in process memory, the fastest place.
if REDIS_URL:
    _shared_cache = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
else:
    # Culling removes arbitrary live entries once MAX_ENTRIES is passed (a rate limit would forget
    # attempts): far above what the limits hold at once; expired entries go first.
    _shared_cache = {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "board_cache",
                     "OPTIONS": {"MAX_ENTRIES": 100_000}}
CACHES = {
    "default": {**_shared_cache, "KEY_PREFIX": Q_CLUSTER["name"]},
    # 300 entries (Django's default) hold less than one rendering per task and language: a crawler walking the
    # task pages would evict the board's. A large task's page is ~1 MB, most a few tens of KB.
    "pages": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "pages",
              "OPTIONS": {"MAX_ENTRIES": 4000}},
}

# --- Re-test runner --------------------------------------------------------------------------
RUNNER_WORKERS = _env_int("RUNNER_WORKERS", 0) or (os.cpu_count() or 1)
# The queues the two lanes' runs go to. A plain `manage.py qcluster` consumes the site's queue
# (Q_CLUSTER["name"]); a cluster for another queue is started with Q_CLUSTER_NAME=<queue>.
RUNNER_CPU_QUEUE = os.environ.get("RUNNER_CPU_QUEUE") or Q_CLUSTER["name"]
RUNNER_GPU_QUEUE = os.environ.get("RUNNER_GPU_QUEUE") or "gpu"
# Per-config time budget: base + per million input elements, capped. Memory budget per worker in MiB; 0 (default):
# derived when a run starts, 60 % of the memory available shared by the workers (apitester.pool.default_memory_budget;
# 5.9 GiB each for 2 workers on a 24 GiB host), stated in each skipped_too_large verdict.
RUNNER_TIME_BASE = _env_float("RUNNER_TIME_BASE", 60)
RUNNER_TIME_PER_MELEMENT = _env_float("RUNNER_TIME_PER_MELEMENT", 5)
RUNNER_TIME_MAX = _env_float("RUNNER_TIME_MAX", 900)
RUNNER_MEMORY_BUDGET_MB = _env_int("RUNNER_MEMORY_BUDGET_MB", 0)
# How many started worker pools an executor process keeps idle for its next run with the same release and options
# (apitester.pool.warm_pool): a release matrix's lanes then skip the workers' start. Each idle pool holds its
# workers' memory (paddle + torch, ~0.5 GiB a worker), so 0 (close after every run) unless the host has room.
RUNNER_WARM_POOLS = max(0, _env_int("RUNNER_WARM_POOLS", 0))
# Threads each pool worker gives Paddle/Torch/BLAS (OMP_NUM_THREADS & co.); 0: the host's cores ÷ RUNNER_WORKERS.
# Only for runs stored before issue #46: a run pins its own TestRun.threads (1 unless retest --threads N).
# A host running several qclusters sets it so their workers together do not ask for more threads than it has cores.
RUNNER_THREADS_PER_WORKER = max(0, _env_int("RUNNER_THREADS_PER_WORKER", 0))
# Per-release Paddle environments (manage.py paddle_envs): where they live, and which releases
# scripts/run.sh provisions at start ("3.0.0 3.2.2"; empty = only the main .venv's Paddle).
PADDLE_ENVS_DIR = os.environ.get("PADDLE_ENVS_DIR") or str(BASE_DIR / "var" / "paddle-envs")
PADDLE_RELEASES = os.environ.get("PADDLE_RELEASES", "").replace(",", " ").split()
# Where `paddle_envs add` looks for wheels before the index (uv/pip --find-links; space-separated, as pip reads
# PIP_FIND_LINKS): the variable, else /opt/wheels when that directory exists.
PIP_FIND_LINKS = (os.environ.get("PIP_FIND_LINKS") or ("/opt/wheels" if os.path.isdir("/opt/wheels") else "")).split()
# A running run whose executor hasn't reported for this long is resumed by the next worker.
RUNNER_STALE_SECONDS = _env_float("RUNNER_STALE_SECONDS", 120)
# Every qcluster worker's heartbeat round (tracker.tasks.heartbeat_round: stale sweep, declined runs taken
# back, its advertisement) runs this often.
RUNNER_HEARTBEAT_SECONDS = max(1.0, _env_float("RUNNER_HEARTBEAT_SECONDS", 60))
# A queued run nobody took off the queue for this long (no dequeue mark: e.g. its job was prefetched by a cluster
# that was then killed) is sent to its lane's queue again by a worker serving its lane and release, at most once
# per this interval. A duplicate job is a no-op: starting a run is an atomic UPDATE queued → running.
RUNNER_QUEUED_RESEND_SECONDS = max(1.0, _env_float("RUNNER_QUEUED_RESEND_SECONDS", 600))
# A run the stale sweep finds orphaned again after this many re-queues in a row with no new verdict in
# between ends `failed` (with the reason on its page) instead of starting its workers once more.
RUNNER_MAX_REQUEUES = _env_int("RUNNER_MAX_REQUEUES", 3)
# A run is split into shards of this many configs; any qcluster serving the run's lane leases one at a time
# (services/shards.py), so several hosts share a run. A lease lapses RUNNER_STALE_SECONDS after its last renewal.
RUNNER_SHARD_SIZE = max(1, _env_int("RUNNER_SHARD_SIZE", 25))
# The stability re-run and "who is closer" of a config that is not exact (apitester.readings) for at most this many
# configs of each API x input-dtypes group per worker and run (0: every config). The first few of a group answer
# for it; the rest would double a whole-set run (475 minimum/maximum configs at ~15 s of float64 oracle each).
RUNNER_READINGS_PER_GROUP = _env_int("RUNNER_READINGS_PER_GROUP", 3)
# A run started from the web (services/run_requests.py) of more than RUN_CONFIRM_ABOVE config runs is not queued on
# the first click: a page states the number and asks for a confirmation (or a bound). `retest` is its own confirmation.
RUN_CONFIRM_ABOVE = max(0, _env_int("RUN_CONFIRM_ABOVE", 1000))
# Torch's results kept on disk per (config, draw, Torch build) and reused by every Paddle release of a release matrix
# or bisection (apitester.engine.torch_cache; "" turns it off): at most TORCH_CACHE_MAX_MB, least recently read out first.
TORCH_CACHE_DIR = os.environ.get("TORCH_CACHE_DIR", str(BASE_DIR / "var" / "torch-cache"))
TORCH_CACHE_MAX_MB = max(1, _env_int("TORCH_CACHE_MAX_MB", 4096))

# --- Diagnosis (services/diagnoses.py, docs/diagnosis.md) -------------------------------------
# Configs a task gets diagnosed per request (one per kind of failure first), and the seconds one engine process
# (`python -m apitester diagnose`) may take for one config.
DIAGNOSE_MAX_CONFIGS = _env_int("DIAGNOSE_MAX_CONFIGS", 12)
DIAGNOSE_TIMEOUT = _env_float("DIAGNOSE_TIMEOUT", 300)

# --- The first start (manage.py retest --first-start, scripts/run.sh; services/first_start.py) ---------------
# After every CPU task's configs, the smallest FIRST_START_GPU_CONFIGS_PER_TASK configs of each GPU task run on the
# CPU lane as that task's CPU evidence (0: none): 10 of 107 tasks' 42,091 GPU configs ~ 1,000 configs, minutes
# instead of the ~6 hours all of them take on 2 cores. Each run of the first start, when it ends, has up to
# FIRST_START_DIAGNOSE_PER_TASK strictly failing configs per task diagnosed (0: none), so "who is off" and the
# distinct failures are there without a click.
FIRST_START_GPU_CONFIGS_PER_TASK = _env_int("FIRST_START_GPU_CONFIGS_PER_TASK", 10)
FIRST_START_DIAGNOSE_PER_TASK = _env_int("FIRST_START_DIAGNOSE_PER_TASK", 1)

# --- GitHub sync -----------------------------------------------------------------------------
GITHUB_API_URL = os.environ.get("GITHUB_API_URL", "https://api.github.com")
GITHUB_TOKEN = os.environ.get("GITHUB_TOKEN", "")
GITHUB_WEBHOOK_SECRET = os.environ.get("GITHUB_WEBHOOK_SECRET", "")
GITHUB_TRACKING_ISSUE = os.environ.get("GITHUB_TRACKING_ISSUE", "PaddlePaddle/Paddle#72667")
GITHUB_PR_REPOS = _env_list("GITHUB_PR_REPOS", "PaddlePaddle/Paddle,PFCCLab/PaddleAPITest")
GITHUB_PR_TITLE_PREFIX = os.environ.get("GITHUB_PR_TITLE_PREFIX", "Accuracy diff")
GITHUB_BOT_ACCOUNTS = _env_list("GITHUB_BOT_ACCOUNTS", "paddle-bot,paddle-ci-bot,github-actions[bot]")
# The account GITHUB_TOKEN belongs to (the site posts `【报名】: N (for @login)` with it); empty: asked
# from GitHub (GET /user) once. Only its "(for @login)" comments are credited to the named login.
GITHUB_BOT_LOGIN = os.environ.get("GITHUB_BOT_LOGIN", "")
# A rate limit (403/429 with Retry-After or X-RateLimit-Reset) up to this many seconds is waited out by the REST
# client; a longer one is reported (`sync_github --max-wait` overrides it for one sync).
GITHUB_RATE_LIMIT_MAX_WAIT = _env_float("GITHUB_RATE_LIMIT_MAX_WAIT", 900)
# Seconds the REST client waits on GitHub (connect, each read, and the whole answer's body); past it the
# request fails as GitHubError and the caller degrades (a site claim shows the comment to paste, a webhook
# records the comment without asking who the site's account is). GitHub drops a webhook after 10 s.
GITHUB_API_TIMEOUT = max(0.05, _env_float("GITHUB_API_TIMEOUT", 8))
# Abuse limits: one comment or PR title names at most this many tasks (the largest real claim: 59).
CLAIM_MAX_TASKS = _env_int("CLAIM_MAX_TASKS", 80)
# Site claims + withdrawals per user per window (seconds); more answer 429. Counted in the shared cache
# (CACHES "default" below), so every web process counts together.
SITE_CLAIM_RATE_LIMIT = _env_int("SITE_CLAIM_RATE_LIMIT", 20)
SITE_CLAIM_RATE_WINDOW = _env_int("SITE_CLAIM_RATE_WINDOW", 3600)

# --- Sign-in through GitHub (django-allauth) -------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",  # staff accounts with a password (admin, re-tests)
    "allauth.account.auth_backends.AuthenticationBackend",
]
SOCIALACCOUNT_PROVIDERS = {
    "github": {
        "APP": {
            "client_id": os.environ.get("GITHUB_OAUTH_CLIENT_ID", ""),
            "secret": os.environ.get("GITHUB_OAUTH_SECRET", ""),
        },
        "SCOPE": [],  # the login is all the board needs: no e-mail, no repository access
    },
}
# GitHub's web URL for the OAuth endpoints (GitHub Enterprise, or a stand-in in tests); the API URL
# the sign-in reads /user from is GITHUB_OAUTH_API_URL (default: GITHUB_API_URL).
GITHUB_OAUTH_URL = os.environ.get("GITHUB_OAUTH_URL", "https://github.com")
GITHUB_OAUTH_API_URL = os.environ.get("GITHUB_OAUTH_API_URL", "") or GITHUB_API_URL
# Tokens go to these URLs: https only, plain http only on loopback (a local stand-in). The REST client
# checks again when it is built, so a URL changed at run time is refused too.
for _name in ("GITHUB_API_URL", "GITHUB_OAUTH_URL", "GITHUB_OAUTH_API_URL"):
    try:
        check_api_url(globals()[_name], _name)
    except ValueError as _error:
        raise ImproperlyConfigured(str(_error)) from None
# Failed staff password sign-ins (/accounts/login/, /admin/login/) per account and per client address
# per window (seconds), counted in the shared cache (tracker/web/staff_login.py); then even the right password
# waits for the window's end.
LOGIN_FAILURES_PER_ACCOUNT = _env_int("LOGIN_FAILURES_PER_ACCOUNT", 5)
LOGIN_FAILURES_PER_ADDRESS = _env_int("LOGIN_FAILURES_PER_ADDRESS", 20)
LOGIN_FAILURE_WINDOW = _env_int("LOGIN_FAILURE_WINDOW", 900)
# Behind a proxy every request comes from the proxy's address: with DJANGO_TRUSTED_PROXY_COUNT=1 the client
# address is the last X-Forwarded-For entry (the one the proxy added), for these limits and allauth's.
ALLAUTH_TRUSTED_PROXY_COUNT = _env_int("DJANGO_TRUSTED_PROXY_COUNT", 0)

# --- Mail --------------------------------------------------------------------------------------
# Password reset is the only mail the site sends. With EMAIL_HOST it goes through that SMTP server; the
# developer server (DEBUG) prints it on the console; otherwise there is no mail and password reset is
# off (its pages say so, 404) rather than failing with a 500.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = _env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("EMAIL_USE_TLS", True)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "board@localhost")
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
elif DEBUG:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
else:
    EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
PASSWORD_RESET_ENABLED = bool(EMAIL_HOST) or DEBUG

ACCOUNT_ADAPTER = "tracker.web.oauth.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "tracker.web.oauth.SocialAccountAdapter"
SOCIALACCOUNT_QUERY_EMAIL = False
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
ACCOUNT_SIGNUP_FIELDS = ["username*", "email"]
ACCOUNT_EMAIL_VERIFICATION = "none"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
