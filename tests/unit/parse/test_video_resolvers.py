"""Resolver plugins found through a real entry point; the yt-dlp resolver on loopback pages."""

from __future__ import annotations

import asyncio
import gc
import socket
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from topicrawl.demoweb.video import VideoServer, build_video_site
from topicrawl.parse.video import GenericResolver, Resolution, ResolverRegistry
from topicrawl.parse.video.ytdlp import YtDlpResolver, ytdlp_available

GROUP = "topicrawl.video_resolvers"


@pytest.fixture
def plugin_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed distribution (a dist-info with entry points) and its module, on sys.path."""
    (tmp_path / "demo_video_plugin.py").write_text(
        textwrap.dedent(
            """
            from topicrawl.parse.video import MediaUrl, Resolution

            class ExampleResolver:
                name = "example"

                async def resolve(self, url, html, *, fetch=None):
                    media = (MediaUrl(url.replace(".html", ".mp4"), "mp4", source="example"),)
                    return Resolution(url, "play", media, self.name)
            """
        )
    )
    info = tmp_path / "demo_video_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-video-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\n"
        "example.org = demo_video_plugin:ExampleResolver\n"
        "broken.test = demo_video_plugin_missing:Nothing\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("demo_video_plugin", None)


def test_registry_loads_plugins_by_entry_point(plugin_on_path: Path) -> None:
    registry = ResolverRegistry.from_entry_points()
    assert "example.org" in registry.domains()
    resolver = registry.for_url("https://www.example.org/watch/1.html")
    assert resolver.name == "example"
    result = asyncio.run(resolver.resolve("https://www.example.org/watch/1.html", "<html/>"))
    assert [m.url for m in result.media] == ["https://www.example.org/watch/1.mp4"]
    # other domains get the generic resolver; the broken plugin is named, not fatal
    assert isinstance(registry.for_url("https://notexample.org/x"), GenericResolver)
    assert any("broken.test" in e and "ModuleNotFoundError" in e for e in registry.errors)


def test_registry_refuses_what_is_not_a_resolver() -> None:
    registry = ResolverRegistry()
    with pytest.raises(TypeError, match="not a video resolver"):
        registry.register("x.test", object())  # type: ignore[arg-type]


class _Fixed:
    name = "fixed"

    async def resolve(self, url: str, html: str, *, fetch: object = None) -> Resolution:
        return Resolution(url, "none", (), self.name)


def test_domain_matching_is_by_label() -> None:
    registry = ResolverRegistry({"video.test": _Fixed()})
    assert registry.for_url("http://a.b.video.test/x").name == "fixed"
    assert registry.for_url("http://video.test:8080/x").name == "fixed"
    assert registry.for_url("http://othervideo.test/x").name == "generic"


@pytest.fixture(scope="module")
def video_server() -> Iterator[VideoServer]:
    with build_video_site(seed=0, titles=10).server().run_in_thread() as server:
        yield server


@pytest.mark.skipif(not ytdlp_available(), reason="yt-dlp (extra 'video') is not installed")
def test_ytdlp_resolver_on_loopback_pages(video_server: VideoServer) -> None:
    site = video_server.site
    resolver = YtDlpResolver(timeout=10)
    plays = [p for p in site.paths() if site.truth(p).kind == "play" and not site.truth(p).subkind]
    mp4 = next(
        p
        for p in plays
        if "<source" in site.render(p)[2].decode() and ".mp4" in site.render(p)[2].decode()
    )
    result = asyncio.run(resolver.resolve(site.url(mp4)))
    assert result.video_class == "play"
    assert {m.url for m in result.media} == {m.url for m in site.truth(mp4).media}
    blog = asyncio.run(resolver.resolve(site.url("/blog/encoding.html")))
    assert blog.video_class == "none"
    assert blog.errors  # yt-dlp says why: unsupported URL
    missing = asyncio.run(resolver.resolve(site.base + "no/such/page.html"))
    assert missing.video_class == "none"
    assert "404" in missing.errors[0]
    # yt-dlp's generic extractor leaves its page response unclosed in a reference cycle: the
    # resolver closes what yt-dlp opened, so the garbage collector finds no open socket.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    assert not [w for w in caught if isinstance(getattr(w, "source", None), socket.socket)]
