"""The focused strategy's link evidence beside the anchor and inherited scores: each link's
anchor score (block, own words, URL directories, compound words), site templates, URL
families and directories, and the yield of the blocks that list a link.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from topicrawl.core.models import Link, Page, Request
from topicrawl.focus.links import (
    diluted_block_score,
    link_priority,
    link_words,
    split_identifiers,
    url_directory_words,
)
from topicrawl.focus.siblings import BlockKey
from topicrawl.focus.strategies.base import SEED_SCORE, _host_of, _inherited_of
from topicrawl.focus.strategies.focused_parts import _MAX_TEMPLATE_TARGETS, _Parts


class _LinkEvidence(_Parts):
    """How the focused strategy scores a page's links (its anchor part) and what it learns
    from a page about the links' sources (templates, families, blocks)."""

    def _hindsight(
        self, host: str, links: Sequence[Link], texts: Mapping[int, str]
    ) -> tuple[tuple[str, float], ...]:
        """The links that the blocks this page made template queued earlier, at their template
        scores (lower now); the waiting-link store learns them too."""
        lowered: list[tuple[str, float]] = []
        for block in self.templates.recognised:
            constant = {link.url for link in links if link.block == block}
            key = (host, hash(texts[block]))
            for url, score in self.hindsight.recognised(key, constant=constant):
                self.waiting.lower(url, score)
                lowered.append((url, score))
        return tuple(lowered)

    def _count_family(self, page: Page, similarity: float) -> None:
        """The page no longer waits; it counts in its URL family (``family_yield``) and its
        URL directory (``directory_prior``)."""
        for url in {page.url, page.final_url}:
            self.waiting.crawled(url)
            self.hindsight.crawled(url)
            if self.inbound is not None:
                self.inbound.crawled(url)
        if page.duplicate_of is not None:
            return
        if self.focused.family_yield:
            self.families.observe(page.final_url or page.url, similarity)
        if self.directories is not None:
            self.directories.observe(page.final_url or page.url, similarity)

    def _inbound_evidence(self, page: Page, url: str, passed_on: float, *, relevant: bool) -> float:
        """What the link inherits with ``inbound_evidence``: a relevant page's share joins
        the evidence of every relevant page that linked to ``url`` (a duplicate page's links
        were counted with its original); any other page's share is at least that evidence."""
        inbound = self.inbound
        assert inbound is not None
        if relevant and page.duplicate_of is None:
            return inbound.add(url, passed_on)
        return max(passed_on, inbound.get(url))

    def _sibling_yield(self, url: str) -> float:
        """``sibling_yield`` times the yield of the blocks that list ``url`` (0: off)."""
        if self.siblings is None:
            return 0.0
        return self.focused.sibling_yield * self.siblings.score(url)

    def _sibling_blame(self, url: str) -> float:
        """The share of its inherited score ``url`` keeps under ``sibling_blame`` (1: off)."""
        if self.siblings is None or self.focused.sibling_blame <= 0.0:
            return 1.0
        return self.siblings.share_of(url, prior=self.focused.sibling_blame)

    def _siblings_of(
        self,
        page: Page,
        links: Sequence[Link],
        texts: Mapping[int, str],
        template: frozenset[int],
        *,
        relevant: bool,
    ) -> list[Request]:
        """The page's verdict counts for the blocks that listed it, and its own blocks (not
        template, two links or more) list its links. Returns the waiting links of those
        blocks whose priority the block's new yield raised (or its new share of their
        inherited score, ``sibling_blame``); those it lowered go to the frontier as
        re-scored."""
        siblings = self.siblings
        assert siblings is not None
        host = _host_of(page)
        members: dict[int, list[str]] = {}
        for link in links:
            if link.block not in template:
                members.setdefault(link.block, []).append(link.url)
        untracked = [link.url for link in links if link.block in template]
        for block, urls in members.items():
            if 2 <= len(urls) <= self.focused.sibling_links and texts[block]:
                siblings.listed((host, hash(texts[block])), urls)
            else:
                untracked.extend(urls)
        siblings.unlisted(untracked)
        if page.duplicate_of is not None or "seed" in page.reasons:
            return []
        raised: list[Request] = []
        for key in siblings.crawled({page.url, page.final_url}, relevant=relevant):
            self._rescore_block(key, raised)
        return raised

    def _rescore_block(self, key: BlockKey, raised: list[Request]) -> None:
        """Score the waiting links of block ``key`` again after one of its pages was judged:
        raised ones are queued into ``raised``, lowered ones set in the frontier."""
        siblings, o = self.siblings, self.focused
        assert siblings is not None
        lift = o.sibling_yield * siblings.block_yield(key)
        if lift <= 0.0 and o.sibling_blame <= 0.0:
            return
        for url in siblings.members(key):
            held = self.waiting.get(url)
            if held is None or "template" in held.reasons:
                continue
            reasons = held.reasons
            known = reasons.get("siblings", 0.0)
            blame = self._sibling_blame(url)
            if lift <= known and blame == reasons.get("blame", 1.0):
                continue
            anchor = max(reasons.get("anchor", 0.0), reasons.get("family", 0.0), lift, known)
            score = link_priority(
                inherited=reasons.get("inherited", 0.0) * blame,
                anchor=anchor,
                inherited_weight=o.inherited_weight,
            )
            updated = dict(reasons)
            if o.sibling_yield > 0.0:
                updated["siblings"] = max(lift, known)
            if o.sibling_blame > 0.0:
                updated["blame"] = blame
            if self.learner is not None:
                updated["prior"] = score
            new = dataclasses.replace(held, score=score, reasons=updated)
            if score > held.score:
                self._queue(new, raised)
            else:
                self.waiting.set(new)
                if score < held.score and o.sibling_blame > 0.0:
                    self._lowered.append((url, score))

    def _probe_hub(self, page: Page, links: Sequence[Link], requests: list[Request]) -> None:
        """The page counts for the hub probe (``hub_probe``); when a probe is due, the URL
        the most crawled pages link to is queued at the top."""
        probe = self.probe
        assert probe is not None
        links_of = () if page.duplicate_of is not None else (link.url for link in links)
        probe.page({page.url, page.final_url}, links_of)
        due = probe.due()
        if due is not None:
            url, pages = due
            request = Request(
                url=url,
                score=SEED_SCORE,
                depth=page.depth + 1,
                parent_url=page.final_url or page.url,
                reasons={"probe": float(pages)},
            )
            self._queue(request, requests)

    def _inherited_through_template(
        self, page: Page, links: Sequence[Link], template: frozenset[int]
    ) -> float:
        """The page's inherited score, times ``template_inherited`` if a template block
        links to it: a page queued through a template link before the block was known as
        template (the first pages of a host) passes on no more than one queued after."""
        targets = self._template_targets
        for link in links:
            if link.block in template and len(targets) < _MAX_TEMPLATE_TARGETS:
                targets.add(link.url)
        inherited = _inherited_of(page)
        if page.url in targets or page.final_url in targets:
            return inherited * self.focused.template_inherited
        return inherited

    def _role_links(self, host: str, links: Sequence[Link]) -> frozenset[str]:
        """The page counts for its host's role anchors (``role_anchors``); returns the URLs
        of its links whose anchor is one (empty when the option is off)."""
        roles = self.roles
        if roles is None:
            return frozenset()
        roles.observe(host, links)
        return frozenset(link.url for link in links if roles.is_role(host, link.anchor))

    def _anchor_scores(
        self,
        links: Sequence[Link],
        texts: Mapping[int, str],
        sizes: Mapping[int, int],
        template: frozenset[int],
        roles: frozenset[str] = frozenset(),
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Each link's anchor score: its block's extended anchor text, scored once for the
        block (scaled down for a block of more than ``block_links`` links), or with
        ``link_words`` the link's own anchor and URL words when they score higher (a block of
        many links dilutes the one that names the topic). A link in a ``template`` block
        scores 0: its words are the site's, not the page author's; a link in ``roles`` (a
        role anchor's, see ``role_anchors``) its block's score alone. Returns the anchor scores
        and, apart, each link's block part of it (what a topic update cannot score again:
        the block's text is not kept)."""
        scorer, most = self.scorer, self.focused.block_links
        initial, expand = self.focused.anchor_initial, self.compounds.expand
        blocks = {
            b: 0.0
            if b in template
            else diluted_block_score(
                scorer.text_relevance(expand(split_identifiers(t)), initial=initial),
                links=sizes[b],
                most_links=most,
            )
            for b, t in texts.items()
        }
        of_block = {link.url: blocks[link.block] for link in links}
        if not self.focused.link_words:
            return of_block, of_block
        own: dict[str, float] = {}
        scores: dict[str, float] = {}
        for link in links:
            if link.block in template:
                scores[link.url] = 0.0
                continue
            if link.url in roles:  # its own words name the page it sits on, not its target
                scores[link.url] = blocks[link.block]
                continue
            words = expand(link_words(link))
            score = own.get(words)
            if score is None:
                score = own[words] = scorer.text_relevance(words, initial=initial)
            if self.focused.directory_words:
                directory = url_directory_words(link.url)
                in_directory = own.get(directory)
                if in_directory is None:
                    in_directory = own[directory] = scorer.text_relevance(
                        directory, initial=initial
                    )
                score = max(score, in_directory)
            best = max(blocks[link.block], score)
            if self.focused.own_words_named:
                score = best if score > 0.0 else 0.0
            scores[link.url] = best - self.focused.own_words_weight * (best - score)
        return scores, of_block
