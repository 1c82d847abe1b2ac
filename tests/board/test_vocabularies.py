"""The board's named vocabularies (issue 32): one word per meaning, each reached by the rule that gives it, the
stored values unchanged, and the pages that post or show them still reading the same values."""
import pytest
from django.contrib.auth.models import User
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.utils import translation

from apitester.specs import all_specs
from apitester.specs.base import Adaptation
from tests.factories import make_task
from tracker.github.comments import REJECTING_CODES, CommentErrorCode, parse_comment
from tracker.models import Task, TestRun
from tracker.selectors.releases import as_harness_fix, fixed_in
from tracker.selectors.runs import _verification, board_run_actions, run_summary
from tracker.templatetags.releases_tags import fixed_in_short
from tracker.templatetags.runs_tags import scope_summary
from tracker.vocab import (
    AdaptationKind,
    FixedInKind,
    Kernel,
    Lane,
    RunState,
    ScopeKind,
    Status,
    VerificationKind,
    lane_of,
)


def _latest(*statuses, adaptations=()):
    # (status, run id, paddle version, adaptations) of each re-tested config, as task_verification reads them
    return [(status, 1, "3.3.1", list(adaptations)) for status in statuses]


VERIFICATIONS = {
    VerificationKind.UNTESTED: (2, []),
    VerificationKind.FAILING: (2, _latest(Status.ACCURACY_ERROR, Status.PASS)),
    VerificationKind.PARTLY_TESTED: (2, _latest(Status.PASS)),
    VerificationKind.BY_DESIGN: (1, _latest(Status.DOCUMENTED_DIFFERENCE, adaptations=[
        {"kind": AdaptationKind.DOCUMENTED_SEMANTICS.value, "reason": "Paddle documents it"}])),
    VerificationKind.DIFFERS: (2, _latest(Status.PASS, Status.TORCH_SUSPECT)),
    VerificationKind.ENGINE_GAP: (2, _latest(Status.PASS, Status.UNSUPPORTED)),
    VerificationKind.VERIFIED: (2, _latest(Status.PASS, Status.PASS)),
    VerificationKind.FLAKY: (2, _latest(Status.PASS, Status.PASS), 1),  # one config's results disagree
}


def test_every_verification_kind_is_what_its_rule_gives():
    read = {kind: _verification(*args) for kind, args in VERIFICATIONS.items()}
    assert {kind: v.kind for kind, v in read.items()} == {kind: kind for kind in VerificationKind}
    assert read[VerificationKind.BY_DESIGN].reasons == ("Paddle documents it",)
    assert {kind for kind, v in read.items() if v.differs_from_torch} == {
        VerificationKind.BY_DESIGN, VerificationKind.DIFFERS}


FIXED_IN_GRIDS = {
    FixedInKind.FIXED: {1: {"3.0.0": Status.ACCURACY_ERROR, "3.1.0": Status.PASS}},
    FixedInKind.PASSING: {1: {"3.0.0": Status.PASS, "3.1.0": Status.PASS}},
    FixedInKind.REGRESSED: {1: {"3.0.0": Status.PASS, "3.1.0": Status.ACCURACY_ERROR}},
    FixedInKind.PARTLY_FIXED: {1: {"3.1.0": Status.PASS}, 2: {"3.1.0": Status.ACCURACY_ERROR}},
    FixedInKind.DIFFERS_ON_LATEST: {1: {"3.1.0": Status.DOCUMENTED_DIFFERENCE}, 2: {"3.1.0": Status.TORCH_SUSPECT}},
    FixedInKind.NEVER: {1: {"3.0.0": Status.ACCURACY_ERROR, "3.1.0": Status.ACCURACY_ERROR}},
    FixedInKind.UNTESTED: {1: {"3.1.0": Status.UNSUPPORTED}},
}


def test_every_fixed_in_kind_is_what_its_rule_gives():
    answers = {kind: fixed_in(grid) for kind, grid in FIXED_IN_GRIDS.items()}
    assert {kind: a.kind for kind, a in answers.items()} == {kind: kind for kind in FIXED_IN_GRIDS}
    harness = as_harness_fix(answers[FixedInKind.PASSING], ["PFCCLab/PaddleAPITest#7"])
    assert harness.kind == FixedInKind.HARNESS and harness.harness_pr == "PFCCLab/PaddleAPITest#7"
    assert set(FIXED_IN_GRIDS) | {FixedInKind.HARNESS} == set(FixedInKind)
    # The JSON API sees plain strings.
    assert answers[FixedInKind.PARTLY_FIXED].as_dict()["kind"] == "partly_fixed"


def test_a_word_means_one_thing_across_the_two_readings():
    # "untested" is the one shared word, and it means the same in both: no verdict at all yet.
    assert {k.value for k in VerificationKind} & {k.value for k in FixedInKind} == {"untested"}
    assert _verification(3, []).kind == fixed_in({}).kind == "untested"


@pytest.mark.django_db
def test_a_task_is_re_tested_in_its_kernels_lane():
    for kernel, lane in ((Kernel.CPU, Lane.CPU), (Kernel.GPU, Lane.GPU)):
        task = make_task(1 if kernel == Kernel.CPU else 2, kernel=kernel.value)
        assert Task.objects.get(pk=task.pk).lane == lane == kernel.lane == lane_of(kernel.value)
        assert lane.kernel == kernel
    # The stored values stay what they were: kernels as the tracking issue writes them, lanes lower-case.
    assert (Kernel.values, Lane.values, TestRun.Lane.values) == (["CPU", "GPU"], ["cpu", "gpu"], ["cpu", "gpu"])
    with pytest.raises(ValueError):
        lane_of("XPU")


