"""A real HTTP server on 127.0.0.1 that plays the parts of GitHub's REST API the board uses.

- GET  /repos/{owner}/{repo}/issues/{n}/comments   since, per_page, page; Link pagination
- GET  /search/issues                               q (repo:…, is:pr, in:title "…", updated:>=…), page
- POST /repos/{owner}/{repo}/issues/{n}/comments   creates a comment as the token's account
- GET  /repos/{owner}/{repo}/pulls/{n}              a pull request as it is now (`pull_requests`)
- GET  /user                                        the token's account (an OAuth token: the person who
                                                    signed in; any other token: `token_login`)
- GET  /login/oauth/authorize                       GitHub's consent page, already agreed to by
                                                    `oauth_login`: redirects to redirect_uri with a code
- POST /login/oauth/access_token                    code (+ client secret, PKCE verifier) → access token
Every GET answers with an ETag and honours If-None-Match with 304. A queue of rate-limit answers
(403/429 with Retry-After or X-RateLimit-Reset) is served before the real answers. `delays` makes
chosen GET paths slow; `faults` makes a path (GET or POST) fail the way a network does — `hang` (no
answer), `stall` (headers and part of the body, then nothing), `trickle` (a byte at a time, each in time),
`reset` (TCP RST), `disconnect` (closed before the status line), `not-json` (an HTML error page) — for
`fault_seconds`. Every request is logged so tests can assert what the client sent.
"""
from __future__ import annotations

import hashlib
import json
import re
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import payloads


