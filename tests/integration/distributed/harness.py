"""Runs distributed crawls of the demo web: worker and coordinator processes, PG and Redis."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
from redis.asyncio import Redis

from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.demoweb.truth import CrawlRules, expected_crawl
from topicrawl.distributed import NodeRegistry, NodeState
from topicrawl.engine import open_storage, run_crawl

MAX_DEPTH = 6
# Seconds a wait for something sure to happen may last before the test fails: it only ends a
# wait that would never end. Starting a worker alone took over 30 s on the 2-core machine
# with a load of 12 (a bound of 30 s failed a run there with the workers' logs still empty).
PATIENCE = 300.0
# Seconds a lease lasts: longer than any test holds writes back (Cluster.writes_held), so no
# lease expires meanwhile (its URL would be fetched again, and some tests count refetches).
# A dead worker's leases go back when it is declared dead, not when they expire.
LEASE_TTL = 2 * PATIENCE
ENV = {
    "TOPICRAWL_STORAGE__FLUSH_INTERVAL": "0.2",
    "TOPICRAWL_FETCH__TIMEOUT": "5",
    "TOPICRAWL_FETCH__BACKOFF_BASE": "0.05",
    "TOPICRAWL_FETCH__BACKOFF_MAX": "1",
    "TOPICRAWL_PARSE_WORKERS": "0",
}


def crawl_settings(server: DemoWebServer, db: str, **extra: object) -> CrawlSettings:
    """The crawl every test runs (the single-process reference uses the same)."""
    bases = server.web.bases()
    options: dict[str, object] = {
        "seeds": tuple(bases.values()),
        "strategy": "bfs",
        "max_pages": 0,
        "concurrency": 4,
        "parse_workers": 0,
        "politeness": {"per_host": 2},
        "scope": {"allowed_domains": tuple(bases), "max_depth": MAX_DEPTH},
        "fetch": {"timeout": 5.0, "backoff_base": 0.05, "backoff_max": 1.0},
        "storage": {"url": db, "flush_interval": 0.2},
    }
    options.update(extra)
    return CrawlSettings(**options)  # type: ignore[arg-type]


def serve_demo_web(*, seed: int, hosts: int, pages_per_host: int) -> Iterator[DemoWebServer]:
    """A demo web served in a thread (for a module-scoped fixture to yield from)."""
    web = DemoWeb.generate(seed=seed, hosts=hosts, pages_per_host=pages_per_host)
    demo = DemoWebServer(web, slow_delay=0.5)
    with demo.run_in_thread():
        yield demo


def crawl_alone(server: DemoWebServer, db: Path) -> set[str]:
    """The URLs a single-process crawl under :func:`crawl_settings` stores."""

    async def crawl() -> set[str]:
        await run_crawl(crawl_settings(server, str(db)))
        async with open_storage(str(db)) as storage:
            return {page.url async for page in storage.iter_pages()}

    return asyncio.run(crawl())


def expected_urls(server: DemoWebServer) -> set[str]:
    """The ground truth: what a complete crawl under :func:`crawl_settings` stores."""
    web = server.web
    settings = crawl_settings(server, "unused.db")
    return set(
        expected_crawl(web, settings.seeds, CrawlRules.from_settings(settings, hosts=web.bases()))
    )


@dataclass
class Cluster:
    """One distributed crawl: its namespace, schema, and the processes it started."""

    server: DemoWebServer
    redis_url: str
    postgres_url: str
    tmp: Path
    delay: float = 0.0
    heartbeat: float = 0.3
    timeout: float = 1.5
    namespace: str = field(default_factory=lambda: f"it-{uuid.uuid4().hex[:12]}")
    schema: str = field(default_factory=lambda: f"it_{uuid.uuid4().hex[:12]}")
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def app(self) -> str:
        return f"tcd_{self.schema}"

    @property
    def db_url(self) -> str:
        return f"{self.postgres_url}?schema={self.schema}&application_name={self.app}"

    @property
    def prefix(self) -> str:
        return f"topicrawl:{{{self.namespace}}}:"

    def _common(self, redis_url: str | None = None) -> list[str]:
        return [
            "--redis",
            redis_url or self.redis_url,
            "--namespace",
            self.namespace,
            "--heartbeat-interval",
            str(self.heartbeat),
            "--heartbeat-timeout",
            str(self.timeout),
            "--lock-ttl",
            str(self.timeout),
        ]

    def start_worker(
        self,
        name: str,
        *,
        redis_port: int | None = None,
        pg_port: int | None = None,
        max_pages: int = 0,
        wrap: Sequence[str] | None = None,
        seeds: Sequence[str] | None = None,
        allow_domains: bool = True,
        extra: Sequence[str] = (),
        quiet: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``topicrawl worker`` with node id ``name`` (reaching Redis and PostgreSQL
        through other ports, e.g. proxies, when given; run through ``wrap``, e.g.
        ``ip netns exec NAME``, when given), seeded with every host of the demo web unless
        ``seeds`` are given, and allowed every host's domain unless told not to."""
        redis_url, db_url = self.redis_url, self.db_url
        if redis_port is not None:
            redis_url = re.sub(r":\d+/", f":{redis_port}/", redis_url, count=1)
        if pg_port is not None:
            db_url = re.sub(r":\d+/", f":{pg_port}/", db_url, count=1)
        argv = [sys.executable, "-m", "topicrawl.cli", "worker", "--node-id", name]
        argv += ["--quiet"] if quiet else []
        argv += [*self._common(redis_url), "--db", db_url, "--concurrency", "4"]
        argv += ["--throughput-window", "1", "--log-level", "info"]
        argv += self._crawl_args(max_pages, seeds, allow_domains=allow_domains)
        return self._start(name, [*argv, *extra], wrap=wrap, env=env)

    def _crawl_args(
        self, max_pages: int, seeds: Sequence[str] | None, *, allow_domains: bool
    ) -> list[str]:
        """The options of the crawl's own settings (the namespace's, for every worker)."""
        web = self.server.web
        argv = ["--strategy", "bfs", "--max-pages", str(max_pages), "--per-host", "2"]
        argv += ["--max-depth", str(MAX_DEPTH), "--delay", str(self.delay)]
        argv += ["--lease-ttl", str(LEASE_TTL)]
        for seed in web.bases().values() if seeds is None else seeds:
            argv += ["--seed", seed]
        for host in web.bases() if allow_domains else ():
            argv += ["--allow-domain", host]
        return argv

    def start_coordinator(
        self, name: str = "coordinator", *, extra: Sequence[str] = ()
    ) -> subprocess.Popen[bytes]:
        """Start ``topicrawl coordinator`` (with ``extra`` options), creating the namespace
        first (with the settings :meth:`start_worker` gives) when it does not exist yet: a
        coordinator serves a crawl that exists."""
        where = ["--redis", self.redis_url, "--namespace", self.namespace]
        create = [sys.executable, "-m", "topicrawl.cli", "crawl-ns", "create", *where]
        create += self._crawl_args(0, None, allow_domains=True)
        made = subprocess.run(
            create, env={**os.environ, **ENV}, capture_output=True, text=True, check=False
        )
        assert made.returncode == 0 or "exists already" in made.stderr, made.stderr
        argv = [sys.executable, "-m", "topicrawl.cli", "coordinator", *self._common()]
        argv += ["--interval", "0.2", "--exit-when-done", "--wait-for-namespace", str(PATIENCE)]
        return self._start(name, [*argv, *extra])

    def _start(
        self,
        name: str,
        argv: list[str],
        *,
        wrap: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        with (self.tmp / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                [*(wrap or ()), *argv],
                env={**os.environ, **ENV, **(env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C (SIGINT to the group) reaches it alone
            )
        self.procs[name] = proc
        return proc

    async def cli(self, *args: str, timeout: float = PATIENCE) -> subprocess.CompletedProcess[str]:
        """Run ``topicrawl ARGS`` against this crawl's Redis (``--namespace`` is the caller's
        to give), in a thread so the event loop goes on."""
        argv = [sys.executable, "-m", "topicrawl.cli", *args]
        return await asyncio.to_thread(
            subprocess.run,
            argv,
            env={**os.environ, **ENV},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    async def crawl_ns(self, command: str, *args: str) -> subprocess.CompletedProcess[str]:
        """``topicrawl crawl-ns COMMAND`` on this crawl's namespace."""
        where = ["--redis", self.redis_url, "--namespace", self.namespace]
        return await self.cli("crawl-ns", command, *where, *args)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    async def wait_all(self, timeout: float) -> dict[str, int]:
        """Wait for every process (letting the event loop run); their exit codes, -999 for
        one still running after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(proc.poll() is not None for proc in self.procs.values()):
                break
            await asyncio.sleep(0.1)
        codes = {name: proc.poll() for name, proc in self.procs.items()}
        if None in codes.values():
            # A worker writes its asyncio tasks and where each waits to its log on SIGUSR1, so
            # the log that a failing test shows names what a process that did not end waits on.
            for name, code in codes.items():
                if code is None:
                    self.procs[name].send_signal(signal.SIGUSR1)
            await asyncio.sleep(2.0)
        return {name: -999 if code is None else code for name, code in codes.items()}

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    # -- reading results

    async def pg(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.postgres_url.replace("postgresql+asyncpg", "postgresql"))

    async def stored(self) -> list[tuple[str, str]]:
        """(url, final_url) of every stored page."""
        connection = await self.pg()
        try:
            rows = await connection.fetch(f'SELECT url, final_url FROM "{self.schema}".pages')
        except asyncpg.UndefinedTableError:
            return []
        finally:
            await connection.close()
        return [(row["url"], row["final_url"]) for row in rows]

    async def count(self) -> int:
        return len(await self.stored())

    async def wait_for_pages(self, at_least: int, timeout: float = PATIENCE) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            count = await self.count()
            if count >= at_least:
                return count
            await asyncio.sleep(0.1)
        raise AssertionError(f"fewer than {at_least} pages after {timeout} s")

    async def create_schema(self) -> None:
        """Create the crawl's tables now (as its first worker would), so that
        :meth:`writes_held` can be used before any worker has started."""
        async with open_storage(self.db_url):
            pass

    @contextlib.asynccontextmanager
    async def writes_held(self) -> AsyncIterator[None]:
        """Hold back every page write of the crawl for the block: its writes wait for a table
        lock this connection holds. No page is stored meanwhile and no lease acked (a worker
        acks a URL only once its page is stored), so the crawl cannot end in the block,
        however slow the machine is; the workers buffer what they fetch, and then stall."""
        connection = await self.pg()
        try:
            async with connection.transaction():
                await connection.execute(
                    f'LOCK TABLE "{self.schema}".pages IN SHARE ROW EXCLUSIVE MODE'
                )
                yield
        finally:
            await connection.close()

    async def wait_registered(
        self, registry: NodeRegistry, names: Iterable[str], timeout: float = PATIENCE
    ) -> None:
        """Wait until the workers ``names`` have registered (failing early if one exits)."""
        wanted = set(names)
        deadline = time.monotonic() + timeout
        while missing := wanted - {n.node for n in await registry.nodes()}:
            for name in missing:
                code = self.procs[name].poll()
                assert code is None, f"{name} exited ({code}): {self.log(name)}"
            assert time.monotonic() < deadline, f"{sorted(missing)} never registered"
            await asyncio.sleep(0.05)

    async def wait_crawling(
        self, registry: NodeRegistry, node: str, timeout: float = PATIENCE
    ) -> None:
        """Wait until ``node`` holds a lease: past its start-up (storage, knowledge graph),
        crawling (failing early if it exits)."""
        deadline = time.monotonic() + timeout
        while not await registry.client.scard(self.prefix + f"nl:{node}"):
            code = self.procs[node].poll()
            assert code is None, f"{node} exited ({code}): {self.log(node)}"
            assert time.monotonic() < deadline, f"{node} never leased a URL"
            await asyncio.sleep(0.05)

    async def wait_declared_dead(self, registry: NodeRegistry, node: str) -> None:
        """Wait for ``node`` to be declared dead and, in the same coordinator round, its leases
        and hosts to go back (a read between the round's two steps may still see them: poll
        both)."""
        client = registry.client
        states: dict[str, NodeState] = {}
        held = (-1, -1)
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            states = {n.node: n.state for n in await registry.nodes()}
            held = (
                await client.scard(self.prefix + f"nl:{node}"),
                await client.scard(self.prefix + f"hosts:{node}"),
            )
            if states.get(node) is NodeState.DEAD and held == (0, 0):
                return
            await asyncio.sleep(0.1)
        assert states.get(node) is NodeState.DEAD, states
        assert held == (0, 0), "leases and hosts the dead node still holds"

    async def wait_for_a_held_write(self, timeout: float = PATIENCE) -> None:
        """Wait until a write of the crawl waits for a lock (under :meth:`writes_held`)."""
        deadline = time.monotonic() + timeout
        while True:
            connection = await self.pg()
            try:
                waiting = await connection.fetchval(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE application_name = $1 AND wait_event_type = 'Lock'",
                    self.app,
                )
            finally:
                await connection.close()
            if waiting:
                return
            assert time.monotonic() < deadline, "no write of the crawl came"
            await asyncio.sleep(0.05)

    async def activity(self) -> list[str]:
        """What each database session of the crawl is doing (for a failure's message)."""
        connection = await self.pg()
        try:
            rows = await connection.fetch(
                "SELECT pid, client_port, state, wait_event_type, wait_event,"
                " now() - xact_start AS open_for, left(query, 60) AS query"
                " FROM pg_stat_activity WHERE application_name = $1",
                self.app,
            )
        finally:
            await connection.close()
        return [str(dict(row)) for row in rows]

    async def terminate_backends(self) -> int:
        """pg_terminate_backend on every connection of this crawl's workers."""
        connection = await self.pg()
        try:
            pids = await connection.fetch(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = $1",
                self.app,
            )
        finally:
            await connection.close()
        return len(pids)

    async def cleanup(self) -> None:
        self.stop_all()
        connection = await self.pg()
        try:
            await connection.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
        finally:
            await connection.close()
        client = Redis.from_url(self.redis_url)
        try:
            keys = [key async for key in client.scan_iter(match=self.prefix + "*")]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


def refetched(server: DemoWebServer) -> int:
    """Pages answered 200 more than once (robots.txt aside)."""
    fetches = Counter((r.host, r.path) for r in server.access_log() if r.status == 200)
    return sum(n - 1 for (_, path), n in fetches.items() if "robots" not in path)


def handed_out(server: DemoWebServer) -> dict[str, list[float]]:
    """Per host, when the requests the frontier handed out arrived, in order.

    robots.txt fetches, redirect hops and the fetcher's own retries after a 5xx/429 are not
    frontier hand-outs (the fetcher makes them inline), so a request after one is left out.
    """
    by_host: dict[str, list[tuple[float, int, str]]] = {}
    for record in server.access_log():
        by_host.setdefault(record.host, []).append((record.at, record.status, record.path))
    arrivals: dict[str, list[float]] = {}
    for host, records in by_host.items():
        records.sort()
        kept = arrivals.setdefault(host, [])
        previous: int | None = None
        for at, status, path in records:
            if "robots.txt" in path:
                continue
            if previous is None or not (
                300 <= previous < 400 or previous >= 500 or previous in (0, 429)
            ):
                kept.append(at)
            previous = status
    return arrivals


def crowded(arrivals: Sequence[float], *, delay: float, lag: float) -> list[tuple[int, float]]:
    """The pairs of hand-outs of a host ``k`` apart (``k``, the time between their arrivals)
    that came closer than hand-outs spaced by ``delay`` could, each arriving up to ``lag``
    after it was handed out: less than ``k * delay - lag`` apart."""
    return [
        (j - i, arrivals[j] - arrivals[i])
        for i in range(len(arrivals))
        for j in range(i + 1, len(arrivals))
        if arrivals[j] - arrivals[i] < (j - i) * delay - lag
    ]
