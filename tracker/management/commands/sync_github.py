from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tracker.github.client import GitHubError, RateLimited, client_from_settings, parse_issue_ref
from tracker.services.github_sync import sync_github


class Command(BaseCommand):
    help = ("Poll GitHub's REST API: the tracking issue's comments (claims) and the PRs whose title "
            "carries the board prefix in the configured repositories.")

    def add_arguments(self, parser):
        default_repo, default_issue = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
        parser.add_argument("--repo", default=default_repo, help=f"tracking issue repository (default {default_repo})")
        parser.add_argument("--issue", type=int, default=default_issue, help=f"tracking issue number (default {default_issue})")
        parser.add_argument("--pr-repo", action="append", dest="pr_repos", default=None,
                            help="repository searched for PRs (repeatable; default settings.GITHUB_PR_REPOS)")
        parser.add_argument("--prefix", default=None, help="PR title prefix (default settings.GITHUB_PR_TITLE_PREFIX)")
        parser.add_argument("--full", action="store_true",
                            help="ignore the saved cursors: list everything and notice deleted comments")
        parser.add_argument("--no-comments", action="store_true")
        parser.add_argument("--no-pulls", action="store_true")
        parser.add_argument("--max-wait", type=float, default=None,
                            help="longest rate-limit wait in seconds before giving up (default settings)")

    def handle(self, *args, repo, issue, pr_repos, prefix, full, no_comments, no_pulls, max_wait, **options):
        client = client_from_settings(**({"max_wait": max_wait} if max_wait is not None else {}))
        if not settings.GITHUB_TOKEN:
            self.stderr.write("GITHUB_TOKEN is not set: unauthenticated requests have a low rate limit")
        try:
            report = sync_github(client, repo=repo, issue=issue, pr_repos=pr_repos or settings.GITHUB_PR_REPOS,
                                 prefix=prefix or settings.GITHUB_PR_TITLE_PREFIX, full=full,
                                 comments=not no_comments, pulls=not no_pulls)
        except RateLimited as error:
            raise CommandError(f"rate limited by GitHub at {error.url}: retry in {error.wait_seconds:.0f} s "
                               f"(what was read before was applied)") from None
        except GitHubError as error:
            raise CommandError(str(error)) from None
        for line in report.lines():
            self.stdout.write(line)
        waits = client.log.rate_limit_waits
        self.stdout.write(f"requests: {client.log.requests}, 304s: {client.log.not_modified}, "
                          f"rate-limit waits: {len(waits)}" + (f" ({sum(waits):.1f} s)" if waits else ""))
