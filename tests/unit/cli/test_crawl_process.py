"""`topicrawl crawl` as a process: its exit code when interrupted, and its database lock."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.cli.crawls import crawl_argv, crawl_env, stored_pages, wait_for_pages
from topicrawl.demoweb import DemoWeb, DemoWebServer


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=5, hosts=2, pages_per_host=40)
    demo = DemoWebServer(web)
    with demo.run_in_thread():
        yield demo


@pytest.mark.parametrize(
    ("sig", "code"),
    [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow)],
)
def test_one_interrupt_stops_cleanly_with_exit_128_plus_signal(
    server: DemoWebServer, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    db = tmp_path / "crawl.db"
    child = subprocess.Popen(
        crawl_argv(server, db), env=crawl_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for_pages(db, child, 3)
        child.send_signal(sig)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == code, err.decode()
    assert b"crawl summary" in out
    assert b"Traceback" not in err
    assert 3 <= stored_pages(db) < 80


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("sqlite", "memory"),
        pytest.param("memory", "memory", marks=pytest.mark.slow),
        pytest.param("memory", "sqlite", marks=pytest.mark.slow),
    ],
)
def test_a_second_crawl_of_one_database_is_refused_whatever_its_frontier(
    server: DemoWebServer, tmp_path: Path, first: str, second: str
) -> None:
    db = tmp_path / "crawl.db"
    env = crawl_env()
    server.clear_log()
    child = subprocess.Popen(
        crawl_argv(server, db, "--frontier", first),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_pages(db, child, 2)
        # The refused crawl's own seeds carry a marker, so a fetch it made would show in the log
        # whatever the first crawl fetched (which may retry a seed when the machine is loaded).
        marked = [f"--seed={base}?refused-crawl" for base in server.web.bases().values()]
        again = subprocess.run(
            crawl_argv(server, db, "--frontier", second, *marked),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        log = server.access_log()
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert again.returncode == 4, again.stderr
    assert "in use by another" in again.stderr
    # The refused crawl fetched nothing; the first crawl fetched every seed.
    assert not [r for r in log if "refused-crawl" in r.path]
    assert {r.host for r in log if r.path == "/"} == set(server.web.bases())


def test_a_second_interrupt_quits_at_once_with_exit_130(
    server: DemoWebServer, tmp_path: Path
) -> None:
    db = tmp_path / "crawl.db"
    child = subprocess.Popen(
        crawl_argv(server, db), env=crawl_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for_pages(db, child, 3)
        child.send_signal(signal.SIGINT)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err.decode()
    assert b"Traceback" not in err
    assert b"interrupted by SIGINT" in err


def test_sigusr1_writes_the_crawls_tasks_and_the_crawl_goes_on(
    server: DemoWebServer, tmp_path: Path
) -> None:
    db = tmp_path / "crawl.db"
    child = subprocess.Popen(
        crawl_argv(server, db), env=crawl_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for_pages(db, child, 2)
        child.send_signal(signal.SIGUSR1)
        stored = stored_pages(db)
        wait_for_pages(db, child, stored + 2)  # still crawling after the dump
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err.decode()
    text = err.decode()
    assert "asyncio tasks (SIGUSR1)" in text
    assert "end of tasks" in text
    assert "Crawler.run" in text or "_checkpoint_loop" in text