def test_adaptation_kinds_are_one_enum_and_plain_strings_in_verdicts():
    adaptation = Adaptation("documented_semantics", "a reason")
    assert adaptation.kind is AdaptationKind.DOCUMENTED_SEMANTICS
    assert type(adaptation.to_dict()["kind"]) is str and adaptation.to_dict()["kind"] == "documented_semantics"
    with pytest.raises(ValueError, match="unknown adaptation kind 'documented'"):
        Adaptation("documented", "a reason")
    declared = {a.kind for spec in all_specs().values() for a in spec.adaptations}
    assert declared and all(type(kind) is AdaptationKind for kind in declared)


def test_comment_errors_carry_a_named_code_and_plain_strings_in_json():
    parse = parse_comment("【报名】: 9-3、1000", max_task=100)
    assert [e.code for e in parse.errors] == [CommentErrorCode.REVERSED_RANGE, CommentErrorCode.NOT_ON_BOARD]
    assert [type(e["code"]) for e in parse.as_dict()["errors"]] == [str, str]
    assert not parse.rejected
    rejected = parse_comment("【报名】: 1-40", max_task=100, max_tasks=10)
    assert rejected.rejected and rejected.errors[-1].code in REJECTING_CODES
    assert REJECTING_CODES == {CommentErrorCode.TOO_MANY_TASKS, CommentErrorCode.TOO_MANY_LINES,
                               CommentErrorCode.TOO_MANY_NUMBERS}


def test_the_board_cell_formats_each_fixed_in_kind():
    with translation.override("en"):
        cells = {kind: fixed_in_short(fixed_in(grid)) for kind, grid in FIXED_IN_GRIDS.items()}
        harness = fixed_in_short(as_harness_fix(fixed_in(FIXED_IN_GRIDS[FixedInKind.PASSING]),
                                                ["PFCCLab/PaddleAPITest#7"]))
    assert cells == {
        FixedInKind.FIXED: "3.1.0", FixedInKind.PASSING: "all pass", FixedInKind.REGRESSED: "regressed in 3.1.0",
        FixedInKind.PARTLY_FIXED: "partly 1/2", FixedInKind.DIFFERS_ON_LATEST: "—", FixedInKind.NEVER: "—",
        FixedInKind.UNTESTED: "—",
    }
    assert harness == "test engine fix"


def test_a_scope_in_words():
    with translation.override("en"):
        assert scope_summary({"kind": ScopeKind.API, "api": "paddle.clip", "tasks": [3, 4]}) == "API paddle.clip"
        assert scope_summary({"kind": ScopeKind.ALL_OPEN, "tasks": [1, 2, 3]}) == "all open tasks (3)"
        assert scope_summary({"kind": ScopeKind.ALL, "tasks": [1, 2]}) == "every task (2)"
        # a list of task numbers is linked by the template; a scope edited into anything else names nothing
        assert scope_summary({"kind": ScopeKind.TASKS, "tasks": [1, 2]}) == ""
        assert scope_summary({"kind": ScopeKind.ALL, "tasks": "1"}) == "every task (0)"
        assert scope_summary(7) == ""


@pytest.mark.django_db
def test_a_run_says_whether_it_is_still_active():
    make_task(5)
    run = TestRun.objects.create(scope={"kind": ScopeKind.TASK, "tasks": [5]}, lane=Lane.CPU)
    for state, active in ((RunState.QUEUED, True), (RunState.RUNNING, True), (RunState.DONE, False),
                          (RunState.CANCELLED, False), (RunState.FAILED, False)):
        run.state = state
        run.save()
        run.refresh_from_db()
        assert (run.is_active, run.has_failed, run_summary(run)["active"]) == (active, state == RunState.FAILED, active)
    assert TestRun.objects.get().scope == {"kind": "task", "tasks": [5]}


@pytest.mark.django_db
def test_the_staff_forms_post_the_vocabularies_values():
    request = RequestFactory().get("/")
    request.user = User.objects.create_user("maint", is_staff=True)
    html = render_to_string("tracker/partials/board_actions.html", {"run_actions": board_run_actions()},
                            request=request)
    assert html.count('name="scope" value="all_open"') == 2 and html.count('name="scope" value="api"') == 2
    assert 'name="lane" value="cpu"' in html and 'name="lane" value="gpu"' in html
    assert '<option value="cpu">CPU</option><option value="gpu">GPU</option>' in html
    assert 'name="scope" value="all"' in html and 'value=""' not in html


@pytest.mark.django_db
def test_the_task_page_forms_post_its_scope_and_lane(client):
    make_task(8, "paddle.clip", ["paddle.clip(Tensor([3],\"float32\"), min=0.0, max=1.0, )"], kernel="GPU")
    client.force_login(User.objects.create_user("maint", is_staff=True))
    page = client.get("/tasks/8").content.decode()
    # the re-test panel and the per-release panel each post one task on the task's own lane; a GPU task's page also
    # has the CPU-evidence form (one task, on_cpu), which posts no gpu lane
    assert page.count('name="scope" value="task"') == 3 and page.count('name="lane" value="gpu"') == 2
    assert page.count('name="on_cpu" value="1"') == 1
