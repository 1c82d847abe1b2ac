"""Shared helpers of the board tests: real seed file, real PaddleAPITest reports, module-scoped imports."""
from pathlib import Path

import pytest
from django.conf import settings

from tracker.models import Claim, Contributor, Event, FailingConfig, PullRequest, Task
from tracker.selectors.reported import reports_root

REPO = Path(settings.BASE_DIR)
SEED_CANDIDATES = [REPO.parent / "shared" / "seed" / "000_75df1ea3bdaae918.txt", Path("/work/shared/seed/000_75df1ea3bdaae918.txt")]
SEED = next((p for p in SEED_CANDIDATES if p.is_file()), SEED_CANDIDATES[0])
REPORTS = reports_root()
FIXTURE = REPO / "fixtures" / "board.json"



@pytest.fixture
def require_seed():
    """Missing data FAILS a test that needs it (a skip would hide the feature breaking)."""
    if not SEED.is_file():
        pytest.fail(f"seed board not found at {SEED}")


@pytest.fixture
def require_reports():
    if not (REPORTS / "reports").is_dir():
        pytest.fail(f"PaddleAPITest reports not found at {REPORTS} (set PADDLEAPITEST_REPORTS)")


needs_seed = pytest.mark.usefixtures("require_seed")
needs_reports = pytest.mark.usefixtures("require_reports")


def wipe_board():
    """Remove everything a module-scoped fixture stored, so other test modules start from an empty board."""
    FailingConfig.objects.all().delete()
    Event.objects.all().delete()
    Claim.objects.all().delete()
    PullRequest.objects.all().delete()
    Task.objects.all().delete()
    Contributor.objects.all().delete()


@pytest.fixture(scope="module")
def fixture_board(django_db_setup, django_db_blocker):
    """The committed board fixture (the seed as imported), loaded once per module."""
    from django.core.management import call_command

    with django_db_blocker.unblock():
        wipe_board()
        call_command("loaddata", str(FIXTURE), verbosity=0)
    yield
    with django_db_blocker.unblock():
        wipe_board()


def write_report_tree(root: Path, files: dict[str, str]) -> Path:
    """Build a small report layout in tmp_path: {relative path: text}."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
