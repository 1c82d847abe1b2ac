"""HTTP side of the GitHub sync: the webhook endpoint, site claiming and the profile page."""
from __future__ import annotations

import json
import urllib.parse

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseNotAllowed, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import params
from ..models import Task
from ..services import site_claims
from ..github.webhook import BadDelivery, header_problem, signature_is_valid
from ..services.webhook_deliveries import DeliveryOutcome, handle_delivery

# GitHub caps webhook payloads at 25 MB, but the events the board reads are a few kB: a larger body is
# refused before it is read or hashed.
WEBHOOK_MAX_BYTES = 1024 * 1024
# What became of a delivery → the HTTP status GitHub's delivery log shows: 202 for what the board does not
# follow (accepted, nothing to do), 200 for everything it read (a redelivery included).
WEBHOOK_STATUS = {DeliveryOutcome.PING: 200, DeliveryOutcome.APPLIED: 200, DeliveryOutcome.DUPLICATE: 200,
                  DeliveryOutcome.IGNORED: 202}


@csrf_exempt
def webhook(request):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > WEBHOOK_MAX_BYTES:
        return JsonResponse({"error": f"payload larger than {WEBHOOK_MAX_BYTES} bytes"}, status=413)
    body = request.body
    if len(body) > WEBHOOK_MAX_BYTES:
        return JsonResponse({"error": f"payload larger than {WEBHOOK_MAX_BYTES} bytes"}, status=413)
    if not signature_is_valid(settings.GITHUB_WEBHOOK_SECRET, body, request.headers.get("X-Hub-Signature-256")):
        return JsonResponse({"error": "missing or invalid X-Hub-Signature-256"}, status=401)
    event = request.headers.get("X-GitHub-Event", "")
    delivery_id = request.headers.get("X-GitHub-Delivery", "")
    if problem := header_problem(event, delivery_id):
        return JsonResponse({"error": problem}, status=400)
    try:
        if request.content_type == "application/x-www-form-urlencoded":
            # GitHub's "application/x-www-form-urlencoded" content type sends the JSON as `payload=`.
            raw = urllib.parse.parse_qs(body.decode("utf-8")).get("payload", [""])[0]
        else:
            raw = body.decode("utf-8")
        payload = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as error:
        return JsonResponse({"error": f"malformed JSON payload: {error}"}, status=400)
    except RecursionError:
        # `[[[[…` a hundred thousand deep fits in the size limit; json's reader gives up at Python's
        # recursion limit. No event GitHub sends nests more than a few levels.
        return JsonResponse({"error": "malformed JSON payload: nested too deeply"}, status=400)
    if not isinstance(payload, dict):
        return JsonResponse({"error": "malformed payload: expected a JSON object"}, status=400)
    try:
        result = handle_delivery(event, delivery_id, payload)
    except BadDelivery as error:
        return JsonResponse({"error": f"malformed {event} payload: {error}"}, status=400)
    return JsonResponse(result.answer, status=WEBHOOK_STATUS[result.outcome], json_dumps_params={"ensure_ascii": False})


# The site's claim buttons: the URL's action → the service that applies it for the signed-in user.
SITE_ACTIONS = {"claim": site_claims.claim_on_site, "withdraw": site_claims.withdraw_on_site}


@login_required
@require_POST
def site_action(request, number: int, action: str):
    """Claim or withdraw from a task as the signed-in user (urls_github.py names the action), then go back."""
    task = get_object_or_404(Task, number=number)
    limited = _rate_limited(request, task)
    if limited:
        return limited
    outcome = SITE_ACTIONS[action](request.user, task)
    _report(request, outcome)
    return params.redirect_back(request)


def _rate_limited(request, task):
    """429 with the reason when the user has claimed/withdrawn too often (each one may post on GitHub)."""
    limit = site_claims.take_rate_limit(request.user)
    if limit.allowed:
        return None
    response = render(request, "tracker/rate_limited.html", {
        "title": _("Too many requests"), "message": limit.message, "task": task, "back": params.back_target(request),
    }, status=429)
    response["Retry-After"] = str(limit.retry_after)
    return response


def _report(request, outcome: site_claims.SiteOutcome):
    level = messages.SUCCESS if outcome.ok else messages.ERROR
    messages.add_message(request, level, outcome.message)
    if outcome.comment_to_paste:
        request.session["github_comment_to_paste"] = {
            "task": outcome.task_number, "body": outcome.comment_to_paste, "issue_url": outcome.issue_url,
        }
    else:
        request.session.pop("github_comment_to_paste", None)


@login_required
def profile(request):
    """The GitHub account the user signed in with, and their tasks. The login is never typed in: it
    is the one GitHub vouched for (sign in / connect with GitHub)."""
    contributor = site_claims.site_contributor(request.user)
    claims = contributor.claims.select_related("task").order_by("task__number") if contributor else []
    return render(request, "tracker/github_profile.html", {
        "contributor": contributor, "claims": claims, "title": _("GitHub profile"),
    })
