"""A small GitHub REST client: token auth, Link pagination, ETag conditional requests, rate limits.

Standard library only (urllib). The base URL is a parameter (settings.GITHUB_API_URL) so tests talk
to a local server that plays GitHub.

The token goes only to GITHUB_API_URL's origin (scheme, host, port): a `Link: rel="next"` URL or a
redirect to any other origin is refused before anything is sent there, and a plain-http API URL is
refused unless it is loopback (a local stand-in), so the token never crosses the network in clear.

Rate limits: a 403/429 answer with Retry-After, or with X-RateLimit-Remaining: 0 and
X-RateLimit-Reset, is waited out when the wait is at most `max_wait` seconds and retried; a longer
wait raises RateLimited with the time GitHub names, so the caller can report it.

Every network failure is a GitHubError with status 0: no connection, a reset, a connection closed
before or while answering, an answer that is not JSON, and no answer within `timeout` seconds
(settings.GITHUB_API_TIMEOUT; it bounds the connect, each read and the whole body, so a GitHub that
hangs or trickles costs at most that long). Callers catch GitHubError alone.
"""
from __future__ import annotations

import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

# The rule for where the token may go is shared with the settings' start-up check (one definition).
from config.token_urls import check_api_url, url_origin

# Possessive: a header of thousands of "<" (a hostile API's Link) is read in linear time.
_LINK = re.compile(r'<(?P<url>[^<>]++)>\s*+;\s*+rel="(?P<rel>[^"]++)"')


class GitHubError(Exception):
    def __init__(self, status: int, url: str, message: str):
        super().__init__(f"GitHub answered {status} for {url}: {message}")
        self.status, self.url, self.message = status, url, message


class RateLimited(GitHubError):
    def __init__(self, status: int, url: str, wait_seconds: float, reset_at: float | None):
        super().__init__(status, url, f"rate limited; retry in {wait_seconds:.0f}s")
        self.wait_seconds, self.reset_at = wait_seconds, reset_at


@dataclass
class Response:
    status: int
    url: str
    data: object = None  # parsed JSON (None for 304)
    headers: dict = field(default_factory=dict)

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    @property
    def etag(self) -> str:
        return self.headers.get("etag", "")

    @property
    def links(self) -> dict[str, str]:
        return {m.group("rel"): m.group("url") for m in _LINK.finditer(self.headers.get("link", ""))}


@dataclass
class RequestLog:
    """Counters a sync reports: requests made, 304s, rate-limit waits."""

    requests: int = 0
    not_modified: int = 0
    rate_limit_waits: list[float] = field(default_factory=list)


