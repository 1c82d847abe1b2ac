"""Slow clients cannot starve scripts/serve.sh: other requests answer within 1 s while clients trickle headers
and webhook bodies (gthread gave each of them a thread: four held a worker, requests waited 40 s)."""
import http.client
import json
import socket
import time

import pytest

from .servers import Served
from .slow_clients import HTTPS, SlowClients, ping_chunked, probe

SECRET = "slow-clients-secret"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    # Two workers × two threads: 16 + 16 slow clients are eight times the threads there are.
    server = Served(tmp_path_factory.mktemp("slow"), workers=2, threads=2,
                    extra_env={"WEB_BODY_SECONDS": "4", "GITHUB_WEBHOOK_SECRET": SECRET})
    try:
        yield server.wait_ready()
    finally:
        server.stop()


def test_other_requests_answer_within_a_second_while_clients_trickle(served):
    with SlowClients(served.port, "headers", 16, interval=0.5), SlowClients(served.port, "body", 16, interval=0.5):
        time.sleep(1.0)  # every slow client is connected and half-way through its request
        latencies = probe(served.port, 20)
    assert max(latencies) < 1.0, latencies


def test_a_body_not_complete_in_time_is_refused_with_408(served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=15) as sock:
        sock.sendall(b"POST /github/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
                     b"Content-Length: 50\r\n\r\n{")
        started = time.monotonic()
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert 3.5 < time.monotonic() - started < 10


def test_a_body_over_the_limit_is_refused_before_it_is_read(served):
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=15)
    connection.putrequest("POST", "/github/webhook")
    for name, value in {**HTTPS, "Content-Length": str(50 * 2**20)}.items():
        connection.putheader(name, value)
    connection.endheaders()  # no body sent at all
    response = connection.getresponse()
    assert response.status == 413 and b"larger than" in response.read()


def test_a_chunked_body_reaches_the_application_whole(served):
    """The front hands the application the whole body with its length, so a signed webhook sent chunked is read
    and answered (gthread gave Django no length for it: an empty body, whose signature does not match)."""
    status, answer = ping_chunked(served.port, SECRET, "Keep it logically awesome.", "chunked-1")
    assert status == 200, answer
    assert json.loads(answer)["zen"] == "Keep it logically awesome."
