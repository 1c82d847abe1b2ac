"""The documented production environment (docs/deployment.md lists the same variables) for subprocesses."""
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable

PRODUCTION_ENV = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_ALLOWED_HOSTS": "board.example.org,127.0.0.1",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://board.example.org",
    "DJANGO_SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
    "DJANGO_HSTS_SECONDS": "31536000",
    "DJANGO_HSTS_INCLUDE_SUBDOMAINS": "1",
    "DJANGO_HSTS_PRELOAD": "1",
    "DJANGO_TRUSTED_PROXY_COUNT": "1",
}


def clean_env(**extra: str) -> dict:
    """This process's environment without any DJANGO_*/database setting the test run added, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DJANGO_") and k not in ("DATABASE_URL", "REDIS_URL", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    env.update(extra)
    return env
