"""scripts/serve.sh: gunicorn's asgi worker serving config.asgi (the WSGI app behind its buffering front) with the
production environment, static files by WhiteNoise."""
import gzip
import re
import urllib.error
import urllib.request

import pytest

from .servers import Served

HTTPS = {"X-Forwarded-Proto": "https"}  # what the TLS proxy in front adds


def fetch(url: str, headers: dict | None = None):
    request = urllib.request.Request(url, headers=headers or {})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("serve"))
    try:
        yield server.wait_ready()
    finally:
        server.stop()


def test_gunicorn_serves_pages_with_the_security_headers(served):
    status, headers, body = fetch(served.url + "/", HTTPS)
    assert status == 200, body[:500]
    assert "gunicorn" in headers.get("Server", "")
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff"
    # Plain HTTP is sent to HTTPS; an unknown host is refused.
    status, headers, _ = fetch(served.url + "/")
    assert status == 301 and headers["Location"].startswith("https://127.0.0.1")
    assert fetch(served.url + "/", {**HTTPS, "Host": "evil.example"})[0] == 400


def test_errors_show_no_debug_page(served):
    status, _, body = fetch(served.url + "/tasks/999999", HTTPS)
    assert status == 404
    assert b"Traceback" not in body and b"DATABASE_URL" not in body and b"URLconf" not in body


def test_plotly_js_is_served_hashed_and_compressed(served):
    status, _, page = fetch(served.url + "/charts/overview", HTTPS)
    assert status == 200
    match = re.search(rb'/static/plotly/plotly\.min\.([0-9a-f]{12})\.js', page)
    assert match, "the chart page does not reference a hashed plotly.js"
    url = served.url + match.group(0).decode()
    status, headers, body = fetch(url, {**HTTPS, "Accept-Encoding": "gzip"})
    assert status == 200 and headers.get("Content-Encoding") == "gzip"
    assert "immutable" in headers.get("Cache-Control", "") and "max-age=315360000" in headers["Cache-Control"]
    plain = gzip.decompress(body)
    assert len(body) < len(plain) / 2 and b"plotly" in plain[:2000].lower()
    status, headers, identity = fetch(url, HTTPS)
    assert status == 200 and identity == plain and "Content-Encoding" not in headers
