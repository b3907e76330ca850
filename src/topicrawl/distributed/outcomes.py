"""The success table's per-(host, node) outcomes, shared between the nodes through Redis.

Each node's :class:`~topicrawl.distributed.policies.SuccessTablePolicy` learns from its own
fetches only: the rows of (host, this node). :class:`SharedOutcomes` publishes those rows and
reads every other node's, so a node that joins starts from what the others learnt (it does
not hand a host to a node the host refuses), and what one node learns reaches the others
within a sync interval (at once for its refusals).

Only rows that have seen a refusal (403 or 429) are shared: a row without one rules nothing
out, and this bounds the shared table by the refusing pairs, not by every host crawled. A
shared row is published again at each change after that, so a refusal that decays away is
seen to. Each row has one writer (the node it is about), so a row is simply overwritten.

Redis keys, under the crawl's prefix: ``outcomes`` (hash: ``host\\0node`` -> ``"tries
refused"``), ``outcomes:changed`` (sorted set: the field by its version) and
``outcomes:version`` (the counter). A node reads the rows changed since the last version it
saw. ``refuses:<node>`` (set) holds the hosts whose row rules that node out: an idle node's
pop neither pops such a host from another node (``share_hosts``) nor takes it
(``steal_min``), looking at most 8 hosts deep into each other node's ready set
(``common.lua``). Hosts in the shared pool (no owner yet) are not checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from topicrawl.core.errors import FrontierError
from topicrawl.distributed.policies import SuccessTablePolicy

__all__ = ["SharedOutcomes"]

log = logging.getLogger(__name__)

# ARGV: field, row, host, '1' if the row rules the node out (else '0'), for each row. KEYS[4]
# is the set of hosts that refuse this node, which other nodes' idle pops read (common.lua).
_PUBLISH = """
for i = 1, #ARGV, 4 do
  local version = redis.call('INCR', KEYS[3])
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  redis.call('ZADD', KEYS[2], version, ARGV[i])
  if ARGV[i + 3] == '1' then
    redis.call('SADD', KEYS[4], ARGV[i + 2])
  else
    redis.call('SREM', KEYS[4], ARGV[i + 2])
  end
end
return redis.call('GET', KEYS[3])
"""
_PAGE = 5_000  # changed rows read per Redis call


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class SharedOutcomes:
    """Publishes this node's success-table rows and reads the other nodes' (see the module
    docstring).

    Args:
        client: an open Redis connection.
        prefix: the crawl's key prefix.
        node: this node's id (the only node whose rows it publishes).
        table: this node's success-table policy.
        on_learnt: told the hosts whose rows came from other nodes (e.g. to drop cached
            proposals of them).
    """

    def __init__(
        self,
        client: Redis,
        *,
        prefix: str,
        node: str,
        table: SuccessTablePolicy,
        on_learnt: Callable[[Iterable[str]], None] | None = None,
    ) -> None:
        self._client = client
        self._rows = prefix + "outcomes"
        self._changed = prefix + "outcomes:changed"
        self._version = prefix + "outcomes:version"
        self._refusing = prefix + "refuses:" + node
        self.node = node
        self.table = table
        self._on_learnt = on_learnt
        self._dirty: set[str] = set()
        self._shared: set[str] = set()  # hosts whose row of this node is in Redis
        self._seen = 0  # the last version read
        self._wake = asyncio.Event()
        self.published = 0
        self.learnt = 0

    def note(self, host: str, *, refused: bool) -> None:
        """This node's row of ``host`` changed (a fetch was observed); a refusal is sent at
        the next :meth:`run` wake-up, other changes of shared rows at the next sync."""
        if refused or host in self._shared:
            self._dirty.add(host)
        if refused:
            self._wake.set()

    async def publish(self) -> int:
        """Send the rows of this node that changed; returns how many.

        Raises:
            FrontierError: Redis failed (the rows stay to be sent).
        """
        hosts = sorted(self._dirty)
        args: list[str] = []
        for host in hosts:
            row = self.table.row(host, self.node)
            if row is not None:
                rules_out = "1" if self.table.refuses(host, self.node) else "0"
                args += [f"{host}\0{self.node}", f"{row[0]!r} {row[1]!r}", host, rules_out]
        if not args:
            self._dirty.clear()
            return 0
        try:
            await self._client.eval(
                _PUBLISH, 4, self._rows, self._changed, self._version, self._refusing, *args
            )
        except RedisError as exc:
            raise FrontierError(f"sharing outcomes: {type(exc).__name__}: {exc}") from exc
        self._dirty.difference_update(hosts)
        self._shared.update(hosts)
        self.published += len(args) // 4
        return len(args) // 4

    async def pull(self) -> int:
        """Take the other nodes' rows changed since the last pull (all of them the first
        time; this node's own only for hosts it has no row of, e.g. after a restart).
        Returns how many rows were taken.

        Raises:
            FrontierError: Redis failed.
        """
        taken: set[str] = set()
        count = 0
        try:
            while True:
                raw: Any = await self._client.zrangebyscore(
                    self._changed, f"({self._seen}", "+inf", start=0, num=_PAGE, withscores=True
                )
                page = [(_text(field), float(score)) for field, score in raw]
                if not page:
                    break
                fields = [field for field, _ in page]
                values = await self._client.hmget(self._rows, fields)
                for field, value in zip(fields, values, strict=True):
                    if value is not None and self._take(field, _text(value)):
                        taken.add(field.partition("\0")[0])
                        count += 1
                self._seen = max(self._seen, int(max(score for _, score in page)))
                if len(page) < _PAGE:
                    break
        except RedisError as exc:
            raise FrontierError(f"reading shared outcomes: {type(exc).__name__}: {exc}") from exc
        if taken and self._on_learnt is not None:
            self._on_learnt(taken)
        self.learnt += count
        return count

    def _take(self, field: str, value: str) -> bool:
        host, _, node = field.partition("\0")
        if not host or not node:
            return False
        if node == self.node and self.table.row(host, node) is not None:
            return False  # this node's own row: ours is newer
        try:
            tries, refused = (float(x) for x in value.split())
            self.table.learn(host, node, tries, refused)
        except ValueError:
            log.warning("ignored a malformed shared outcome %r: %r", field, value)
            return False
        if node == self.node:
            self._shared.add(host)
        return True

    async def sync(self) -> None:
        """Publish, then pull (Redis errors logged: the next sync retries)."""
        try:
            await self.publish()
            await self.pull()
        except FrontierError as exc:
            log.warning("could not share the success table: %s", exc)

    async def run(self, stop: asyncio.Event, *, interval: float) -> None:
        """Sync every ``interval`` seconds, and at once after a refusal, until ``stop``; a
        last publish on the way out."""
        try:
            while not stop.is_set():
                self._wake.clear()
                await self.sync()
                waiters = {
                    asyncio.ensure_future(stop.wait()),
                    asyncio.ensure_future(self._wake.wait()),
                }
                try:
                    await asyncio.wait(
                        waiters, timeout=interval, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    for waiter in waiters:
                        waiter.cancel()
                    for waiter in waiters:
                        with contextlib.suppress(asyncio.CancelledError):
                            await waiter
        finally:
            try:
                await self.publish()
            except FrontierError as exc:
                log.warning("could not share the last outcomes: %s", exc)
