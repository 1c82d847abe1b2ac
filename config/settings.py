"""Settings for the accuracy-diff task board.

Defaults run everything on one machine: SQLite and django-q2's ORM broker. A shared deployment sets
DATABASE_URL (PostgreSQL) and REDIS_URL (Redis broker) so that worker hosts — a GPU box for the GPU
lane — run `manage.py qcluster` against the same database and queue.
"""
import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in {"1", "true", "yes", "on"}


def _default_reports_dir() -> str:
    # Third-party PaddleAPITest data is read at run time, never copied into the repository.
    for candidate in (BASE_DIR.parent / "shared" / "paddleapitest", Path("/work/shared/paddleapitest")):
        if candidate.is_dir():
            return str(candidate)
    return str(BASE_DIR.parent / "shared" / "paddleapitest")


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "dev-only-insecure-key-change-me")
DEBUG = _env_bool("DJANGO_DEBUG", True)
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
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
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
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
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the qcluster write concurrently; wait for the lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = []

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "tracker.staticfinders.PlotlyJsFinder",  # plotly.js from the installed plotly package
]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- PaddleAPITest report data --------------------------------------------------------------
PADDLEAPITEST_REPORTS = os.environ.get("PADDLEAPITEST_REPORTS") or _default_reports_dir()

# --- Background work (django-q2) ------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
Q_CLUSTER = {
    # The site name is also django-q's signing salt: every cluster of the site must share it. Which
    # queue a cluster consumes comes from env Q_CLUSTER_NAME (read by django-q itself), e.g.
    # `Q_CLUSTER_NAME=gpu python manage.py qcluster` on a GPU host serves the GPU lane's queue.
    "name": os.environ.get("Q_SITE_NAME", "board"),
    "ALT_CLUSTERS": {},
    "workers": int(os.environ.get("Q_WORKERS", "1")),
    "timeout": int(os.environ.get("Q_TIMEOUT", "86400")),
    "retry": int(os.environ.get("Q_RETRY", "90000")),
    "max_attempts": 0,
    "catch_up": False,
    "label": "Django Q",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# --- Re-test runner --------------------------------------------------------------------------
RUNNER_WORKERS = int(os.environ.get("RUNNER_WORKERS", "0")) or (os.cpu_count() or 1)
# The queues the two lanes' runs go to. A plain `manage.py qcluster` consumes the site's queue
# (Q_CLUSTER["name"]); a cluster for another queue is started with Q_CLUSTER_NAME=<queue>.
RUNNER_CPU_QUEUE = os.environ.get("RUNNER_CPU_QUEUE") or Q_CLUSTER["name"]
RUNNER_GPU_QUEUE = os.environ.get("RUNNER_GPU_QUEUE") or "gpu"
# Per-config time budget: base + per million input elements, capped; memory budget per worker (0: auto).
RUNNER_TIME_BASE = float(os.environ.get("RUNNER_TIME_BASE", "60"))
RUNNER_TIME_PER_MELEMENT = float(os.environ.get("RUNNER_TIME_PER_MELEMENT", "5"))
RUNNER_TIME_MAX = float(os.environ.get("RUNNER_TIME_MAX", "900"))
RUNNER_MEMORY_BUDGET_MB = int(os.environ.get("RUNNER_MEMORY_BUDGET_MB", "0"))
# A running run whose executor hasn't reported for this long is resumed by the next worker.
RUNNER_STALE_SECONDS = float(os.environ.get("RUNNER_STALE_SECONDS", "120"))

# --- GitHub sync -----------------------------------------------------------------------------
GITHUB_API_URL = os.environ.get("GITHUB_API_URL", "https://api.github.com")
GITHUB_TOKEN = os.environ.get("GITHUB_TOKEN", "")
GITHUB_WEBHOOK_SECRET = os.environ.get("GITHUB_WEBHOOK_SECRET", "")
GITHUB_TRACKING_ISSUE = os.environ.get("GITHUB_TRACKING_ISSUE", "PaddlePaddle/Paddle#72667")
GITHUB_PR_REPOS = os.environ.get("GITHUB_PR_REPOS", "PaddlePaddle/Paddle,PFCCLab/PaddleAPITest").split(",")
GITHUB_PR_TITLE_PREFIX = os.environ.get("GITHUB_PR_TITLE_PREFIX", "Accuracy diff")
GITHUB_BOT_ACCOUNTS = os.environ.get("GITHUB_BOT_ACCOUNTS", "paddle-bot,paddle-ci-bot,github-actions[bot]").split(",")
# The account GITHUB_TOKEN belongs to (the site posts `【报名】: N (for @login)` with it); empty: asked
# from GitHub (GET /user) once. Only its "(for @login)" comments are credited to the named login.
GITHUB_BOT_LOGIN = os.environ.get("GITHUB_BOT_LOGIN", "")
# Abuse limits: one comment or PR title names at most this many tasks (the largest real claim: 59).
CLAIM_MAX_TASKS = int(os.environ.get("CLAIM_MAX_TASKS", "80"))
# Site claims + withdrawals per user per window (seconds); more answer 429. Counted in Django's cache:
# with several web processes, configure a shared CACHES backend (e.g. Redis) so they count together.
SITE_CLAIM_RATE_LIMIT = int(os.environ.get("SITE_CLAIM_RATE_LIMIT", "20"))
SITE_CLAIM_RATE_WINDOW = int(os.environ.get("SITE_CLAIM_RATE_WINDOW", "3600"))

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
ACCOUNT_ADAPTER = "tracker.github.oauth.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "tracker.github.oauth.SocialAccountAdapter"
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
