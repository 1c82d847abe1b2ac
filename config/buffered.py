"""An ASGI front for the WSGI application: a slow client never holds one of its threads.

gunicorn's gthread worker gives a connection a thread before its headers are in, and Django reads the body
inside that thread: four clients trickling headers or a body held every thread of a worker. Here gunicorn's
`asgi` worker reads the headers in its event loop, this front reads the whole body in the same loop (refused
past `max_body` bytes with 413, or past `body_seconds` with 408), and only a complete request reaches the WSGI
application, in a fixed pool of `threads` threads — so the database connections stay one per thread and are
kept between requests (`CONN_MAX_AGE`) as under gthread. The response is collected in the thread, then written
by the loop: a client that reads slowly does not hold a thread either. The response's close() runs in the same
thread after the answer is handed to the loop, so what it does is not on the answer's time.

All bodies the front holds, from their first byte until their application call ends, total at most
`pending_bytes` in a worker: a body that would go past that is refused with 503 (each body is bounded by `max_body`,
but 200 clients each holding an incomplete 2.5 MB body held 610 MB). A client that goes away before its body is in
gets no answer (config/worker.py logs it as 499, a client disconnect).
"""
from __future__ import annotations

import asyncio
import io
import logging
from concurrent.futures import ThreadPoolExecutor

from asgiref.wsgi import WsgiToAsgiInstance

logger = logging.getLogger(__name__)


class Refused(Exception):
    """A request answered by the front itself, before the application sees it."""

    def __init__(self, status: int, message: str, headers: tuple = ()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


class BufferedWSGI:
    def __init__(self, wsgi_application, *, threads: int, max_body: int, body_seconds: float,
                 pending_bytes: int = 32 * 2**20):
        self.wsgi_application = wsgi_application
        self.max_body = max_body
        self.body_seconds = body_seconds
        self.pending_bytes = pending_bytes
        self.pending = 0  # bytes of all bodies held now (one event loop: no lock needed)
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
        held = [0]  # bytes of this request's body counted in self.pending
        try:
            try:
                body = await self._read_body(scope, receive, held)
            except Refused as refused:
                await _send_response(send, refused.status,
                                     [("Content-Type", "text/plain; charset=utf-8"), *refused.headers],
                                     [refused.message.encode()])
                return
            if body is None:
                # The client went away before its body was in (gunicorn drops this answer), or gunicorn stopped
                # waiting for the body (after WEB_TIMEOUT, when that is shorter than body_seconds).
                await _send_response(send, 408, [("Content-Type", "text/plain; charset=utf-8")],
                                     [b"request body not received"])
                return
            loop = asyncio.get_running_loop()
            answered = loop.create_future()
            # Not awaited: the thread goes on into the response's close() once the answer is handed over, and the
            # connection's next request need not wait for it.
            loop.run_in_executor(self.executor, self._run_application, scope, body, loop, answered)
            status, headers, chunks = await answered
            del body
        finally:
            self.pending -= held[0]
        # A HEAD answer keeps its headers (Content-Length included) and sends no body (RFC 9110).
        await _send_response(send, status, headers, [] if scope["method"] == "HEAD" else chunks)

    async def _read_body(self, scope, receive, held: list[int]) -> bytes | None:
        """The whole body, or None if the client went away first; `held[0]` counts its bytes in `self.pending`."""
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_body:
            raise Refused(413, f"request body larger than {self.max_body} bytes")
        chunks = []
        try:
            async with asyncio.timeout(self.body_seconds):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    self._hold(held, len(chunk))
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise Refused(408, f"request body not received within {self.body_seconds:g} s") from None

    def _hold(self, held: list[int], size: int) -> None:
        if held[0] + size > self.max_body:
            raise Refused(413, f"request body larger than {self.max_body} bytes")
        if self.pending + size > self.pending_bytes:
            raise Refused(503, "too many request bodies pending on this server: try again in a few seconds",
                          [("Retry-After", "5")])
        held[0] += size
        self.pending += size

    def _run_application(self, scope, body: bytes, loop, answered) -> None:
        """In a pool thread: the WSGI call and its whole response, handed to the loop (`answered`: (status, headers,
        chunks), or the application's exception) — then the response's close() in this same thread (Django's
        request_finished returns the thread's database connection), while the loop sends the answer: what a
        response does on close (tracker/web/conditional.py computes a page's next rendering there) never delays
        the answer it follows."""
        def hand_over(outcome=None, error=None):
            if not answered.done():  # cancelled when the client went away
                answered.set_exception(error) if error is not None else answered.set_result(outcome)

        result = None
        try:
            status, headers, chunks, result = self._respond(scope, body)
        except BaseException as error:  # noqa: BLE001 -- the loop raises it where gunicorn reports it
            loop.call_soon_threadsafe(hand_over, None, error)
        else:
            loop.call_soon_threadsafe(hand_over, (status, headers, chunks))
        finally:
            if result is not None and hasattr(result, "close"):
                try:
                    result.close()
                except Exception:  # noqa: BLE001 -- the answer is gone; the log is the only place to say it
                    logger.exception("closing the response of %s %s", scope.get("method"), scope.get("path"))

    def _respond(self, scope, body: bytes):
        """(status, headers, chunks, the WSGI result, not closed yet)."""
        translator = WsgiToAsgiInstance(self.wsgi_application)
        translator.scope = scope
        try:
            # The query string as gthread gave it, bytes as latin-1 (asgiref's translation takes ASCII only).
            environ = translator.build_environ({**scope, "query_string": b""}, io.BytesIO(body))
        except ValueError as error:  # too many duplicate headers
            return 400, [("Content-Type", "text/plain; charset=utf-8")], [str(error).encode()], None
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
        except BaseException:
            if hasattr(result, "close"):
                result.close()
            raise
        return started["status"], started["headers"], chunks, result


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
