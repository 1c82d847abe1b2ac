"""What the operator's commands must leave behind, made or checked where the operator already looks.

* `migrate` makes the database cache's table (CACHES: the rate limits and sign-in counts live there): without
  it every password sign-in was a 500. `createcachetable` stays a no-op once the table exists.
* `check --deploy` fails, naming the command to run, when collectstatic's manifest is missing (every page a 500:
  the templates ask the manifest for each static file's hashed name) or a database cache's table is.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core import checks
from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from django.core.management import call_command
from django.db import DatabaseError, connections, router


def database_caches() -> list[tuple[str, DatabaseCache]]:
    """(alias, cache) of every cache of CACHES kept in a database table."""
    return [(alias, caches[alias]) for alias in settings.CACHES if isinstance(caches[alias], DatabaseCache)]


def create_cache_tables(sender, using: str = "default", verbosity: int = 1, **kwargs) -> None:
    """post_migrate: the database caches' tables in the database just migrated (createcachetable skips a cache
    routed elsewhere and a table that exists)."""
    if database_caches():
        call_command("createcachetable", database=using, verbosity=max(0, verbosity - 1))


@checks.register(checks.Tags.staticfiles, deploy=True)
def check_static_manifest(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if not isinstance(staticfiles_storage, ManifestFilesMixin) or staticfiles_storage.read_manifest() is not None:
        return []
    return [checks.Error(
        f"collectstatic's manifest ({staticfiles_storage.manifest_name}) is not in STATIC_ROOT ({settings.STATIC_ROOT}): "
        "every page would answer 500.",
        hint="Run `python manage.py collectstatic --noinput` (scripts/serve.sh runs it before gunicorn).",
        id="tracker.E101")]


@checks.register(checks.Tags.caches, checks.Tags.database, deploy=True)
def check_cache_tables(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    errors = []
    for alias, cache in database_caches():
        database = router.db_for_write(cache.cache_model_class)
        try:
            with connections[database].cursor() as cursor:
                tables = connections[database].introspection.table_names(cursor)
        except DatabaseError as error:
            errors.append(checks.Error(f"cannot read the tables of database {database!r} to find cache {alias!r}'s "
                                       f"table: {error}", id="tracker.E103"))
            continue
        table = settings.CACHES[alias]["LOCATION"]
        if table not in tables:
            errors.append(checks.Error(
                f"the table {table!r} of cache {alias!r} is missing from database {database!r}: every "
                "password sign-in would answer 500.",
                hint="Run `python manage.py migrate` (it makes the table) or `python manage.py createcachetable`.",
                id="tracker.E102"))
    return errors
