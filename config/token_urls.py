"""Where a GitHub token may be sent: an https URL, or plain http only on a loopback host (a local stand-in for
GitHub in tests and development). Plain Python, no Django and nothing of the app: the settings check
GITHUB_API_URL, GITHUB_OAUTH_URL and GITHUB_OAUTH_API_URL with it at start-up, and the REST client
(tracker/github/client.py) checks its base URL and compares origins with it each time it is built."""
from __future__ import annotations

import urllib.parse

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
DEFAULT_PORTS = {"http": 80, "https": 443}


def url_origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in; hosts compare case-insensitively."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: matches no origin
        port = -1
    return scheme, (parts.hostname or "").lower(), port if port is not None else DEFAULT_PORTS.get(scheme)


def check_api_url(url: str, name: str = "GITHUB_API_URL") -> str:
    """`url` when the token may be sent to it: https, or http on a loopback host; ValueError otherwise."""
    scheme, host, _ = url_origin(url or "")
    if not host or scheme not in DEFAULT_PORTS:
        raise ValueError(f"{name}={url!r} is not an http(s) URL with a host, e.g. https://api.github.com")
    if scheme != "https" and host not in LOOPBACK_HOSTS:
        raise ValueError(f"{name}={url!r} must use https: the GitHub token would cross the network in clear "
                         f"(plain http is allowed only for a loopback stand-in: {', '.join(sorted(LOOPBACK_HOSTS))})")
    return url
