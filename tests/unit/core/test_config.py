from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from topicrawl.core.config import CrawlSettings, load_settings
from topicrawl.core.errors import ConfigError

README = Path(__file__).resolve().parents[3] / "README.md"


def _field_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    paths = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths += _field_paths(annotation, f"{prefix}{name}.")
        else:
            paths.append(prefix + name)
    return paths


def test_every_setting_is_documented_in_the_readme() -> None:
    readme = README.read_text(encoding="utf-8")
    missing = [p for p in _field_paths(CrawlSettings) if f"`{p}`" not in readme]
    assert missing == []


def test_environment_overrides_nested_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOPICRAWL_FETCH__TIMEOUT", "3.5")
    monkeypatch.setenv("TOPICRAWL_POLITENESS__PER_HOST", "2")
    settings = load_settings()
    assert settings.fetch.timeout == 3.5
    assert settings.politeness.per_host == 2


def test_toml_file_is_read_and_code_wins(tmp_path: Path) -> None:
    path = tmp_path / "crawl.toml"
    path.write_text('max_pages = 42\nstrategy = "bfs"\n[politeness]\ndelay = 0.25\n')
    settings = load_settings(path, strategy="focused")
    assert settings.max_pages == 42
    assert settings.politeness.delay == 0.25
    assert settings.strategy == "focused"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"bogus": 1}, "bogus"),
        ({"fetch": {"timeot": 1}}, "fetch.timeot"),
        ({"concurrency": 0}, "concurrency"),
        ({"seeds": ["ftp://x/"]}, "seeds"),
    ],
)
def test_bad_settings_are_clear_errors(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        load_settings(**kwargs)  # type: ignore[arg-type]


def test_bad_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("max_pages = = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")
    (tmp_path / "typo.toml").write_text("max_pagez = 3")
    with pytest.raises(ConfigError, match="max_pagez"):
        load_settings(tmp_path / "typo.toml")
