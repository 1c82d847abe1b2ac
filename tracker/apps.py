from django.apps import AppConfig


class TrackerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tracker"
    verbose_name = "Accuracy-diff task board"

    def ready(self):
        # A qcluster worker advertises its lanes and resumes runs of dead executors (runner stream).
        from .tasks import connect_signals

        connect_signals()
        # GitHub sign-in talks to the GitHub named in settings (GITHUB_OAUTH_URL / GITHUB_OAUTH_API_URL).
        from .web.oauth import configure_github_endpoints
        from .services.site_claims import connect_signals as connect_sign_in_signals

        configure_github_endpoints()
        connect_sign_in_signals()
        # migrate makes the database cache's table; check --deploy names a missing manifest or cache table.
        from django.db.models.signals import post_migrate

        from .operations import create_cache_tables

        post_migrate.connect(create_cache_tables, sender=self, dispatch_uid="tracker.create_cache_tables")
