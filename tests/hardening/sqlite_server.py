"""Serve config.wsgi (the application gunicorn serves) over real HTTP on a free loopback port, on a SQLite
file opened read-write or read-only (`?mode=ro`), for the database-failure tests.

    python -m tests.hardening.sqlite_server <path to db.sqlite3> rw|ro

Prints the port once it listens; exits non-zero (with the reason on stderr) when the application refuses
to start.
"""
from __future__ import annotations

import os
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):  # the tests read answers, not access lines
        pass


def main(path: str, mode: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings

    if mode == "ro":
        # SQLite's own read-only open: every write fails with "attempt to write a readonly database" (file
        # permissions would not do: the tests may run as root, whom they do not stop).
        settings.DATABASES["default"]["NAME"] = f"file:{path}?mode=ro"
        settings.DATABASES["default"]["OPTIONS"]["uri"] = True
    from config.wsgi import application

    server = make_server("127.0.0.1", 0, application, server_class=ThreadingServer, handler_class=QuietHandler)
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(*sys.argv[1:3])
