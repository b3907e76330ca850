"""`topicrawl accounts run` and `show` end to end: demo microblog on loopback, SQLite and
PostgreSQL storage, weekly recompute, and bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from topicrawl.cli.app import app
from topicrawl.demoweb.accounts import AccountWorld
from topicrawl.demoweb.accountserver import AccountServer
from topicrawl.storage.accountstore import AccountStore, RunRecord

NAMES = ["张艺谋", "巩俐", "流浪地球", "让子弹飞", "Christopher Nolan", "Gong Li", "Inception"]


def _names_file(tmp_path: Path) -> Path:
    path = tmp_path / "names.txt"
    lines = ["# directors, actors and titles", *NAMES[:-1], json.dumps({"name": NAMES[-1]})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def _stored(url: str) -> tuple[dict[str, int], list[dict[str, Any]], list[RunRecord]]:
    async with AccountStore(url, read_only=True) as store:
        return await store.counts(), await store.accounts(limit=10_000), await store.runs()


def test_run_stores_accounts_edges_posts_tiers_and_history(store_url: str, tmp_path: Path) -> None:
    world = AccountWorld.generate(NAMES, seed=4, fans=30, others=40)
    names = _names_file(tmp_path)
    runner = CliRunner()
    with AccountServer(world, rate_limit=100_000).run_in_thread() as server:
        args = ["accounts", "run", "--api", server.base_url, "--db", store_url]
        args += ["--entities", str(names), "--nodes", "a,b", "--threads", "3"]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        assert "run 1:" in first.output
        again = runner.invoke(app, args)
        assert again.exit_code == 0, again.output
        assert "recomputed weekly" in again.output
        forced = runner.invoke(app, [*args, "--force", "--max-hops", "1"])
        assert forced.exit_code == 0, forced.output
        assert "run 2:" in forced.output
    counts, rows, runs = asyncio.run(_stored(store_url))
    assert counts["account_runs"] == 2
    assert [r.status for r in runs] == ["done", "done"]
    assert counts["account_follows"] > 0
    assert counts["account_posts"] > 0
    assert counts["account_tiers"] > 0
    by_id = {r["account_id"]: r for r in rows}
    truth = world.true_matches()
    exact = [a for a, (_, kind) in truth.items() if kind == "exact"]
    assert exact
    for account_id in exact:
        row = by_id[account_id]
        assert row["match_step"] == 1
        assert row["kept"]
        assert row["tier"] in {1, 2, 3}
        assert row["node"] in {"a", "b"}
        assert row["thread"] == int(account_id) % 3
        assert row["revisit_days"] == {1: 1.0, 2: 3.0, 3: 7.0}[row["tier"]]
    kept = [r for r in rows if r["kept"]]
    in_domain = world.in_domain()
    precision = sum(r["account_id"] in in_domain for r in kept) / len(kept)
    assert precision >= 0.8
    dropped = [r for r in rows if not r["kept"]]
    assert dropped
    assert all(r["tier"] is None for r in dropped)
    shown = runner.invoke(app, ["accounts", "show", "--db", store_url, "--json", "--limit", "5"])
    assert shown.exit_code == 0, shown.output
    body = json.loads(shown.output)
    assert len(body["accounts"]) == 5
    assert all(a["kept"] for a in body["accounts"])
    assert body["runs"][0]["id"] == 2


def test_bad_input_is_refused_with_its_reason(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "x.db")
    no_names = runner.invoke(app, ["accounts", "run", "--api", "http://127.0.0.1:9/", "--db", db])
    assert no_names.exit_code == 2
    assert "entity names" in no_names.output
    bad = tmp_path / "bad.txt"
    bad.write_text('Gong Li\n{"title": "x"}\n', encoding="utf-8")
    bad_file = runner.invoke(
        app, ["accounts", "run", "--api", "http://127.0.0.1:9/", "--db", db, "--entities", str(bad)]
    )
    assert bad_file.exit_code == 2
    assert "bad.txt:2" in bad_file.output
    bad_api = runner.invoke(
        app, ["accounts", "run", "--api", "ftp://x", "--db", db, "--name", "A1"]
    )
    assert bad_api.exit_code == 2
    missing = runner.invoke(app, ["accounts", "show", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 2
    assert "does not exist" in missing.output


def test_an_unreachable_server_fails_the_run_and_says_so(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    args = ["accounts", "run", "--api", "http://127.0.0.1:9/", "--db", db, "--name", "Gong Li"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 3, result.output
    assert "cannot reach" in result.output
    counts, rows, runs = asyncio.run(_stored(db))
    assert [(r.status, r.error is not None) for r in runs] == [("failed", True)]
    assert rows == []
    assert counts["accounts"] == 0
