"""gunicorn's `asgi` worker with the bounds it lacks (scripts/serve.sh runs this class; issue #45).

gunicorn's asgi worker has no deadline for a request head and ignores `--worker-connections`: clients trickling
their headers held sockets until the process ran out of file descriptors, and then asyncio's accept loop logged
"Too many open files" for every failed accept (374,163 lines a minute). This worker adds, per process:

- A deadline for the whole request head: a connection that has not sent a complete head `head_seconds` after it
  opened (or after its previous response) is answered 408 and closed.
- At most `max_connections` connections, kept below the descriptor limit: a connection beyond that evicts the
  oldest connection that is still sending its request (head or body) or idle between two requests; if every
  connection is running a request, the new one is answered 503 and closed. A visitor sends its request at once, so
  it is never the oldest such connection: tricklers cannot lock visitors out. At a descriptor limit of 1024 or more
  the process does not run out through its clients; at 512 or less, asyncio's accepts can still run ahead of the
  bound (docs/measurements.md, #45).
- A client that goes away before its request is complete is logged as 499 (nginx's "client closed request"), not
  as the 500 gunicorn logs for an application that sent no response.
- Should descriptors run out anyway (accept fails with EMFILE or ENFILE), asyncio still stops accepting for a
  second each time; the failure is logged once per `LOG_INTERVAL` seconds with how often it happened, and so are
  the connections this worker closed.

Only HTTP/1 connections are tracked: the site speaks nothing else (no TLS here, so no HTTP/2; no h2c, no
websockets).
"""
from __future__ import annotations

import collections
import resource
import time

from gunicorn.asgi.protocol import ASGIProtocol, ASGIResponseInfo
from gunicorn.workers import gasgi
from gunicorn.workers.gasgi import ASGIWorker

LOG_INTERVAL = 60.0  # seconds between two log lines about the same kind of trouble
# Descriptors kept free below the limit: asyncio accepts up to 100 connections in one go, and several goes, before
# any of them reaches connection_made (where the bound is enforced); the process itself holds some 40 (modules,
# database connections of its threads, log files, static files being sent). At least 160, at least half the limit:
# with 160 alone, 1,000 tricklers at `ulimit -n 512` still made 747 accepts a minute fail; with half, 96.
DESCRIPTOR_RESERVE = 160
CLIENT_CLOSED_REQUEST = 499  # nginx's status for a client that closed the connection before the answer
ACCEPT_OUT_OF_RESOURCES = "socket.accept() out of system resource"  # asyncio's message (selector_events.py)


