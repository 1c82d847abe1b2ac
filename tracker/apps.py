from django.apps import AppConfig


class TrackerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tracker"
    verbose_name = "Accuracy-diff task board"

    def ready(self):
        # A qcluster worker advertises its lanes and resumes runs of dead executors (runner stream).
        from .tasks import connect_signals

        connect_signals()