class GitHubClient:
    def __init__(self, base_url: str, token: str = "", *, max_wait: float = 900.0, max_retries: int = 3,
                 timeout: float = 30.0, sleep=time.sleep, user_agent: str = "accuracy-diff-board"):
        self.base_url = check_api_url(base_url).rstrip("/")
        self.origin = url_origin(self.base_url)
        self.token = token
        self.max_wait = max_wait
        self.max_retries = max_retries
        self.timeout = timeout
        self.sleep = sleep
        self.user_agent = user_agent
        self.log = RequestLog()

    def url_for(self, path: str, params: dict | None = None) -> str:
        url = path if path.startswith(("http://", "https://")) else f"{self.base_url}/{path.lstrip('/')}"
        self._check_same_origin(url, "a link")
        if params:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(params)
        return url

    def request(self, method: str, path: str, *, params: dict | None = None, body: dict | None = None,
                etag: str = "") -> Response:
        url = self.url_for(path, params)
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": self.user_agent,
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if etag:
            headers["If-None-Match"] = etag
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        opener = urllib.request.build_opener(_SameOriginRedirects(self))
        for attempt in range(self.max_retries + 1):
            self.log.requests += 1
            request = urllib.request.Request(url, data=payload, headers=headers, method=method)
            deadline = time.monotonic() + self.timeout
            try:
                with opener.open(request, timeout=self.timeout) as answer:
                    raw = _read_body(answer, deadline, url)
                    answer_headers = {k.lower(): v for k, v in answer.headers.items()}
                    return Response(answer.status, url, _parse_json(raw, url), answer_headers)
            except urllib.error.HTTPError as error:
                answer_headers = {k.lower(): v for k, v in error.headers.items()}
                raw = _network(lambda: _read_body(error, deadline, url), url)
                if error.code == 304:
                    self.log.not_modified += 1
                    return Response(304, url, None, answer_headers)
                wait = self._rate_limit_wait(error.code, answer_headers, _error_message(raw))
                if wait is None:
                    raise GitHubError(error.code, url, _error_message(raw)) from None
                reset_at = time.time() + wait
                if wait > self.max_wait or attempt == self.max_retries:
                    raise RateLimited(error.code, url, wait, reset_at) from None
                self.log.rate_limit_waits.append(wait)
                self.sleep(wait)
            except urllib.error.URLError as error:
                raise GitHubError(0, url, f"cannot reach GitHub: {error.reason}") from None
            except (OSError, http.client.HTTPException) as error:
                # Past urllib's own wrapping: a read timeout or a reset while the answer comes in, a
                # connection closed before the status line (RemoteDisconnected), a cut-off body.
                raise _unreachable(error, url) from None
        raise AssertionError("unreachable")

    def _check_same_origin(self, url: str, what: str) -> None:
        if url_origin(url) != self.origin:
            raise GitHubError(0, url, f"refusing to follow {what} off {self.base_url}'s origin: the token is sent "
                                      f"only there")

    @staticmethod
    def _rate_limit_wait(status: int, headers: dict, message: str = "") -> float | None:
        """Seconds to wait for a rate-limit answer; None when the answer is not a rate limit."""
        if status not in (403, 429):
            return None
        retry_after = headers.get("retry-after")
        if retry_after:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                try:
                    return max(0.0, parsedate_to_datetime(retry_after).timestamp() - time.time())
                except (TypeError, ValueError):
                    pass
        if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
            return max(0.0, float(headers["x-ratelimit-reset"]) - time.time())
        if status == 429 or "rate limit" in message.lower():
            # GitHub's secondary rate limit may come without headers: "wait at least one minute".
            return 60.0
        return None  # a plain 403: permission problem, not a rate limit

    def get(self, path: str, *, params: dict | None = None, etag: str = "") -> Response:
        return self.request("GET", path, params=params, etag=etag)

    def get_pages(self, path: str, *, params: dict | None = None, etag: str = ""):
        """Yield each page's Response, following Link rel="next". The ETag applies to the first page;
        a 304 there yields that single 304 Response and stops."""
        response = self.get(path, params=params, etag=etag)
        yield response
        while not response.not_modified and response.links.get("next"):
            response = self.get(response.links["next"])
            yield response

    def get_user(self) -> dict:
        """The token's account (GET /user)."""
        return _json_object(self.get("user"))

    def get_pull_request(self, repo: str, number: int) -> dict:
        """The pull request as GitHub shows it now (GET /repos/{repo}/pulls/{number})."""
        return _json_object(self.get(f"repos/{repo}/pulls/{number}"))

    def post_issue_comment(self, repo: str, issue: int, body: str) -> dict:
        """The comment GitHub created; an answer without the comment's id is GitHubError."""
        response = self.request("POST", f"repos/{repo}/issues/{issue}/comments", body={"body": body})
        created = _json_object(response)
        if not isinstance(created.get("id"), int) or isinstance(created.get("id"), bool):
            raise GitHubError(response.status, response.url, "the answer names no comment id")
        return created


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """urllib re-sends every header (Authorization included) to wherever a redirect points: only
    redirects within the API's origin are followed (GitHub redirects a renamed repository's URLs)."""

    def __init__(self, client: GitHubClient):
        super().__init__()
        self.client = client

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        self.client._check_same_origin(urllib.parse.urljoin(req.full_url, newurl), f"a {code} redirect")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _unreachable(error: BaseException, url: str) -> GitHubError:
    reason = "no answer in time" if isinstance(error, TimeoutError) else f"{type(error).__name__}: {error}"
    return GitHubError(0, url, f"cannot reach GitHub: {reason}")


def _network(read, url: str):
    """`read()`, with a network failure as GitHubError (status 0)."""
    try:
        return read()
    except (OSError, http.client.HTTPException) as error:
        raise _unreachable(error, url) from None


def _read_body(answer, deadline: float, url: str) -> bytes:
    """The whole body, within the client's timeout in all: the socket timeout bounds each read, the
    deadline a server that trickles a byte at a time."""
    read = getattr(answer, "read1", None)
    if read is None:
        return answer.read()
    chunks = []
    while chunk := read(65536):
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise TimeoutError(f"the answer took longer than the client's timeout ({url})")
    return b"".join(chunks)


def _parse_json(raw: bytes, url: str):
    """The answer's JSON (None for an empty body); an answer that is not JSON is GitHubError."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise GitHubError(0, url, f"GitHub's answer is not JSON: {type(error).__name__}: {str(error)[:200]}") \
            from None


def _json_object(response: Response) -> dict:
    """The answer's JSON object; any other answer (a list, nothing) is GitHubError."""
    if not isinstance(response.data, dict):
        raise GitHubError(response.status, response.url, f"expected a JSON object, got {type(response.data).__name__}")
    return response.data


def _error_message(raw: bytes) -> str:
    try:
        return json.loads(raw).get("message", "") or raw.decode(errors="replace")[:200]
    except (ValueError, AttributeError):
        return raw.decode(errors="replace")[:200]


def parse_issue_ref(ref: str) -> tuple[str, int]:
    """'PaddlePaddle/Paddle#72667' → ('PaddlePaddle/Paddle', 72667)."""
    match = re.fullmatch(r"\s*([\w.-]+/[\w.-]+)#(\d+)\s*", ref or "")
    if not match:
        raise ValueError(f"not an issue reference (owner/name#number): {ref!r}")
    return match.group(1), int(match.group(2))


def client_from_settings(**kwargs) -> GitHubClient:
    from django.conf import settings

    kwargs.setdefault("max_wait", settings.GITHUB_RATE_LIMIT_MAX_WAIT)
    kwargs.setdefault("timeout", settings.GITHUB_API_TIMEOUT)
    return GitHubClient(settings.GITHUB_API_URL, settings.GITHUB_TOKEN, **kwargs)
