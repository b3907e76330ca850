"""`topicrawl export` as a process: read-only databases, bad --output, failures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from topicrawl.core.models import ErrorKind, FetchFailure, Page
from topicrawl.storage import SqlStorage


def export(*args: str, wrap: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "topicrawl.cli", "export", *args]
    return subprocess.run(
        [*(wrap or []), *argv], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
async def database(tmp_path: Path) -> Path:
    path = tmp_path / "crawl" / "crawl.db"
    async with SqlStorage(str(path)) as storage:
        await storage.save_page(
            Page("https://a/", "https://a/", 200, 0, 1.0, "text/html", title="=cmd|' /C calc'!A0"),
            run_id=1,
        )
        await storage.save_failure(
            FetchFailure("https://b/", ErrorKind.TIMEOUT, "timed out", 2.0), run_id=1
        )
    return path


def _read_only_mount() -> list[str] | None:
    """A command prefix that runs a shell command in a private mount namespace, or None
    where mounts cannot be made (not root, no unshare)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp"],
        capture_output=True,
        check=False,
    )
    return ["unshare", "-m", "sh", "-c"] if probe.returncode == 0 else None


def test_a_database_on_read_only_media_exports(database: Path, tmp_path: Path) -> None:
    prefix = _read_only_mount()
    if prefix is None:
        pytest.skip("needs unshare and mount (root) to make read-only media")
    folder = database.parent
    out = tmp_path / "pages.jsonl"
    script = (
        f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}' && "
        f"touch '{folder}/probe' 2>/dev/null && exit 99; "
        f"exec {sys.executable} -m topicrawl.cli export --db '{database}' --output '{out}'"
    )
    result = subprocess.run(
        [*prefix, script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["url"] for line in out.read_text().splitlines()] == ["https://a/"]

    into_read_only = (
        f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}' && "
        f"exec {sys.executable} -m topicrawl.cli export --db '{database}' "
        f"--output '{folder}/pages.jsonl'"
    )
    result = subprocess.run(
        [*prefix, into_read_only], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "Read-only file system" in result.stderr


def test_output_into_a_missing_directory_is_a_clear_error(database: Path, tmp_path: Path) -> None:
    result = export("--db", str(database), "--output", str(tmp_path / "nope" / "out.jsonl"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: cannot write --output {tmp_path / 'nope' / 'out.jsonl'}: directory "
        f"{tmp_path / 'nope'} does not exist"
    ]


def test_a_failed_export_leaves_the_old_output(database: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages.csv"
    out.write_text("older export\n")
    result = export("--db", str(database), "--format", "warc", "--what", "failures",
                    "--output", str(out))  # fmt: skip
    assert result.returncode == 2
    assert out.read_text() == "older export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crawl", "pages.csv"]


def test_failures_are_listed_and_csv_cells_escaped(database: Path, tmp_path: Path) -> None:
    failures = export("--db", str(database), "--what", "failures")
    pages = export("--db", str(database), "--format", "csv")
    assert failures.returncode == 0, failures.stderr
    assert [json.loads(line)["url"] for line in failures.stdout.splitlines()] == ["https://b/"]
    assert "exported 1 failures" in failures.stderr
    assert pages.returncode == 0, pages.stderr
    assert "'=cmd|' /C calc'!A0" in pages.stdout
