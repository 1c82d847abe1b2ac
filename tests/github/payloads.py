"""GitHub objects in the shape GitHub's REST API and webhooks send them (fields trimmed to what matters
plus enough of the rest to look like the recorded responses)."""
from __future__ import annotations

import hashlib
import hmac

REPO = "PaddlePaddle/Paddle"
ISSUE = 72667
API = "https://api.github.com"


def user(login: str, user_id: int = 1000, kind: str = "User") -> dict:
    return {
        "login": login, "id": user_id, "node_id": f"MDQ6VXNlcj{user_id}", "type": kind, "site_admin": False,
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        "url": f"{API}/users/{login}", "html_url": f"https://github.com/{login}",
    }


def comment(comment_id: int, login: str, body: str, created_at: str, updated_at: str | None = None,
            repo: str = REPO, issue: int = ISSUE) -> dict:
    return {
        "url": f"{API}/repos/{repo}/issues/comments/{comment_id}",
        "html_url": f"https://github.com/{repo}/issues/{issue}#issuecomment-{comment_id}",
        "issue_url": f"{API}/repos/{repo}/issues/{issue}",
        "id": comment_id,
        "node_id": f"IC_kwDOBbs8Ds6{comment_id}",
        "user": user(login, 10_000 + sum(map(ord, login))),
        "created_at": created_at,
        "updated_at": updated_at or created_at,
        "author_association": "CONTRIBUTOR",
        "body": body,
        "reactions": {"total_count": 0, "+1": 0, "-1": 0},
        "performed_via_github_app": None,
    }


def repository(full_name: str = REPO) -> dict:
    owner, name = full_name.split("/")
    return {"id": 23534380, "name": name, "full_name": full_name, "private": False,
            "owner": user(owner, 23534030, "Organization"), "html_url": f"https://github.com/{full_name}"}


def issue(number: int = ISSUE, repo: str = REPO) -> dict:
    return {
        "url": f"{API}/repos/{repo}/issues/{number}", "html_url": f"https://github.com/{repo}/issues/{number}",
        "number": number, "title": "【开源任务】Paddle CPU/GPU Kernel 精度问题推全", "state": "open",
        "user": user("lshpku", 31035432),
    }


def pull(number: int, title: str, login: str, *, repo: str = REPO, state: str = "open", merged: bool = False,
         created_at: str = "2025-05-20T08:00:00Z", updated_at: str = "2025-05-20T08:00:00Z",
         closed_at: str | None = None, merged_at: str | None = None) -> dict:
    """A webhook `pull_request` object (also what GET /repos/{repo}/pulls/{n} returns)."""
    return {
        "url": f"{API}/repos/{repo}/pulls/{number}", "id": 2_500_000_000 + number,
        "html_url": f"https://github.com/{repo}/pull/{number}", "number": number, "state": state,
        "locked": False, "title": title, "user": user(login, 20_000 + number), "body": "### PR Category\nAccuracy diff",
        "created_at": created_at, "updated_at": updated_at, "closed_at": closed_at, "merged_at": merged_at,
        "merged": merged, "draft": False,
        "base": {"ref": "develop", "repo": repository(repo)}, "head": {"ref": f"fix-{number}"},
    }


def search_item(number: int, title: str, login: str, *, repo: str = REPO, state: str = "open",
                created_at: str = "2025-05-20T08:00:00Z", updated_at: str = "2025-05-20T08:00:00Z",
                closed_at: str | None = None, merged_at: str | None = None) -> dict:
    """An item of GET /search/issues for a pull request."""
    return {
        "url": f"{API}/repos/{repo}/issues/{number}", "repository_url": f"{API}/repos/{repo}",
        "html_url": f"https://github.com/{repo}/pull/{number}", "id": 3_000_000_000 + number,
        "number": number, "title": title, "user": user(login, 20_000 + number), "state": state,
        "locked": False, "comments": 3, "created_at": created_at, "updated_at": updated_at, "closed_at": closed_at,
        "author_association": "CONTRIBUTOR", "draft": False,
        "pull_request": {
            "url": f"{API}/repos/{repo}/pulls/{number}", "html_url": f"https://github.com/{repo}/pull/{number}",
            "diff_url": f"https://github.com/{repo}/pull/{number}.diff",
            "patch_url": f"https://github.com/{repo}/pull/{number}.patch", "merged_at": merged_at,
        },
        "body": "### PR Category\nAccuracy diff", "score": 1.0,
    }


def issue_comment_event(action: str, the_comment: dict, *, repo: str = REPO, number: int = ISSUE) -> dict:
    return {"action": action, "issue": issue(number, repo), "comment": the_comment, "repository": repository(repo),
            "sender": the_comment["user"]}


def pull_request_event(action: str, the_pull: dict, *, repo: str = REPO) -> dict:
    return {"action": action, "number": the_pull["number"], "pull_request": the_pull,
            "repository": repository(repo), "sender": the_pull["user"]}


# The webhook secret every webhook test configures (the `webhook_settings` fixture in tests/conftest.py).
WEBHOOK_SECRET = "It's a Secret to Everybody"


def signature(body: bytes, secret: str | bytes = WEBHOOK_SECRET) -> str:
    """GitHub's X-Hub-Signature-256 of a delivery body."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
