"""POST /github/webhook: signature, idempotency, malformed input, event routing, one transaction."""
import json
import urllib.parse

import pytest

from tracker.models import Claim, Event, IssueComment, PullRequest, WebhookDelivery

from . import payloads
from .payloads import signature as sign

pytestmark = pytest.mark.usefixtures("webhook_settings")


def deliver(client, event, payload, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958", signature=None,
            raw: bytes | None = None, content_type="application/json"):
    body = raw if raw is not None else json.dumps(payload, ensure_ascii=False).encode()
    headers = {"HTTP_X_GITHUB_EVENT": event, "HTTP_X_GITHUB_DELIVERY": delivery,
               "HTTP_USER_AGENT": "GitHub-Hookshot/044aadd"}
    if signature is not False:
        headers["HTTP_X_HUB_SIGNATURE_256"] = signature or sign(body)
    return client.post("/github/webhook", data=body, content_type=content_type, **headers)


def claim_event(comment_id=2874700001, body="【报名】: 12、13", login="BeingGod", action="created", **kw):
    return payloads.issue_comment_event(action, payloads.comment(comment_id, login, body, "2025-05-12T03:21:45Z", **kw))


def nothing_stored():
    return not (WebhookDelivery.objects.exists() or Claim.objects.exists() or Event.objects.exists()
                or IssueComment.objects.exists() or PullRequest.objects.exists())


def test_ping(client, db):
    response = deliver(client, "ping", {"zen": "Design for failure.", "hook_id": 1})
    assert response.status_code == 200 and response.json()["event"] == "ping"


@pytest.mark.parametrize("signature", [False, "sha256=" + "0" * 64, "sha1=abc", sign(b"other body")])
def test_missing_or_wrong_signature_is_401_and_changes_nothing(client, board, signature):
    response = deliver(client, "issue_comment", claim_event(), signature=signature)
    assert response.status_code == 401
    assert nothing_stored()


def test_signature_with_another_secret_is_401(client, board):
    body = json.dumps(claim_event()).encode()
    response = deliver(client, "issue_comment", None, raw=body, signature=sign(body, "another secret"))
    assert response.status_code == 401 and nothing_stored()


def test_no_secret_configured_refuses_everything(client, board, settings):
    settings.GITHUB_WEBHOOK_SECRET = ""
    body = json.dumps(claim_event()).encode()
    response = deliver(client, "issue_comment", None, raw=body, signature=payloads.signature(body, b""))
    assert response.status_code == 401 and nothing_stored()


@pytest.mark.parametrize("raw", [b'{"action": "created", "comment": ', b"not json", b"\xff\xfe", b'["a list"]'])
def test_malformed_json_is_400_and_changes_nothing(client, board, raw):
    response = deliver(client, "issue_comment", None, raw=raw)
    assert response.status_code == 400
    assert "malformed" in response.json()["error"]
    assert nothing_stored()


def test_missing_delivery_header_is_400(client, board):
    body = json.dumps(claim_event()).encode()
    response = client.post("/github/webhook", data=body, content_type="application/json",
                           HTTP_X_GITHUB_EVENT="issue_comment", HTTP_X_HUB_SIGNATURE_256=sign(body))
    assert response.status_code == 400 and nothing_stored()


def test_comment_created_claims_and_redelivery_is_applied_once(client, board):
    response = deliver(client, "issue_comment", claim_event(), delivery="d-1")
    assert response.status_code == 200
    assert response.json()["claimed"] == [12, 13]
    event = Event.objects.get(task__number=12, kind="claimed")
    assert event.source_ref.endswith("#issuecomment-2874700001") and event.data["delivery"] == "d-1"
    assert WebhookDelivery.objects.get(delivery_id="d-1").outcome == "3 change(s)"
    count = Event.objects.count()
    again = deliver(client, "issue_comment", claim_event(), delivery="d-1")
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert Event.objects.count() == count and WebhookDelivery.objects.count() == 1


