"""The database a test's real processes share: a file of SQLite, or a fresh PostgreSQL database."""
from __future__ import annotations

import uuid

import pytest


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db.sqlite3'}"
        return
    from tests.deployment.conftest import PG_ADMIN_DB, _fail_unreachable, pg_connect, pg_url

    name = f"concurrency_{uuid.uuid4().hex[:10]}"
    try:
        admin = pg_connect(PG_ADMIN_DB, autocommit=True)
    except Exception as error:  # psycopg.OperationalError and friends
        _fail_unreachable("PostgreSQL", error)
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield pg_url(name)
    finally:
        with pg_connect(PG_ADMIN_DB, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
