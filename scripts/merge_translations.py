"""Merge the streams' Chinese strings (locale_src/*.po, bare msgid/msgstr pairs) into the catalogue.

    python scripts/merge_translations.py            # merge, then compile with msgfmt
    python scripts/merge_translations.py --check    # exit 1 when a locale_src string is missing or differs

Entries the catalogue already translates keep the catalogue's text (the board stream owns it) unless
--prefer-src is given; new msgids are appended. The compiled .mo is written next to the .po.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
SOURCES = ROOT / "locale_src"

_KEY_RE = re.compile(r'^(msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)\s+(".*")\s*$')
_CONT_RE = re.compile(r'^(".*")\s*$')


def parse_po(text: str) -> list[dict]:
    """Entries as {"msgctxt"?, "msgid", "msgid_plural"?, "msgstr" | "msgstr[0]"…, "#": [comment lines]}."""
    entries, current, key = [], {"#": []}, None
    for raw in text.splitlines() + [""]:
        line = raw.strip()
        if not line:
            if any(k != "#" for k in current):
                entries.append(current)
            current, key = {"#": []}, None
            continue
        if line.startswith("#"):
            if any(k != "#" for k in current) and key and key.startswith("msgstr"):
                entries.append(current)
                current, key = {"#": []}, None
            current["#"].append(raw)
            continue
        match = _KEY_RE.match(line)
        if match:
            key = match.group(1)
            if key in ("msgid", "msgctxt") and "msgid" in current and key == "msgid" or (key == "msgctxt" and "msgid" in current):
                entries.append(current)
                current = {"#": []}
            current[key] = ast.literal_eval(match.group(2))
            continue
        match = _CONT_RE.match(line)
        if match and key:
            current[key] += ast.literal_eval(match.group(1))
            continue
        raise ValueError(f"cannot read line {raw!r}")
    return entries


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def format_entry(entry: dict) -> str:
    lines = [c for c in entry.get("#", []) if not c.startswith("#~")]
    for key in ("msgctxt", "msgid", "msgid_plural"):
        if key in entry:
            lines.append(f"{key} {_quote(entry[key])}")
    for key in sorted(k for k in entry if k.startswith("msgstr")):
        lines.append(f"{key} {_quote(entry[key])}")
    return "\n".join(lines)


def _translated(entry: dict) -> bool:
    return any(entry[k] for k in entry if k.startswith("msgstr"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--prefer-src", action="store_true")
    args = parser.parse_args(argv)
    catalogue = parse_po(CATALOGUE.read_text(encoding="utf-8"))
    index = {(e.get("msgctxt"), e["msgid"]): e for e in catalogue}
    missing, changed = [], 0
    for source in sorted(SOURCES.glob("*.po")):
        for entry in parse_po(source.read_text(encoding="utf-8")):
            if not entry.get("msgid"):
                continue  # a header
            key = (entry.get("msgctxt"), entry["msgid"])
            current = index.get(key)
            if current is None:
                missing.append(f"{source.name}: {entry['msgid']!r}")
                entry = dict(entry, **{"#": [f"#: locale_src/{source.name}"]})
                catalogue.append(entry)
                index[key] = entry
                changed += 1
            elif not _translated(current) or (args.prefer_src and _translated(entry)):
                updates = {k: v for k, v in entry.items() if k.startswith("msgstr")}
                if any(current.get(k) != v for k, v in updates.items()):
                    missing.append(f"{source.name}: {entry['msgid']!r}")
                    current.update(updates)
                    for comment in list(current["#"]):
                        if comment.startswith("#,") and "fuzzy" in comment:
                            current["#"].remove(comment)
                    changed += 1
    if args.check:
        for line in missing:
            print(f"not in the catalogue: {line}")
        return 1 if missing else 0
    CATALOGUE.write_text("\n\n".join(format_entry(e) for e in catalogue) + "\n", encoding="utf-8")
    subprocess.run(["msgcat", "-o", str(CATALOGUE), str(CATALOGUE)], check=True)  # gettext's own layout
    subprocess.run(["msgfmt", "--check-format", "-o", str(CATALOGUE.with_suffix(".mo")), str(CATALOGUE)], check=True)
    print(f"{changed} entries merged into {CATALOGUE.relative_to(ROOT)}; compiled {CATALOGUE.with_suffix('.mo').name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
