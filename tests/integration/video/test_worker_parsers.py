"""`topicrawl worker --parsers`: two distributed workers crawl the demo video site and extract
its records through one parser library in PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import pytest
from redis.asyncio import Redis

from topicrawl.demoweb.video import VideoServer, build_video_site
from topicrawl.demoweb.video.schemas import demo_schemas
from topicrawl.storage.parsers import SqlParserStore

TITLES = 6


async def _wait(procs: list[subprocess.Popen[bytes]], timeout: float) -> list[int | None]:
    for _ in range(int(timeout * 10)):
        if all(p.poll() is not None for p in procs):
            break
        await asyncio.sleep(0.1)
    return [p.poll() for p in procs]


@pytest.mark.slow
async def test_two_workers_extract_records_through_one_library(
    redis_url: str, postgres_url: str, tmp_path: Path
) -> None:
    namespace = f"video-{uuid.uuid4().hex[:10]}"
    schema = f"video_{uuid.uuid4().hex[:10]}"
    db = f"{postgres_url}?schema={schema}"
    site = build_video_site(seed=0, titles=TITLES, hard=False)
    procs: list[subprocess.Popen[bytes]] = []
    with VideoServer(site).run_in_thread() as server:
        host = server.base_url.split("//")[1].split(":")[0]
        schemas = tmp_path / "schemas.toml"
        schemas.write_text(demo_schemas(host), encoding="utf-8")
        try:
            for name in ("w1", "w2"):
                argv = [sys.executable, "-m", "topicrawl.cli", "worker", "--node-id", name]
                argv += ["--redis", redis_url, "--namespace", namespace, "--db", db]
                argv += ["--seed", server.base_url + "index.html"]
                argv += ["--seed", server.base_url + "zh/index.html"]
                argv += ["--allow-domain", host, "--max-pages", "0", "--concurrency", "2"]
                argv += ["--parsers", str(schemas), "--quiet", "--heartbeat-interval", "0.3"]
                argv += ["--heartbeat-timeout", "1.5", "--lock-ttl", "1.5"]
                with (tmp_path / f"{name}.log").open("wb") as log:
                    procs.append(
                        subprocess.Popen(
                            argv, env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT
                        )
                    )
            codes = await _wait(procs, 240.0)
            logs = {p: (tmp_path / f"{p}.log").read_text(errors="replace") for p in ("w1", "w2")}
            assert codes == [0, 0], logs
            async with SqlParserStore(db) as store:
                records = await store.records()
                patterns = await store.patterns()
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
            connection = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
            try:
                await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            finally:
                await connection.close()
            client = Redis.from_url(redis_url)
            try:
                keys = [k async for k in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*")]
                if keys:
                    await client.delete(*keys)
            finally:
                await client.aclose()
    details = {u: r for u, r in records.items() if "/title/" in u}
    assert len(details) == TITLES
    for url, record in details.items():
        truth = site.truth("/" + url.split("/", 3)[3]).fields
        assert record["title"] == truth["title"]
        assert record["actors"] == truth["actors"]
        assert record["plays"] == truth["plays"]
    # The workers' counts add up in the shared pattern rows (films' and series' patterns).
    detail = [p for p in patterns if "/title/" in p.pattern]
    assert sum(p.pages for p in detail) == sum(p.successes for p in detail) == TITLES
    assert {p.method for p in detail} == {"rules"}