def test_edited_and_deleted(client, board):
    deliver(client, "issue_comment", claim_event(), delivery="d-1")
    edited = claim_event(action="edited", body="【报名】: 12", updated_at="2025-05-12T05:00:00Z")
    assert deliver(client, "issue_comment", edited, delivery="d-2").json()["withdrawn"] == [13]
    deleted = claim_event(action="deleted", body="【报名】: 12", updated_at="2025-05-12T05:00:00Z")
    assert deliver(client, "issue_comment", deleted, delivery="d-3").json()["withdrawn"] == [12]
    assert not Claim.objects.filter(withdrawn_at__isnull=True).exists()


def test_comment_on_another_issue_is_ignored(client, board):
    other = payloads.issue_comment_event("created", payloads.comment(1, "BeingGod", "【报名】: 12", "2025-05-12T03:21:45Z"),
                                         number=70000)
    response = deliver(client, "issue_comment", other)
    assert response.status_code == 202
    assert not Claim.objects.exists()
    other_repo = payloads.issue_comment_event("created", payloads.comment(2, "BeingGod", "【报名】: 12",
                                                                          "2025-05-12T03:21:45Z"),
                                              repo="PFCCLab/PaddleAPITest", number=72667)
    assert deliver(client, "issue_comment", other_repo, delivery="d-9").status_code == 202
    assert not Claim.objects.exists()


@pytest.mark.parametrize("event, payload", [
    ("push", {"ref": "refs/heads/develop", "commits": []}),
    ("star", {"action": "created"}),
    ("issues", {"action": "opened", "issue": payloads.issue()}),
    ("pull_request", {"action": "synchronize", "pull_request": payloads.pull(1, "[Accuracy diff No.1] x", "a")}),
    ("issue_comment", {"action": "pinned"}),
])
def test_other_events_are_202(client, board, event, payload):
    response = deliver(client, event, payload)
    assert response.status_code == 202
    assert not Claim.objects.exists() and not PullRequest.objects.exists()


def test_pull_request_opened_then_merged(client, board):
    pull = payloads.pull(73012, "[Accuracy diff No.55-56] gelu", "ooooo-create")
    assert deliver(client, "pull_request", payloads.pull_request_event("opened", pull), delivery="p-1").status_code == 200
    closed = payloads.pull(73012, "[Accuracy diff No.55-56] gelu", "ooooo-create", state="closed", merged=True,
                           updated_at="2025-05-25T00:00:00Z", merged_at="2025-05-25T00:00:00Z")
    deliver(client, "pull_request", payloads.pull_request_event("closed", closed), delivery="p-2")
    assert Claim.objects.get(task__number=55).status == "完成任务"
    # the "reopened"-era opened event arriving last changes nothing
    deliver(client, "pull_request", payloads.pull_request_event("edited", pull), delivery="p-3")
    assert PullRequest.objects.get(number=73012).state == "merged"
    assert Event.objects.filter(kind="pr_linked", data__delivery="p-1").count() == 2


def test_pull_request_in_another_repo_is_ignored(client, board):
    pull = payloads.pull(5, "[Accuracy diff No.55] gelu", "someone", repo="someone/fork")
    response = deliver(client, "pull_request", payloads.pull_request_event("opened", pull, repo="someone/fork"))
    assert response.status_code == 202 and not PullRequest.objects.exists()


