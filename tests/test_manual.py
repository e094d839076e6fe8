"""The manual: a short README, an MkDocs site that builds with --strict (no broken link or
anchor, no page outside the navigation), and nothing that points at files users never get."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def nav_pages(entries) -> set[str]:
    pages: set[str] = set()
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages |= nav_pages(value)
        else:
            pages.add(value)
    return pages


def test_the_readme_is_short():
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


def test_nothing_users_read_points_at_the_teams_shared_folder():
    texts = [REPO / "README.md", *DOCS.rglob("*"), *(REPO / "templates").rglob("*")]
    offenders = [
        str(path.relative_to(REPO))
        for path in texts
        if path.is_file()
        and path.suffix in {".md", ".html", ".yaml", ".yml", ".py", ".txt", ".jinja", ""}
        and (
            "../shared" in path.read_text(errors="replace")
            or "/work/shared" in path.read_text(errors="replace")
        )
    ]
    assert offenders == []


def test_every_page_is_in_the_navigation():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    pages = {
        str(path.relative_to(DOCS))
        for path in DOCS.rglob("*.md")
        if "hooks" not in path.relative_to(DOCS).parts
    }
    assert pages - nav_pages(config["nav"]) == set()
    assert nav_pages(config["nav"]) - pages == set()


def test_the_site_builds_strictly_with_the_generated_cli_reference(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reference = (site / "reference" / "cli" / "index.html").read_text()
    assert "<!-- cli-reference -->" not in reference  # the marker was replaced
    for command in ("evaluate", "answers", "health", "permissions"):
        assert f'id="{command}"' in reference
    assert (site / "api" / "traces.yaml").is_file()
    assert (site / "images" / "grading.png").is_file()
