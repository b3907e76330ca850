"""An optional resolver through yt-dlp (extra ``video``): for the domains it knows.

yt-dlp fetches the page and its manifests itself, with its own HTTP client: register this
resolver only for domains where that is wanted (it bypasses the crawler's politeness queue,
though each call is one page). It is always called with ``download=False`` and a socket
timeout, in a thread, under an overall timeout. ``extractors`` restricts which yt-dlp
extractors may run (``("generic",)`` for its generic HTML extractor, as the benchmark does;
the default ``("default",)`` lets yt-dlp pick).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from topicrawl.core.errors import ConfigError
from topicrawl.parse.video.detect import media_type
from topicrawl.parse.video.model import MediaUrl, Resolution
from topicrawl.parse.video.resolvers import ManifestFetcher

__all__ = ["YtDlpResolver", "ytdlp_available"]


def ytdlp_available() -> bool:
    """Whether yt-dlp is installed (``pip install topicrawl[video]``)."""
    try:
        import yt_dlp  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


class _QuietLogger:
    def debug(self, msg: str) -> None:
        pass

    def warning(self, msg: str) -> None:
        pass

    def error(self, msg: str) -> None:
        pass


class YtDlpResolver:
    """Lists media URLs with ``yt_dlp.YoutubeDL.extract_info(url, download=False)``.

    Raises:
        ConfigError: yt-dlp is not installed, or a timeout is not positive.
    """

    name = "ytdlp"

    def __init__(
        self, *, timeout: float = 30.0, extractors: tuple[str, ...] = ("default",)
    ) -> None:
        if not ytdlp_available():
            raise ConfigError("the yt-dlp resolver needs yt-dlp: pip install 'topicrawl[video]'")
        if timeout <= 0:
            raise ConfigError("the yt-dlp timeout must be > 0")
        self._timeout = timeout
        self._options: dict[str, Any] = {
            "quiet": True,
            "no_warnings": True,
            "skip_download": True,
            "noplaylist": False,
            "socket_timeout": timeout,
            "retries": 0,
            "extractor_retries": 0,
            "allowed_extractors": list(extractors),
            "logger": _QuietLogger(),
            "cachedir": False,
        }

    async def resolve(
        self, url: str, html: str = "", *, fetch: ManifestFetcher | None = None
    ) -> Resolution:
        """yt-dlp's formats for ``url`` (``html`` and ``fetch`` are not used: yt-dlp fetches).

        A page yt-dlp finds no video on, or that times out, is ``none`` with the error kept.
        """
        try:
            info = await asyncio.wait_for(asyncio.to_thread(self._extract, url), self._timeout * 2)
        except TimeoutError:
            return Resolution(url, "none", (), self.name, errors=(f"{url}: yt-dlp timed out",))
        except Exception as exc:  # yt-dlp's DownloadError/ExtractorError and their causes
            message = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            return Resolution(url, "none", (), self.name, errors=(f"{url}: {message}",))
        media = tuple(dict.fromkeys(_media_of(info)))
        return Resolution(url, "play" if media else "none", media, self.name)

    def _extract(self, url: str) -> dict[str, Any]:
        from yt_dlp import YoutubeDL  # noqa: PLC0415 (optional dependency)
        from yt_dlp.networking.exceptions import HTTPError  # noqa: PLC0415

        opened: list[Any] = []

        class _Closing(YoutubeDL):  # type: ignore[misc]
            """Closes every response yt-dlp opened when it is closed: its generic extractor
            keeps a page's response unclosed in a reference cycle, whose socket stays open
            until the garbage collector finds it (seen with yt-dlp 2025.x)."""

            def urlopen(self, req: Any) -> Any:
                try:
                    response = super().urlopen(req)
                except HTTPError as exc:
                    opened.append(exc.response)
                    raise
                opened.append(response)
                return response

        try:
            with _Closing(self._options) as ydl:
                info = ydl.extract_info(url, download=False)
        finally:
            for response in opened:
                response.close()
        return dict(info or {})


def _entries(info: dict[str, Any]) -> Iterator[dict[str, Any]]:
    entries = info.get("entries")
    if entries is None:
        yield info
        return
    for entry in entries:
        if isinstance(entry, dict):
            yield from _entries(entry)


def _media_of(info: dict[str, Any]) -> Iterator[MediaUrl]:
    for entry in _entries(info):
        formats = entry.get("formats") or [entry]
        for fmt in formats:
            if not isinstance(fmt, dict):
                continue
            manifest = fmt.get("manifest_url")
            if isinstance(manifest, str) and (kind := media_type(manifest)) is not None:
                yield MediaUrl(manifest, kind, source="ytdlp")
            url = fmt.get("url")
            if not isinstance(url, str) or fmt.get("vcodec") == "none":
                continue
            protocol = str(fmt.get("protocol") or "")
            kind = "hls" if protocol.startswith("m3u8") else media_type(url, fmt.get("ext"))
            if kind is None:
                continue
            tbr = fmt.get("tbr")
            yield MediaUrl(
                url,
                kind,
                fmt.get("width") if isinstance(fmt.get("width"), int) else None,
                fmt.get("height") if isinstance(fmt.get("height"), int) else None,
                int(tbr * 1000) if isinstance(tbr, int | float) and tbr > 0 else None,
                "ytdlp",
            )