def connection_bound(configured: int, descriptor_limit: int) -> int:
    """The connections one worker keeps open: `configured`, lowered to keep `DESCRIPTOR_RESERVE` or half the
    process's descriptor limit free, whichever is more (at least 16)."""
    return max(16, min(configured, descriptor_limit - max(DESCRIPTOR_RESERVE, descriptor_limit // 2)))


def raise_descriptor_limit() -> int:
    """This process's descriptor limit, its soft limit raised to the hard one first (as nginx's
    worker_rlimit_nofile or Go's runtime do): a soft limit of 1024 under a hard one of 524,288 is common."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


class ThrottledLog:
    """Counts occurrences of each kind of event and logs one line per kind at most every `interval` seconds."""

    def __init__(self, log, interval: float = LOG_INTERVAL, clock=time.monotonic):
        self.log, self.interval, self.clock = log, interval, clock
        self.pending: collections.Counter[str] = collections.Counter()
        self.first: dict[str, float] = {}  # when the first occurrence not yet logged happened
        self.last: dict[str, float] = {}  # when the kind was last logged

        self.what: dict[str, str] = {}

    def count(self, kind: str, what: str) -> None:
        now = self.clock()
        if not self.pending[kind]:
            self.first[kind] = now
        self.pending[kind] += 1
        self.what[kind] = what
        if kind not in self.last or now - self.last[kind] >= self.interval:
            self._write(kind, now)

    def flush(self) -> None:
        """Log the kinds counted since their last line once the interval has passed, even if none happens again."""
        now = self.clock()
        for kind, pending in self.pending.items():
            if pending and now - self.last[kind] >= self.interval:
                self._write(kind, now)

    def _write(self, kind: str, now: float) -> None:
        self.log.warning("%s (%d times in %.0f s; logged at most once every %.0f s)",
                         self.what[kind], self.pending[kind], now - self.first[kind], self.interval)
        self.pending[kind] = 0
        self.last[kind] = now


class ConnectionGuard:
    """One worker's connections that are still sending a request or idle, oldest first; the head deadline and the
    connection bound act on them."""

    def __init__(self, worker, *, head_seconds: float, max_connections: int):
        self.worker = worker
        self.head_seconds = head_seconds
        self.max_connections = max_connections
        self.throttled = ThrottledLog(worker.log)
        self.waiting: collections.OrderedDict[GuardedProtocol, tuple[float, str]] = collections.OrderedDict()

    def sending(self, protocol: "GuardedProtocol", phase: str) -> None:
        """`protocol` is now in `phase`: "head" (its request head is due) or "body"."""
        self.waiting.pop(protocol, None)
        self.waiting[protocol] = (time.monotonic(), phase)

    def working(self, protocol: "GuardedProtocol") -> None:
        """Its request is complete (the application runs it) or the connection is gone."""
        self.waiting.pop(protocol, None)

    def admit(self) -> bool:
        """Room for one more connection, evicting the oldest waiting one if the bound is reached."""
        if self.worker.nr_conns < self.max_connections:
            return True
        if not self.waiting:
            self.throttled.count("full", f"a connection refused with 503: all {self.max_connections} connections "
                                         "of this worker were running requests")
            return False
        oldest, _ = self.waiting.popitem(last=False)
        oldest.close_quietly()
        self.throttled.count("evicted", "a connection still sending its request closed to make room: this worker "
                                        f"had {self.max_connections} open")
        return True

    def sweep(self) -> None:
        """Close the connections whose request head is overdue (run every second by the worker)."""
        due = time.monotonic() - self.head_seconds
        for protocol, (since, phase) in list(self.waiting.items()):
            if since > due:
                break  # the rest are newer
            if phase == "head":
                self.waiting.pop(protocol)
                protocol.close_with(408, f"request head not received within {self.head_seconds:g} s\n")
                self.throttled.count("head", f"a connection closed with 408: no complete request head within "
                                             f"{self.head_seconds:g} s")


class DisconnectAwareLog:
    """The worker's log for one connection: an access-log line gunicorn writes as 500 with nothing sent, for a
    request whose client left before the request was complete, is written as 499."""

    def __init__(self, log, protocol: "GuardedProtocol"):
        self._log = log
        self._protocol = protocol

    def __getattr__(self, name):
        return getattr(self._log, name)

    def access(self, response, request, environ, request_time):
        if response.status == 500 and response.sent == 0 and self._protocol.client_left_mid_request():
            response = ASGIResponseInfo(CLIENT_CLOSED_REQUEST, response.headers, 0)
        self._log.access(response, request, environ, request_time)


class GuardedProtocol(ASGIProtocol):
    """gunicorn's HTTP/1 protocol reporting its phases to the worker's ConnectionGuard."""

    def __init__(self, worker):
        super().__init__(worker)
        self.log = DisconnectAwareLog(worker.log, self)
        self._message_complete = False

    def client_left_mid_request(self) -> bool:
        return self._closed and not self._message_complete

    def connection_made(self, transport):
        guard = self.worker.guard
        admitted = guard.admit()
        super().connection_made(transport)
        if not admitted:
            self.close_with(503, "server busy: try again in a few seconds\n")
        elif self._callback_parser is not None:
            guard.sending(self, "head")

    def _on_headers_complete(self):
        self._message_complete = False
        self.worker.guard.sending(self, "body")
        return super()._on_headers_complete()

    def _on_message_complete(self):
        self._message_complete = True
        self.worker.guard.working(self)
        super()._on_message_complete()

    def _arm_keepalive_timer(self):
        # Idle between two requests: the next head is due (gunicorn's keep-alive timeout is usually shorter).
        if not self._closed:
            self.worker.guard.sending(self, "head")
        super()._arm_keepalive_timer()

    def connection_lost(self, exc):
        self.worker.guard.working(self)
        super().connection_lost(exc)

    def close_with(self, status: int, message: str) -> None:
        if not self._closed:
            self._send_error_response(status, message)
        self.close_quietly()

    def close_quietly(self) -> None:
        self._close_transport()
        if self._request_ready is not None:
            self._request_ready.set()  # the connection's task sees it closed and ends, as after a keep-alive timeout


class BoardASGIWorker(ASGIWorker):
    """gunicorn --worker-class config.worker.BoardASGIWorker: the asgi worker with ConnectionGuard's bounds."""

    def init_process(self):
        # ASGIWorker._serve builds each connection's protocol as `ASGIProtocol(self)`, a name it looks up in its
        # module: in this worker process, that name is GuardedProtocol.
        gasgi.ASGIProtocol = GuardedProtocol
        super().init_process()

    def load_wsgi(self):
        super().load_wsgi()  # imports config.asgi, which sets Django up: its settings are readable from here on
        from django.conf import settings

        descriptors = raise_descriptor_limit()
        bound = connection_bound(settings.WEB_MAX_CONNECTIONS, descriptors)
        self.guard = ConnectionGuard(self, head_seconds=settings.WEB_HEADER_SECONDS, max_connections=bound)
        self.accept_failures = ThrottledLog(self.log)
        self.log.info("at most %d connections (descriptor limit %d), request heads within %g s",
                      bound, descriptors, settings.WEB_HEADER_SECONDS)

    async def _serve(self):
        self.loop.set_exception_handler(self.handle_loop_exception)
        self._sweep()
        await super()._serve()

    def _sweep(self):
        self.guard.sweep()
        self.guard.throttled.flush()
        self.accept_failures.flush()
        self.loop.call_later(1.0, self._sweep)

    def handle_loop_exception(self, loop, context):
        """asyncio's accept failures (EMFILE, ENFILE, ENOBUFS, ENOMEM) once per interval; anything else as asyncio
        logs it."""
        if context.get("message") == ACCEPT_OUT_OF_RESOURCES:
            error = context.get("exception")
            self.accept_failures.count("accept", f"accept failed: {error} (asyncio tries again a second later)")
        else:
            loop.default_exception_handler(context)
