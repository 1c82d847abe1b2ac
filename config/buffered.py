"""An ASGI front for the WSGI application: a slow client never holds one of its threads.

gunicorn's gthread worker gives a connection a thread before its headers are in, and Django reads the body
inside that thread: four clients trickling headers or a body held every thread of a worker. Here gunicorn's
`asgi` worker reads the headers in its event loop, this front reads the whole body in the same loop (refused
past `max_body` bytes with 413, or past `body_seconds` with 408), and only a complete request reaches the WSGI
application, in a fixed pool of `threads` threads — so the database connections stay one per thread and are
kept between requests (`CONN_MAX_AGE`) as under gthread. The response is collected in the thread, then written
by the loop: a client that reads slowly does not hold a thread either.
"""
from __future__ import annotations

import asyncio
import io
from concurrent.futures import ThreadPoolExecutor

from asgiref.wsgi import WsgiToAsgiInstance


class Refused(Exception):
    """A request answered by the front itself, before the application sees it."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class BufferedWSGI:
    def __init__(self, wsgi_application, *, threads: int, max_body: int, body_seconds: float):
        self.wsgi_application = wsgi_application
        self.max_body = max_body
        self.body_seconds = body_seconds
        self.executor = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="wsgi")

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        # Websockets: the site has none; returning without accepting closes the connection.

    async def _lifespan(self, receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.executor.shutdown(wait=False, cancel_futures=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope, receive, send):
        try:
            body = await self._read_body(scope, receive)
        except Refused as refused:
            await _send_response(send, refused.status, [("Content-Type", "text/plain; charset=utf-8")],
                                 [refused.message.encode()])
            return
        if body is None:
            return  # the client went away before its body was in
        loop = asyncio.get_running_loop()
        status, headers, chunks = await loop.run_in_executor(self.executor, self._run_application, scope, body)
        # A HEAD answer keeps its headers (Content-Length included) and sends no body (RFC 9110).
        await _send_response(send, status, headers, [] if scope["method"] == "HEAD" else chunks)

    async def _read_body(self, scope, receive) -> bytes | None:
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_body:
            raise Refused(413, f"request body larger than {self.max_body} bytes")
        body = bytearray()
        try:
            async with asyncio.timeout(self.body_seconds):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    body += message.get("body", b"")
                    if len(body) > self.max_body:
                        raise Refused(413, f"request body larger than {self.max_body} bytes")
                    if not message.get("more_body", False):
                        return bytes(body)
        except TimeoutError:
            raise Refused(408, f"request body not received within {self.body_seconds:g} s") from None

    def _run_application(self, scope, body: bytes):
        """In a pool thread: the WSGI call, its whole response, and its close() (Django's request_finished, which
        returns the thread's database connection, runs in the thread that used it)."""
        translator = WsgiToAsgiInstance(self.wsgi_application)
        translator.scope = scope
        try:
            # The query string as gthread gave it, bytes as latin-1 (asgiref's translation takes ASCII only).
            environ = translator.build_environ({**scope, "query_string": b""}, io.BytesIO(body))
        except ValueError as error:  # too many duplicate headers
            return 400, [("Content-Type", "text/plain; charset=utf-8")], [str(error).encode()]
        environ["QUERY_STRING"] = scope["query_string"].decode("latin-1")
        if body or "CONTENT_LENGTH" in environ:
            # The body is complete here, chunked or not: the application reads exactly this many bytes.
            environ["CONTENT_LENGTH"] = str(len(body))
        started = {}

        def start_response(status, headers, exc_info=None):
            started["status"], started["headers"] = int(status.split(" ", 1)[0]), headers
            return chunks.append

        chunks: list[bytes] = []
        result = self.wsgi_application(environ, start_response)
        try:
            chunks.extend(bytes(chunk) for chunk in result)
        finally:
            if hasattr(result, "close"):
                result.close()
        return started["status"], started["headers"], chunks


def _declared_length(scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_response(send, status: int, headers, chunks) -> None:
    # The names as the application wrote them (gunicorn writes them as they come and reads them case-blind): the
    # response on the wire is the one gthread sent.
    await send({"type": "http.response.start", "status": status,
                "headers": [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]})
    await send({"type": "http.response.body", "body": b"".join(chunks)})
