import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from tracker.web.health import check_at_start  # noqa: E402 (after setup: it reads the settings)

check_at_start()
