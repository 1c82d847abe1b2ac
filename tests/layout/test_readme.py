"""The README is a newcomer's first screen: it stays short, shows exactly the two commands, and every link in it
leads somewhere. Measurements live in docs/measurements.md, not here."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 150
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def link_targets(markdown: str) -> list[str]:
    """Relative link targets outside code: a `[#N](url)` inside backticks is an example, not a link."""
    prose = re.sub(r"```.*?```", "", markdown, flags=re.S)
    prose = re.sub(r"`[^`]*`", "", prose)
    return [t for t in LINK.findall(prose) if not re.match(r"[a-z]+:", t)]


def test_readme_fits_a_screen():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; keep it ≤ {MAX_LINES} (figures go to docs/measurements.md)"


def test_readme_shows_exactly_the_two_commands():
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    assert [b.strip() for b in blocks] == ["bash scripts/run.sh", "bash scripts/test.sh"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test.sh" in ci, ".ci/run must call the README's second command"


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    local = link_targets(text)
    assert local, "the README links its docs"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_docs_links_resolve():
    """Moving sections between files must not leave dangling relative links in docs/."""
    missing = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for target in link_targets(doc.read_text(encoding="utf-8")):
            if not (doc.parent / target).exists():
                missing.append(f"{doc.name}: {target}")
    assert not missing, f"dangling links: {missing}"
