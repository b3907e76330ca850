"""The account store: run history, one transaction a run, replaced rows."""

from __future__ import annotations

from pathlib import Path

from topicrawl.storage.accountstore import AccountRecord, AccountStore, PostRecord


def record(account_id: str, *, influence: float | None, kept: bool = True) -> AccountRecord:
    return AccountRecord(
        account_id=account_id,
        username=f"u{account_id}",
        display_name=f"名字{account_id}",
        followers=10,
        following=2,
        statuses=3,
        hop=0,
        match_name="张艺谋",
        match_step=1,
        match_score=100.0,
        domain_score=0.5,
        kept=kept,
        activity=1.5,
        influence=influence,
        tier=1 if kept else None,
        revisit_days=1.0 if kept else None,
        next_visit_at=86_400.0 if kept else None,
        node="n1" if kept else None,
        thread=0 if kept else None,
    )


async def test_runs_rows_and_abandoned_runs(tmp_path: Path) -> None:
    url = str(tmp_path / "a.db")
    async with AccountStore(url) as store:
        killed = await store.start_run("m.example", entities=3, settings={"a": 1})
        run = await store.start_run("m.example", entities=3, settings={"a": 1})
        post = PostRecord("1", "9", None, "u1", "text", 5.0, 1, 2, 3, "https://m.example/9")
        await store.record(run, "m.example", [record("1", influence=0.4)], [("1", "2")], [post])
        await store.record(run, "m.example", [record("1", influence=0.6)], [("1", "2")], [post])
        await store.finish_run(run, status="done", counts={"matched": 1, "kept": 1})
        runs = {r.id: r for r in await store.runs()}
        rows = await store.accounts()
        counts = await store.counts()
        last = await store.last_done("m.example")
        never = await store.last_done("other.example")
    assert runs[killed].status == "abandoned"
    assert runs[run].status == "done"
    assert runs[run].matched == 1
    assert [r["influence"] for r in rows] == [0.6]  # replaced, not doubled
    assert rows[0]["display_name"] == "名字1"
    assert counts == {
        "accounts": 1,
        "account_follows": 1,
        "account_posts": 1,
        "account_tiers": 1,
        "account_runs": 2,
    }
    assert last == runs[run].started_at
    assert never is None
