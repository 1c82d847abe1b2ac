"""The production server's application (scripts/serve.sh: gunicorn's `asgi` worker): the WSGI application behind
the buffering front of config/buffered.py, so slow clients cannot hold its threads."""
from django.conf import settings

from config.buffered import BufferedWSGI
from config.wsgi import application as wsgi_application  # sets DJANGO_SETTINGS_MODULE and sets Django up

application = BufferedWSGI(wsgi_application, threads=settings.WEB_THREADS, max_body=settings.WEB_MAX_BODY_BYTES,
                           body_seconds=settings.WEB_BODY_SECONDS,
                           pending_bytes=settings.WEB_PENDING_BODY_BYTES)
