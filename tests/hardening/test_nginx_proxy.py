"""The documented proxy, for real: nginx with deploy/nginx/board-proxy.conf included verbatim, in front of
scripts/serve.sh. Other requests answer within 1 s while clients trickle headers and bodies; a client that trickles
its headers is dropped after client_header_timeout; a chunked, signed webhook arrives whole; a burst from one
address beyond the per-address limit is refused with 429 while other addresses and paced requests pass; the Server
header names no nginx version.

nginx is a Debian package that scripts/test.sh installs; without it the test fails, naming that."""
import http.client
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from .production import REPO
from .servers import Served, free_port
from .slow_clients import SlowClients, ping_chunked, probe

SECRET = "nginx-proxy-secret"
SNIPPET = REPO / "deploy" / "nginx" / "board-proxy.conf"
LIMITS = REPO / "deploy" / "nginx" / "board-limits.conf"


def nginx_config(workdir, port: int, upstream: int) -> str:
    temp = {name: workdir / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    for path in temp.values():
        path.mkdir(mode=0o777)
    return f"""
{'user root;' if os.geteuid() == 0 else ''}
daemon off;
worker_processes 1;
pid {workdir / 'nginx.pid'};
error_log {workdir / 'error.log'} info;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {temp['body']}; proxy_temp_path {temp['proxy']}; fastcgi_temp_path {temp['fastcgi']};
    uwsgi_temp_path {temp['uwsgi']}; scgi_temp_path {temp['scgi']};
    include {LIMITS};
    upstream board {{ server 127.0.0.1:{upstream}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        server_name _;
        include {SNIPPET};
    }}
}}
"""


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if nginx is None:
        pytest.fail("nginx is not installed: scripts/test.sh installs Debian's nginx package")
    workdir = tmp_path_factory.mktemp("nginx")
    # Plain HTTP between the test and nginx: X-Forwarded-Proto is `http`, so no redirect to HTTPS.
    server = Served(workdir, workers=2, threads=2,
                    extra_env={"GITHUB_WEBHOOK_SECRET": SECRET, "DJANGO_SECURE_SSL_REDIRECT": "0"})
    process = None
    try:
        server.wait_ready()
        port = free_port()
        config = workdir / "nginx.conf"
        config.write_text(nginx_config(workdir, port, server.port))
        process = subprocess.Popen([nginx, "-p", str(workdir), "-c", str(config), "-e", str(workdir / "error.log")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, (workdir / "error.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "nginx did not listen"
                time.sleep(0.2)
        yield port
    finally:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        server.stop()


def test_other_requests_answer_within_a_second_through_nginx_while_clients_trickle(proxied):
    with SlowClients(proxied, "headers", 16, interval=0.5), SlowClients(proxied, "body", 16, interval=0.5):
        time.sleep(1.0)
        # Another visitor: the per-address limits hold the tricklers' address, not everyone's.
        latencies = probe(proxied, 20, source="127.0.0.2")
    assert max(latencies) < 1.0, latencies


def test_nginx_drops_a_client_that_trickles_its_headers(proxied):
    """One header byte a second, never ending: nginx answers 408 and closes at client_header_timeout (10 s)."""
    with socket.create_connection(("127.0.0.1", proxied), timeout=30) as sock:
        sock.sendall(b"GET /api/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        started = time.monotonic()
        answer = None
        while answer is None and time.monotonic() - started < 25:
            try:
                sock.sendall(b"a")
            except OSError:  # already closed
                answer = b""
                break
            if select.select([sock], [], [], 1.0)[0]:
                answer = sock.recv(4096)
        closed_after = time.monotonic() - started
    assert answer is not None and (answer == b"" or answer.startswith(b"HTTP/1.1 408")), answer
    assert 8 < closed_after < 14, closed_after


def test_a_chunked_signed_webhook_arrives_whole_through_nginx(proxied):
    status, answer = ping_chunked(proxied, SECRET, "Design for failure.", "nginx-1")
    assert status == 200, answer
    assert json.loads(answer)["zen"] == "Design for failure."


def get(port: int, path: str, source: str) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, dict(response.headers), response.read()
    finally:
        connection.close()


def test_a_burst_from_one_address_is_refused_while_other_addresses_pass(proxied):
    """board-proxy.conf: per address 5 requests a second with bursts of 30, and 8 in progress at a time. 120
    requests from one address, 24 at a time: some pass, the rest get a short 429 (from either limit); another
    address is served meanwhile, and the bursting address is served again once it paces itself."""
    with ThreadPoolExecutor(24) as pool:
        burst = list(pool.map(lambda _: get(proxied, "/api/tasks", "127.0.0.3"), range(120)))
    statuses = [status for status, _, _ in burst]
    assert set(statuses) == {200, 429}, statuses
    assert statuses.count(200) >= 8 and statuses.count(429) >= 120 - 31 - 30, statuses  # 30 s at 5/s at most
    refused = next((headers, body) for status, headers, body in burst if status == 429)
    assert refused[1] == b"Too many requests from your address: wait a few seconds.\n"
    assert refused[0]["Retry-After"] == "5"
    # Normal use from another address passes, and so does the burster's next request a second later.
    assert get(proxied, "/tasks/1", "127.0.0.4")[0] in (200, 404)
    assert [get(proxied, "/api/tasks", "127.0.0.4")[0] for _ in range(5)] == [200] * 5
    time.sleep(1.0)
    assert get(proxied, "/api/tasks", "127.0.0.3")[0] == 200


def test_static_files_are_not_rate_limited(proxied):
    """A page loads several static files at once: /static/ is outside the per-address request limit."""
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda _: get(proxied, "/static/missing.js", "127.0.0.5")[0], range(60)))
    assert 429 not in statuses, statuses


def test_the_server_header_names_no_nginx_version(proxied):
    for path in ("/api/tasks", "/static/missing.js"):
        _, headers, _ = get(proxied, path, "127.0.0.6")
        assert headers["Server"] == "nginx", headers
    # nginx's own error page (a request head nginx refuses) names no version either.
    with socket.create_connection(("127.0.0.1", proxied), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 400") and b"Server: nginx\r\n" in answer, answer
    assert b"nginx/" not in answer, answer
