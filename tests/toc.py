"""The book's table of contents and configuration, as the tests read them."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def toc_files() -> list[str]:
    """Every document of _toc.yml, in reading order, without its suffix."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return files


def book_config() -> dict:
    """The book's _config.yml."""
    return yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
