"""A worker's fetch outcomes fed to its assignment policy, on a real Redis: under the success
table a node that a host refuses (403, 429) hands the host to another node and is not
proposed for it again; rules that do not learn keep their hosts where they are."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from tests.unit.distributed.test_partitioned_frontier import (  # noqa: F401 - fixtures
    Open,
    clock,
    open_node,
)
from topicrawl.core.models import FetchOutcome, Request
from topicrawl.distributed import AssignmentPolicy, NodeLoad, RedisFrontier
from topicrawl.distributed.feedback import FetchFeedback, HostAssigner
from topicrawl.distributed.policies import SuccessTablePolicy, TwoChoicesPolicy

VIEW = [NodeLoad(node="n1", concurrency=4), NodeLoad(node="n2", concurrency=4)]


async def _seed(open_node: Open, owners: dict[str, str]) -> RedisFrontier:  # noqa: F811
    """Queue three URLs of each host, the host held by the node given; n1's frontier."""
    pusher = await open_node(None, propose_owner=owners.get)
    urls = [f"http://{host}/{i}" for host in owners for i in range(3)]
    assert await pusher.push([Request(url=u) for u in urls]) == len(urls)
    return await open_node("n1", steal_min=0)


def _feedback(
    frontier: RedisFrontier, policy: AssignmentPolicy, view: Sequence[NodeLoad] = VIEW
) -> tuple[FetchFeedback, HostAssigner]:
    """n1's feedback and host assigner under ``policy``, with ``view`` of the live nodes."""
    assigner = HostAssigner(policy)
    assigner.update(view)
    return FetchFeedback(node="n1", assigner=assigner, frontier=frontier), assigner


async def _popped_hosts(frontier: RedisFrontier) -> list[str]:
    hosts = []
    while (lease := await frontier.pop()) is not None:
        hosts.append(lease.host)
        assert await frontier.ack(lease)
    return hosts


async def test_a_node_refused_by_a_host_hands_it_on_under_the_success_table(
    open_node: Open,  # noqa: F811
) -> None:
    n1 = await _seed(open_node, {"x.test": "n1", "y.test": "n1"})
    n2 = await open_node("n2", steal_min=0)
    feedback, assigner = _feedback(n1, SuccessTablePolicy())
    stop = asyncio.Event()
    task = asyncio.create_task(feedback.run(stop))
    feedback(FetchOutcome("y.test", 200, 0.2))
    feedback(FetchOutcome("x.test", 403, 0.1))
    async with asyncio.timeout(10):  # hang guard: the move follows the refusal at once
        while (await n1.owners_of(["x.test"])).get("x.test") != "n2":
            await asyncio.sleep(0.01)
    stop.set()
    await task
    assert await n1.owners() == {"x.test": "n2", "y.test": "n1"}
    assert (feedback.moved, feedback.refusals, feedback.fetches) == (1, 1, 2)
    assert feedback.latency == pytest.approx(0.15)
    # n1 is never proposed for x.test again (two choices draw anew each time), nor its work
    # given to it; a host that answered is still proposed either way.
    assert {assigner.propose("x.test") for _ in range(50)} == {"n2"}
    assert sorted(await _popped_hosts(n1)) == ["y.test"] * 3
    assert sorted(await _popped_hosts(n2)) == ["x.test"] * 3


async def test_a_429_counts_as_a_refusal_and_answers_do_not_move_hosts(open_node: Open) -> None:  # noqa: F811
    n1 = await _seed(open_node, {"x.test": "n1", "y.test": "n1", "z.test": "n1"})
    feedback, _ = _feedback(n1, SuccessTablePolicy())
    feedback(FetchOutcome("x.test", 429, 0.1))
    feedback(FetchOutcome("y.test", 404, 0.1))  # an answer: the host serves this node
    feedback(FetchOutcome("z.test", 0, 5.0))  # lost: no answer, not a refusal
    assert await feedback.review() == 1
    assert await n1.owners() == {"x.test": "n2", "y.test": "n1", "z.test": "n1"}


async def test_a_host_another_node_holds_is_left_to_it(open_node: Open) -> None:  # noqa: F811
    # n1 fetched a URL of n2's host (shared pops) and was refused: the host stays with n2.
    n1 = await _seed(open_node, {"x.test": "n2"})
    feedback, _ = _feedback(n1, SuccessTablePolicy())
    feedback(FetchOutcome("x.test", 403, 0.1))
    assert await feedback.review() == 0
    assert await n1.owners() == {"x.test": "n2"}


async def test_a_rule_that_does_not_learn_keeps_its_hosts(open_node: Open) -> None:  # noqa: F811
    n1 = await _seed(open_node, {"x.test": "n1"})
    feedback, _ = _feedback(n1, TwoChoicesPolicy())
    for _ in range(5):
        feedback(FetchOutcome("x.test", 403, 0.3))
    assert await feedback.review() == 0
    assert await n1.owners() == {"x.test": "n1"}
    assert (feedback.refusals, feedback.latency) == (5, pytest.approx(0.3))


async def test_a_node_alone_keeps_a_host_that_refuses_it(open_node: Open) -> None:  # noqa: F811
    n1 = await _seed(open_node, {"x.test": "n1"})
    feedback, _ = _feedback(n1, SuccessTablePolicy(), VIEW[:1])
    feedback(FetchOutcome("x.test", 403, 0.1))
    assert await feedback.review() == 0
    assert await n1.owners() == {"x.test": "n1"}
