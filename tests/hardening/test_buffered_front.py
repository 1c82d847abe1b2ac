"""config/buffered.py hands the answer to the event loop before the response's close() runs, and runs close() in the
thread that ran the application (Django returns that thread's database connection there): what a response does on
close — computing a page's next rendering (tracker/web/conditional.py) — never delays the answer. An application
that raises still raises where gunicorn reports it. Driven as gunicorn's asgi worker drives it, without a socket."""
import asyncio
import threading

import pytest

from config.buffered import BufferedWSGI

SCOPE = {"type": "http", "method": "GET", "path": "/", "raw_path": b"/", "query_string": b"", "headers": [],
         "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000), "http_version": "1.1", "scheme": "http",
         "root_path": ""}


class ClosedLater(list):
    """A WSGI result whose close() waits until the test lets it end."""

    def __init__(self, chunks):
        super().__init__(chunks)
        self.may_end = threading.Event()
        self.closing = threading.Event()
        self.threads = {}

    def close(self):
        self.threads["close"] = threading.get_ident()
        self.closing.set()
        assert self.may_end.wait(10)


def drive(front) -> list[dict]:
    """gunicorn's calls, in a thread of their own: a browser test earlier in the same process may leave an event
    loop running in this one (asyncio.run would refuse)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _drive(front)).result(timeout=30)


async def _drive(front) -> list[dict]:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    await front(dict(SCOPE), receive, send)
    return sent


def test_the_answer_is_sent_while_close_is_still_running_in_the_applications_thread():
    result = ClosedLater([b"the answer"])

    def application(environ, start_response):
        result.threads["application"] = threading.get_ident()
        start_response("200 OK", [("Content-Type", "text/plain")])
        return result

    front = BufferedWSGI(application, threads=2, max_body=1000, body_seconds=5)
    try:
        sent = drive(front)
        assert result.closing.wait(10)  # close() has begun ...
        assert sent[0]["status"] == 200 and sent[1]["body"] == b"the answer"  # ... and the answer was already out
        assert not result.may_end.is_set()  # while close() still waits
    finally:
        result.may_end.set()
        front.executor.shutdown(wait=True)
    assert result.threads["close"] == result.threads["application"]


def test_an_application_that_raises_raises_where_gunicorn_reports_it():
    def application(environ, start_response):
        raise RuntimeError("the view failed")

    front = BufferedWSGI(application, threads=1, max_body=1000, body_seconds=5)
    try:
        with pytest.raises(RuntimeError, match="the view failed"):
            drive(front)
    finally:
        front.executor.shutdown(wait=True)