class FakeGitHub:
    def __init__(self, page_size: int = 2, token_login: str = "paddle-bot"):
        self.comments: dict[tuple[str, int], list[dict]] = {}
        self.pulls: list[dict] = []  # search items
        self.pull_requests: dict[tuple[str, int], dict] = {}  # (repo, number) → GET .../pulls/{n}
        self.faults: dict[str, str] = {}  # path → how requests to it fail (see the module's docstring)
        self.fault_seconds = 3.0  # how long a hang / stall / trickle lasts
        self.page_size = page_size
        self.token_login = token_login
        self.requests: list[dict] = []
        self.rate_limits: list[dict] = []  # answers to serve first: {"status", "headers"}
        self.delays: dict[str, float] = {}  # path → seconds a GET of it waits before answering (a slow GitHub)
        # A hostile API: the origin its Link headers name (default its own), and path → 302 Location.
        self.link_origin = ""
        self.redirects: dict[str, str] = {}
        self.next_comment_id = 3_100_000_000
        # OAuth app registered on this GitHub, and the person who will agree on the consent page.
        self.oauth_client_id, self.oauth_client_secret = "Iv1.fakeclientid", "fake-client-secret"
        self.oauth_login, self.oauth_user_id = "", 0
        self.oauth_codes: dict[str, dict] = {}  # code → {login, id, redirect_uri, challenge}
        self.oauth_tokens: dict[str, dict] = {}  # access token → {login, id}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address
        return f"http://{host}:{port}"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    # --- state helpers --------------------------------------------------------------------
    def add_comment(self, the_comment: dict, repo: str = payloads.REPO, issue: int = payloads.ISSUE):
        with self._lock:
            self.comments.setdefault((repo, issue), []).append(the_comment)

    def remove_comment(self, comment_id: int, repo: str = payloads.REPO, issue: int = payloads.ISSUE):
        with self._lock:
            self.comments[(repo, issue)] = [c for c in self.comments[(repo, issue)] if c["id"] != comment_id]

    def rate_limit(self, status: int = 403, **headers):
        self.rate_limits.append({"status": status, "headers": {k.replace("_", "-"): str(v) for k, v in headers.items()}})

    def sign_in_as(self, login: str, user_id: int = 4242) -> None:
        """The next OAuth consent is given by this GitHub user."""
        self.oauth_login, self.oauth_user_id = login, user_id

    def set_pull_request(self, the_pull: dict, repo: str = payloads.REPO) -> None:
        with self._lock:
            self.pull_requests[(repo, the_pull["number"])] = the_pull

    def requests_to(self, path_part: str) -> list[dict]:
        return [r for r in self.requests if path_part in r["path"]]

    # --- HTTP ----------------------------------------------------------------------------
    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, data=None, headers: dict | None = None):
                body = b"" if data is None else json.dumps(data, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("X-RateLimit-Limit", "5000")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body:
                    self.wfile.write(body)

            def _fault(self, path: str) -> bool:
                """Fail this request as `fake.faults` says; True when it did (nothing else is sent)."""
                fault = fake.faults.get(path)
                if fault is None:
                    return False
                self.close_connection = True
                if fault == "not-json":
                    body = b"<html><body>502 Bad Gateway</body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif fault in ("stall", "trickle"):
                    self.send_response(200)  # a body of 100,000 bytes is announced; 3 come at once
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    self.wfile.write(b'{"a')
                    ends = time.monotonic() + fake.fault_seconds
                    try:
                        while fault == "trickle" and time.monotonic() < ends:
                            time.sleep(0.02)
                            self.wfile.write(b" ")
                    except OSError:  # the client gave up: that is the point
                        return True
                    time.sleep(max(0.0, ends - time.monotonic()))
                elif fault == "hang":
                    time.sleep(fake.fault_seconds)
                elif fault == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                # "disconnect": the connection closes without a status line
                return True

            def _log(self, body=None):
                parsed = urllib.parse.urlsplit(self.path)
                entry = {"method": self.command, "path": parsed.path, "query": urllib.parse.parse_qs(parsed.query),
                         "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
                fake.requests.append(entry)
                return entry

            def _rate_limited(self) -> bool:
                if not fake.rate_limits:
                    return False
                answer = fake.rate_limits.pop(0)
                self._send(answer["status"], {
                    "message": answer.get("message", "API rate limit exceeded for installation ID 1."),
                    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                }, answer["headers"])
                return True

            def _page(self, entry: dict, items: list, wrap=None):
                query = entry["query"]
                per_page = min(int(query.get("per_page", ["30"])[0]), fake.page_size)
                page = int(query.get("page", ["1"])[0])
                pages = max(1, -(-len(items) // per_page))
                chunk = items[(page - 1) * per_page: page * per_page]
                data = wrap(chunk) if wrap else chunk
                body = json.dumps(data, ensure_ascii=False, sort_keys=True).encode()
                etag = 'W/"' + hashlib.sha1(body + self.path.encode()).hexdigest() + '"'
                headers = {"ETag": etag}
                links = []
                base = {k: v[0] for k, v in query.items()}
                origin = fake.link_origin or fake.url
                if page < pages:
                    links.append(f'<{origin}{entry["path"]}?{urllib.parse.urlencode({**base, "page": page + 1})}>; rel="next"')
                    links.append(f'<{origin}{entry["path"]}?{urllib.parse.urlencode({**base, "page": pages})}>; rel="last"')
                if page > 1:
                    links.append(f'<{fake.url}{entry["path"]}?{urllib.parse.urlencode({**base, "page": 1})}>; rel="first"')
                if links:
                    headers["Link"] = ", ".join(links)
                if entry["headers"].get("if-none-match") == etag:
                    self._send(304, None, {"ETag": etag})
                    return
                self._send(200, data, headers)

            def _token_user(self, entry: dict) -> dict | None:
                auth = entry["headers"].get("authorization", "")
                token = auth.split(" ", 1)[1].strip() if " " in auth else ""
                if not token:
                    return None
                if token in fake.oauth_tokens:
                    return fake.oauth_tokens[token]
                if token.startswith("gho_"):
                    return None  # an OAuth token this GitHub never issued
                return {"login": fake.token_login, "id": 9000}

            def _authorize(self, entry: dict):
                query = {k: v[0] for k, v in entry["query"].items()}
                if query.get("client_id") != fake.oauth_client_id or query.get("response_type", "code") != "code":
                    return self._send(404, {"message": "Not Found (unknown OAuth application)"})
                if not fake.oauth_login or not query.get("redirect_uri"):
                    return self._send(400, {"message": "nobody to sign in / no redirect_uri"})
                code = hashlib.sha1(f"{time.time_ns()} {fake.oauth_login}".encode()).hexdigest()[:20]
                fake.oauth_codes[code] = {"login": fake.oauth_login, "id": fake.oauth_user_id,
                                          "redirect_uri": query["redirect_uri"],
                                          "challenge": query.get("code_challenge", "")}
                target = query["redirect_uri"] + ("&" if "?" in query["redirect_uri"] else "?") + \
                    urllib.parse.urlencode({"code": code, "state": query.get("state", "")})
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _access_token(self, entry: dict, raw: bytes):
                form = {k: v[0] for k, v in urllib.parse.parse_qs(raw.decode()).items()}
                grant = fake.oauth_codes.pop(form.get("code", ""), None)  # a code is used once
                if (grant is None or form.get("client_id") != fake.oauth_client_id
                        or form.get("client_secret") != fake.oauth_client_secret
                        or form.get("redirect_uri") != grant["redirect_uri"]):
                    return self._send(200, {"error": "bad_verification_code",
                                            "error_description": "The code passed is incorrect or expired."})
                if grant["challenge"]:
                    import base64
                    verifier = form.get("code_verifier", "")
                    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                    if digest != grant["challenge"]:
                        return self._send(200, {"error": "invalid_grant", "error_description": "PKCE verifier"})
                token = "gho_" + hashlib.sha1(f"{time.time_ns()} {grant['login']}".encode()).hexdigest()[:30]
                fake.oauth_tokens[token] = {"login": grant["login"], "id": grant["id"]}
                self._send(200, {"access_token": token, "token_type": "bearer", "scope": ""})

            def do_GET(self):
                entry = self._log()
                time.sleep(fake.delays.get(entry["path"], 0))
                if self._fault(entry["path"]):
                    return
                if entry["path"] == "/login/oauth/authorize":
                    return self._authorize(entry)
                if entry["path"] in fake.redirects:
                    self.send_response(302)
                    self.send_header("Location", fake.redirects[entry["path"]])
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                if self._rate_limited():
                    return
                match = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)", entry["path"])
                if match and (match.group(1), int(match.group(2))) in fake.pull_requests:
                    return self._send(200, fake.pull_requests[(match.group(1), int(match.group(2)))])
                if entry["path"] == "/user":
                    who = self._token_user(entry)
                    if who is None:
                        return self._send(401, {"message": "Bad credentials"})
                    return self._send(200, {**payloads.user(who["login"], who["id"]), "name": None, "email": None})
                match = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", entry["path"])
                if match:
                    items = list(fake.comments.get((match.group(1), int(match.group(2))), []))
                    since = entry["query"].get("since", [None])[0]
                    if since:
                        items = [c for c in items if c["updated_at"] >= since]
                    items.sort(key=lambda c: (c["created_at"], c["id"]))
                    return self._page(entry, items)
                if entry["path"] == "/search/issues":
                    q = entry["query"].get("q", [""])[0]
                    repo = re.search(r"repo:(\S+)", q)
                    title = re.search(r'in:title "([^"]+)"', q)
                    updated = re.search(r"updated:>=(\S+)", q)
                    items = [p for p in fake.pulls
                             if (not repo or p["repository_url"].endswith("/repos/" + repo.group(1)))
                             and (not title or title.group(1).lower() in p["title"].lower())
                             and (not updated or p["updated_at"] >= updated.group(1))]
                    items.sort(key=lambda p: (p["updated_at"], p["number"]))
                    return self._page(entry, items, wrap=lambda chunk: {
                        "total_count": len(items), "incomplete_results": False, "items": chunk})
                self._send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                entry = self._log(raw.decode())
                if self._fault(entry["path"]):
                    return
                if entry["path"] == "/login/oauth/access_token":
                    return self._access_token(entry, raw)
                if self._rate_limited():
                    return
                match = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", entry["path"])
                if not match:
                    return self._send(404, {"message": "Not Found"})
                if not entry["headers"].get("authorization"):
                    return self._send(401, {"message": "Requires authentication"})
                with fake._lock:
                    fake.next_comment_id += 1
                    comment_id = fake.next_comment_id
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                the_comment = payloads.comment(comment_id, fake.token_login, json.loads(raw)["body"], now,
                                               repo=match.group(1), issue=int(match.group(2)))
                fake.add_comment(the_comment, match.group(1), int(match.group(2)))
                self._send(201, the_comment, {"Location": the_comment["url"]})

        return Handler
