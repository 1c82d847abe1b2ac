"""GitHub logins: the one rule every source of a login checks (webhook, poller, board import, sign-in).

GitHub's rule for a user name: 1–39 characters, ASCII letters, digits and single hyphens, neither
starting nor ending with a hyphen. GitHub Apps act as `<app-slug>[bot]` (`dependabot[bot]`,
`github-actions[bot]`): those logins are real — they comment and open pull requests — so they are
accepted with the same rule for the slug; the claim service never credits a bot with a claim.

Anything else (`<script>`, `a/b?c#d`, spaces, non-ASCII) is not a login GitHub can send, so it is
refused where it enters, with the reason, and never stored: a stored login becomes a URL
(`/contributors/<login>`) on every page that names it. Django-free.
"""
from __future__ import annotations

import re

MAX_LOGIN_CHARS = 39
BOT_SUFFIX = "[bot]"

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
LOGIN_PATTERN = _NAME + r"(?:\[bot\])?"  # for parsers that find logins inside text
_LOGIN = re.compile(LOGIN_PATTERN)


def login_problem(login) -> str | None:
    """Why `login` is not a GitHub login, or None when it is one."""
    if not isinstance(login, str):
        return f"a GitHub login must be a string, not {type(login).__name__}"
    if _LOGIN.fullmatch(login):
        return None
    shown = repr(login[:60]) + ("…" if len(login) > 60 else "")
    return (f"{shown} is not a GitHub login (1–{MAX_LOGIN_CHARS} letters, digits or single hyphens, "
            f"no hyphen first or last; an app's bot is `name{BOT_SUFFIX}`)")


def is_github_login(login) -> bool:
    return login_problem(login) is None
