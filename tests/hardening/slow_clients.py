"""Hostile slow clients against a served site, and the latency of everyone else's requests meanwhile.

A slow-headers client sends a request line and then one header byte every `interval` seconds, never ending its
headers; a slow-body client sends a webhook's complete headers (Content-Length 100000) and then one body byte
every `interval` seconds. A client the server closes (the 408 after WEB_BODY_SECONDS) connects again at once:
the attack holds `count` connections for as long as it runs. Used by tests/hardening/test_slow_clients.py and
benchmarks/slow_clients.py.
"""
from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import socket
import statistics
import threading
import time
from dataclasses import dataclass, field

HTTPS = {"X-Forwarded-Proto": "https"}  # what the TLS proxy in front adds

_OPENINGS = {
    "headers": (b"GET /api/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\nX-Slow: ", b"a"),
    "body": (b"POST /github/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
             b"Content-Type: application/json\r\nX-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: slow\r\n"
             b"Content-Length: 100000\r\n\r\n{", b" "),
}


@dataclass
class SlowClients:
    """`count` connections trickling `kind` ("headers" or "body") to 127.0.0.1:`port`, one thread for all."""

    port: int
    kind: str
    count: int
    interval: float = 2.0
    reconnects: int = 0
    _sockets: list = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _open(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        sock.sendall(_OPENINGS[self.kind][0])
        return sock

    def __enter__(self) -> "SlowClients":
        self._sockets = [self._open() for _ in range(self.count)]
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()
        return self

    def _trickle(self) -> None:
        byte = _OPENINGS[self.kind][1]
        while not self._stop.wait(self.interval):
            for index, sock in enumerate(self._sockets):
                try:
                    sock.sendall(byte)
                except OSError:  # the server closed it: the attacker comes back
                    sock.close()
                    self.reconnects += 1
                    try:
                        self._sockets[index] = self._open()
                    except OSError:
                        pass

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        for sock in self._sockets:
            sock.close()


def probe(port: int, requests: int, path: str = "/api/tasks", gap: float = 0.05, timeout: float = 60,
          source: str = "127.0.0.1") -> list[float]:
    """Seconds each of `requests` plain GETs took (a new connection each, as a visitor's, from the loopback address
    `source`); a request that failed or did not answer within `timeout` counts as `timeout`."""
    latencies = []
    for _ in range(requests):
        started = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
        try:
            connection.request("GET", path, headers=HTTPS)
            response = connection.getresponse()
            response.read()
            latencies.append(time.monotonic() - started if response.status == 200 else timeout)
        except OSError:
            latencies.append(timeout)
        finally:
            connection.close()
        time.sleep(gap)
    return latencies


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


def ping_chunked(port: int, secret: str, zen: str, delivery: str) -> tuple[int, bytes]:
    """A GitHub `ping` delivery signed with `secret`, its body sent in two chunks (Transfer-Encoding: chunked):
    the status and body of the answer."""
    body = json.dumps({"zen": zen}).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        connection.request("POST", "/github/webhook", body=iter([body[:7], body[7:]]), encode_chunked=True,
                           headers={**HTTPS, "Content-Type": "application/json", "X-GitHub-Event": "ping",
                                    "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signature})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()