def test_form_encoded_delivery(client, board):
    body = urllib.parse.urlencode({"payload": json.dumps(claim_event(), ensure_ascii=False)}).encode()
    response = deliver(client, "issue_comment", None, raw=body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200 and response.json()["claimed"] == [12, 13]


def test_a_failing_delivery_leaves_nothing_behind_and_can_be_redelivered(client, board):
    # updated_at is not a real date: the comment fails after the delivery row was written.
    broken = claim_event(updated_at="2025-02-30T25:00:00Z")
    response = deliver(client, "issue_comment", broken, delivery="d-broken")
    assert response.status_code == 400
    assert nothing_stored()
    fixed = claim_event()
    assert deliver(client, "issue_comment", fixed, delivery="d-broken").status_code == 200
    assert Claim.objects.count() == 2


def test_bot_comment_via_webhook(client, board):
    response = deliver(client, "issue_comment", claim_event(login="paddle-bot", body="【报名】: 1-5"))
    assert response.status_code == 200
    assert not Claim.objects.exists()


def test_get_is_not_allowed(client, db):
    assert client.get("/github/webhook").status_code == 405


def test_failure_half_way_rolls_back_the_whole_delivery(client, board):
    """The database refuses the second claim's event: the first claim must not stay behind either."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("CREATE TRIGGER refuse_13 BEFORE INSERT ON tracker_event WHEN NEW.message LIKE '%No.13%' "
                           "BEGIN SELECT RAISE(ABORT, 'refused by test trigger'); END")
            drop = "DROP TRIGGER refuse_13"
        elif connection.vendor == "postgresql":
            cursor.execute("CREATE FUNCTION refuse_13() RETURNS trigger AS $$ BEGIN IF NEW.message LIKE '%No.13%' "
                           "THEN RAISE EXCEPTION 'refused by test trigger'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
            cursor.execute("CREATE TRIGGER refuse_13 BEFORE INSERT ON tracker_event FOR EACH ROW "
                           "EXECUTE FUNCTION refuse_13()")
            drop = "DROP TRIGGER refuse_13 ON tracker_event; DROP FUNCTION refuse_13()"
        else:
            pytest.skip(f"no test trigger for {connection.vendor}")
    try:
        client.raise_request_exception = True
        with pytest.raises(Exception, match="refused by test trigger"):
            deliver(client, "issue_comment", claim_event(), delivery="d-half")
        assert nothing_stored()
    finally:
        with connection.cursor() as cursor:
            cursor.execute(drop)
    assert deliver(client, "issue_comment", claim_event(), delivery="d-half").status_code == 200
    assert Claim.objects.count() == 2


@pytest.mark.parametrize("raw, content_type", [
    (b"[" * 100_000, "application/json"),
    (b'{"action": "created", "comment": ' + b'{"a": ' * 50_000, "application/json"),
    (b"payload=" + b"%5B" * 100_000, "application/x-www-form-urlencoded"),
])
def test_deeply_nested_json_is_400_and_changes_nothing(client, board, raw, content_type):
    response = deliver(client, "issue_comment", None, raw=raw, content_type=content_type)
    assert response.status_code == 400
    assert response.json()["error"] == "malformed JSON payload: nested too deeply"
    assert nothing_stored()


def test_the_service_says_what_became_of_a_delivery_and_the_view_chooses_the_status(client, board):
    """services.webhook_deliveries answers a DeliveryOutcome, never an HTTP code; web/github.py maps each to one."""
    from tracker.services.webhook_deliveries import DeliveryOutcome, DeliveryResult, handle_delivery
    from tracker.web.github import WEBHOOK_STATUS

    assert set(WEBHOOK_STATUS) == set(DeliveryOutcome)
    seen = [handle_delivery("ping", "d-ping", {"zen": "Keep it logically awesome."}),
            handle_delivery("issue_comment", "d-claim", claim_event()),
            handle_delivery("issue_comment", "d-claim", claim_event()),
            handle_delivery("watch", "d-watch", {"action": "started"})]
    assert all(isinstance(result, DeliveryResult) for result in seen)
    assert [r.outcome for r in seen] == [DeliveryOutcome.PING, DeliveryOutcome.APPLIED, DeliveryOutcome.DUPLICATE,
                                         DeliveryOutcome.IGNORED]
    assert seen[1].answer["delivery"] == "d-claim" and seen[1].answer["changes"] >= 1
    assert seen[2].answer == {"duplicate": True, "delivery": "d-claim"}
    assert seen[3].answer == {"delivery": "d-watch", "ignored": "event 'watch'"}
    # Over HTTP the same outcomes answer as they always did.
    statuses = [deliver(client, event, payload, delivery=f"h-{n}").status_code for n, (event, payload) in enumerate(
        [("ping", {"zen": "z"}), ("issue_comment", claim_event(comment_id=2874700002, body="【报名】: 13")),
         ("watch", {"action": "started"})])]
    assert statuses == [200, 200, 202]
    assert deliver(client, "ping", {"zen": "z"}, delivery="h-0").status_code == 200  # a redelivery
