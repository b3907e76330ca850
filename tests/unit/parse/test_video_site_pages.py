"""The demo video site's player-iframe pages and held-out pages (session 20) through the
detector and the generic resolver, manifests read from the site itself (no server)."""

from __future__ import annotations

import pytest

from topicrawl.demoweb.video import VideoSite, build_video_site
from topicrawl.parse.video import GenericResolver, detect_video

OTHER = "http://other.test/"


@pytest.fixture(scope="module")
def site() -> VideoSite:
    return build_video_site(seed=0, titles=4, heldout=True, cross_base=OTHER)


async def _resolve(site: VideoSite, url: str) -> set[str]:
    async def fetch(manifest: str) -> bytes:
        status, _, body = site.render(manifest[len(site.base) - 1 :])
        assert status == 200, manifest
        return body

    path = url[len(site.base) - 1 :]
    html = site.render(path)[2].decode()
    result = await GenericResolver().resolve(url, html, fetch=fetch)
    return {m.url for m in result.media}


async def test_iframe_pages_name_their_player_page_whose_media_resolve(site: VideoSite) -> None:
    framed = [p for p in site.paths() if site.truth(p).embeds]
    assert len(framed) >= 7
    other = build_video_site(seed=0, titles=4, base=OTHER)
    crossed = 0
    for path in framed:
        truth = site.truth(path)
        page = detect_video(site.render(path)[2].decode(), site.url(path))
        assert page.video_class == "video", path
        assert page.media == ()
        assert set(truth.embeds) <= set(page.embeds), path
        for embed in truth.embeds:
            host = other if embed.startswith(OTHER) else site
            crossed += host is other
            want = {m.url for m in host.truth(embed[len(host.base) - 1 :]).media}
            assert want
            assert await _resolve(host, embed) == want, embed
    assert crossed == 1  # the cross-origin player page, on the other host


async def test_heldout_pages_class_and_media(site: VideoSite) -> None:
    held = [p for p in site.paths() if p.startswith("/heldout/")]
    assert len(held) >= 20
    resolver = GenericResolver()
    for path in held:
        truth = site.truth(path)

        async def fetch(manifest: str) -> bytes:
            return site.render(manifest[len(site.base) - 1 :])[2]

        html = site.render(path)[2].decode()
        result = await resolver.resolve(site.url(path), html, fetch=fetch)
        assert result.video_class == truth.video_class, path
        assert {m.url for m in result.media} == {m.url for m in truth.media}, path
