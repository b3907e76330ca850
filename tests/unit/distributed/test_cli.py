"""The distributed commands: exit codes for unreachable services, the nodes table."""

from __future__ import annotations

import uuid

import redis
from rich.console import Console
from typer.testing import CliRunner

from topicrawl.cli.app import app
from topicrawl.cli.distributed import nodes_table
from topicrawl.distributed import NodeState, NodeStatus

runner = CliRunner()
SEED = ["--seed", "http://127.0.0.2:1/"]


def test_worker_with_redis_unreachable_exits_4(postgres_url: str) -> None:
    result = runner.invoke(
        app, ["worker", *SEED, "--redis", "redis://127.0.0.1:1/0", "--db", postgres_url]
    )
    assert result.exit_code == 4
    assert "Redis" in result.output
    assert "127.0.0.1:1" in result.output


def test_worker_with_postgres_unreachable_exits_4(redis_url: str) -> None:
    namespace = f"cli-{uuid.uuid4().hex}"
    try:
        result = runner.invoke(
            app,
            [
                "worker",
                *SEED,
                "--redis",
                redis_url,
                "--namespace",
                namespace,
                "--db",
                "postgresql://postgres@127.0.0.1:1/test",
            ],
        )
    finally:
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*"):
            client.delete(key)
        client.close()
    assert result.exit_code == 4
    assert "127.0.0.1:1" in result.output


def test_worker_refuses_a_sqlite_database() -> None:
    result = runner.invoke(app, ["worker", *SEED, "--db", "crawl.db"])
    assert result.exit_code == 2
    assert "postgresql" in result.output


def _drop(redis_url: str, namespace: str) -> None:
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*"):
        client.delete(key)
    client.close()


def test_nodes_of_a_crawl_that_does_not_exist_exit_3(redis_url: str) -> None:
    namespace = f"cli-{uuid.uuid4().hex}"
    result = runner.invoke(app, ["nodes", "--redis", redis_url, "--namespace", namespace])
    assert result.exit_code == 3
    assert f"namespace {namespace!r} does not exist" in " ".join(result.output.split())


def test_nodes_of_an_empty_crawl(redis_url: str) -> None:
    namespace = f"cli-{uuid.uuid4().hex}"
    where = ["--redis", redis_url, "--namespace", namespace]
    try:
        created = runner.invoke(app, ["crawl-ns", "create", *where, *SEED])
        assert created.exit_code == 0, created.output
        result = runner.invoke(app, ["nodes", *where])
    finally:
        _drop(redis_url, namespace)
    assert result.exit_code == 0
    assert "0 queued, 0 in flight" in result.output


def test_nodes_table_shows_state_and_numbers_as_plain_text() -> None:
    found = [
        NodeStatus(
            node="w1",
            state=NodeState.ALIVE,
            late=False,
            machine="[bold red]evil[/]",
            pid=7,
            started_at=100.0,
            last_heartbeat=110.0,
            pages=42,
            pages_per_second=3.25,
            errors=2,
            params={},
            capacity={},
        ),
        NodeStatus(
            node="w2",
            state=NodeState.DEAD,
            late=False,
            machine="box",
            pid=8,
            started_at=100.0,
            last_heartbeat=None,
            pages=0,
            pages_per_second=None,
            errors=0,
            params={},
            capacity={},
        ),
    ]
    console = Console(record=True, width=200)
    console.print(nodes_table(found, {"w1": 5}, now=112.5))
    text = console.export_text()
    row1 = next(line for line in text.splitlines() if "w1" in line)
    row2 = next(line for line in text.splitlines() if "w2" in line)
    for cell in ("alive", "2.5 s ago", "3.2", "42", "5", "[bold red]evil[/]/7"):
        assert cell in row1
    assert "dead" in row2
    assert "-" in row2


def test_nodes_table_tells_the_truth_about_left_nodes_totals_and_the_coordinator() -> None:
    def status(node: str, state: NodeState, pages: int, errors: int, excluded: int) -> NodeStatus:
        return NodeStatus(
            node=node,
            state=state,
            late=False,
            machine="box",
            pid=1,
            started_at=100.0,
            last_heartbeat=110.0,
            pages=pages,
            pages_per_second=7.5,
            errors=errors,
            params={},
            capacity={},
            excluded=excluded,
        )

    found = [
        status("w1", NodeState.ALIVE, 40, 1, 3),
        status("w2", NodeState.LEFT, 25, 2, 4),
        status("w3", NodeState.DEAD, 10, 0, 0),
    ]
    console = Console(record=True, width=250)
    console.print(nodes_table(found, {"w1": 2}, now=111.0, coordinator="w1"))
    lines = console.export_text().splitlines()
    row = {name: next(line for line in lines if f" {name} " in line) for name in ("w1", "w2", "w3")}
    assert "alive, coordinator" in row["w1"]
    assert "7.5" in row["w1"]
    # A node that left or died shows its last numbers, but no rate: it no longer crawls.
    assert "left" in row["w2"]
    assert "7.5" not in row["w2"]
    assert "dead" in row["w3"]
    assert "7.5" not in row["w3"]
    total = next(line for line in lines if "total" in line).replace("\u2502", " ").split()
    # 1 live of 3; pages/s of the live ones; pages, hosts, errors and robots.txt exclusions
    # summed over every node.
    assert total[1:] == ["(1", "live", "of", "3)", "7.5", "75", "2", "3", "7"]
    console = Console(record=True, width=250)
    console.print(nodes_table(found, {}, now=111.0, coordinator="coordinator-box-9"))
    assert "coordinator: coordinator-box-9" in console.export_text()


def test_nodes_stores_per_node_configuration(redis_url: str) -> None:
    namespace = f"cli-{uuid.uuid4().hex}"
    where = ["--redis", redis_url, "--namespace", namespace]
    client = redis.Redis.from_url(redis_url)
    try:
        created = runner.invoke(app, ["crawl-ns", "create", *where, *SEED])
        assert created.exit_code == 0, created.output
        result = runner.invoke(
            app,
            [
                "nodes",
                *where,
                "--set-config",
                '*={"concurrency": 4}',
                "--set-config",
                'w2={"fetch": {"timeout": 1.5}}',
            ],
        )
        assert result.exit_code == 0, result.output
        stored = client.hgetall(f"topicrawl:{{{namespace}}}:nodecfg")
        assert stored == {b"*": b'{"concurrency": 4}', b"w2": b'{"fetch": {"timeout": 1.5}}'}
    finally:
        client.close()
        _drop(redis_url, namespace)
    bad = runner.invoke(app, ["nodes", "--redis", redis_url, "--set-config", "w2=[1]"])
    assert bad.exit_code == 2


def test_coordinator_takes_the_workers_assignment_option(redis_url: str) -> None:
    namespace = f"cli-{uuid.uuid4().hex}"
    where = ["--redis", redis_url, "--namespace", namespace]
    bad = runner.invoke(app, ["coordinator", *where, "--assignment", "nearest"])
    assert bad.exit_code == 2, bad.output
    assert "success-table" in " ".join(bad.output.split())  # the names it takes
    # A known policy gets as far as the crawl, which does not exist here.
    good = runner.invoke(app, ["coordinator", *where, "--assignment", "rendezvous"])
    assert good.exit_code == 3, good.output
