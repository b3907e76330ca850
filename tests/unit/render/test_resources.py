"""What a rendering page may load (pure policy)."""

from __future__ import annotations

import pytest

from topicrawl.render.resources import ResourceAction, resource_action


@pytest.mark.parametrize("kind", ["image", "media", "font", "stylesheet", "websocket", "other"])
def test_images_media_fonts_and_styles_are_blocked(kind: str) -> None:
    assert resource_action(kind, "GET", "http://a/x") is ResourceAction.BLOCK_TYPE


@pytest.mark.parametrize("kind", ["script", "xhr", "fetch"])
def test_scripts_and_xhr_are_loaded_by_get_only(kind: str) -> None:
    assert resource_action(kind, "GET", "http://a/x") is ResourceAction.LOAD
    assert resource_action(kind, "POST", "http://a/x") is ResourceAction.BLOCK_METHOD


def test_other_schemes_are_blocked() -> None:
    assert resource_action("script", "GET", "ftp://a/x.js") is ResourceAction.BLOCK_SCHEME
