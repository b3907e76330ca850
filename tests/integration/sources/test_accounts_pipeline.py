"""The account pipeline against the demo accounts server: what is kept and why."""

from __future__ import annotations

from topicrawl.core.errors import PermanentFetchError
from topicrawl.demoweb.accounts import AccountWorld
from topicrawl.demoweb.accountserver import AccountServer
from topicrawl.engine.accounts import AccountPipelineSettings, run_account_pipeline
from topicrawl.sources.accounts import MatchStep
from topicrawl.sources.accountsapi import AccountsClient, TimelineEntry

NAMES = ["张艺谋", "流浪地球", "Christopher Nolan", "Meryl Streep", "Breaking Bad", "Gong Li"]


class PrivateTimelines(AccountsClient):
    """A client for which some accounts' timelines are private (403)."""

    private: frozenset[str] = frozenset()

    async def statuses(self, account_id: str, *, max_posts: int = 200) -> list[TimelineEntry]:
        if account_id in self.private:
            raise PermanentFetchError(f"{self.base_url}{account_id}", "HTTP 403", status=403)
        return await super().statuses(account_id, max_posts=max_posts)


async def test_strict_matches_are_kept_and_the_rest_judged_by_their_posts() -> None:
    world = AccountWorld.generate(NAMES, seed=9, fans=30, others=60)
    truth = world.true_matches()
    strict = [a for a, (_, kind) in truth.items() if kind in {"exact", "affix"}]
    private = frozenset(strict[:1])
    settings = AccountPipelineSettings(max_hops=2, max_per_hop=60, nodes=("n1", "n2"))
    async with AccountServer(world, rate_limit=100_000) as server:
        client = PrivateTimelines(server.base_url)
        client.private = private
        async with client:
            run = await run_account_pipeline(client, NAMES, settings, now=1000.0)
    by_id = {r.account_id: r for r in run.records}
    # the account whose posts could not be read is still kept: it matched strictly
    (hidden,) = private
    assert by_id[hidden].kept
    assert by_id[hidden].domain_score == 0.0
    for match in run.matches:
        record = by_id[match.account.id]
        assert record.match_step == int(match.step)
        if match.step in {MatchStep.EXACT, MatchStep.AFFIX}:
            assert record.kept
    in_domain = world.in_domain()
    judged = [r for r in run.records if r.match_step not in {1, 2}]
    dropped = [r for r in judged if not r.kept]
    assert dropped
    assert sum(r.account_id not in in_domain for r in dropped) / len(dropped) >= 0.9
    for record in run.records:
        if record.kept:
            assert record.tier in {1, 2, 3}
            assert record.next_visit_at == 1000.0 + {1: 1, 2: 3, 3: 7}[record.tier] * 86_400
            assert record.node in {"n1", "n2"}
        else:
            assert record.tier is None
            assert record.node is None
    reposts = [p for p in run.posts if p.original_id is not None]
    assert reposts
