from __future__ import annotations

import os
import subprocess
import sys
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


# -- issue 26 item 4: environment values and bounds ------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "needles"),
    [
        ("TOPICRAWL_STRATEGY_OPTIONS", "{bad", ["TOPICRAWL_STRATEGY_OPTIONS", "JSON object"]),
        ("TOPICRAWL_FETCH", "{bad", ["TOPICRAWL_FETCH=", "TOPICRAWL_FETCH__USER_AGENT"]),
        ("TOPICRAWL_SEEDS", "notjson", ["TOPICRAWL_SEEDS", "not an http(s) URL"]),
        ("TOPICRAWL_SEEDS", "[bad", ["TOPICRAWL_SEEDS", "not a JSON array"]),
        ("TOPICRAWL_FETCH__TIMEOUT", "inf", ["TOPICRAWL_FETCH__TIMEOUT", "finite"]),
        ("TOPICRAWL_FETCH__CONNECT_TIMEOUT", "nan", ["fetch.connect_timeout", "finite"]),
        ("TOPICRAWL_FETCH__TIMEOUT", "1e9", ["fetch.timeout", "less than or equal"]),
        ("TOPICRAWL_FETCH__USER_AGENT", "bot\r\nX-Evil: 1", ["fetch.user_agent", "control"]),
        ("TOPICRAWL_PARSE_WORKERS", "1000", ["parse_workers", "per core"]),
        ("TOPICRAWL_FETCH__MAX_BODY_BYTES", "0", ["fetch.max_body_bytes", "greater than 0"]),
        ("TOPICRAWL_FETCH__CONTENT_TYPES", "html", ["fetch.content_types", "media type"]),
        ("TOPICRAWL_FETCH__PROXIES", "socks5://p:1", ["fetch.proxies", "http://"]),
        ("TOPICRAWL_SCOPE__ALLOWED_DOMAINS", "https://a.org/", ["allowed_domains", "domain"]),
        ("TOPICRAWL_SCOPE__INCLUDE", "(", ["scope.include", "regex"]),
        ("TOPICRAWL_STORAGE__BATCH_SIZE", "-1", ["storage.batch_size"]),
        ("TOPICRAWL_STRATEGY_OPTIONS", '{"decay": NaN}', ["decay", "finite"]),
        ("TOPICRAWL_FRONTIER__BLOOM_ERROR_RATE", "0", ["bloom_error_rate"]),
    ],
)
def test_bad_environment_values_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, needles: list[str]
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("TOPICRAWL_TOPICS", "java thread", ("java thread",)),
        ("TOPICRAWL_TOPICS", "java thread, python asyncio", ("java thread", "python asyncio")),
        ("TOPICRAWL_TOPICS", '["a, b", "c"]', ("a, b", "c")),
        ("TOPICRAWL_SEEDS", "https://a.org/", ("https://a.org/",)),
        ("TOPICRAWL_SEEDS", "https://a.org/,http://b.org/x", ("https://a.org/", "http://b.org/x")),
    ],
)
def test_list_settings_take_plain_strings(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: tuple[str, ...]
) -> None:
    monkeypatch.setenv(variable, value)
    settings = load_settings()
    assert getattr(settings, variable.removeprefix("TOPICRAWL_").lower()) == expected


def test_a_regex_list_takes_one_pattern_that_looks_like_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOPICRAWL_SCOPE__INCLUDE", "[a-z]+/docs/")
    monkeypatch.setenv("TOPICRAWL_SCOPE__EXCLUDE", '["\\\\.pdf$", "/login"]')
    settings = load_settings()
    assert settings.scope.include == ("[a-z]+/docs/",)
    assert settings.scope.exclude == ("\\.pdf$", "/login")


def test_a_lease_must_outlast_a_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOPICRAWL_FETCH__TIMEOUT", "600")
    with pytest.raises(ConfigError, match=r"lease_ttl \(300 s\) must be longer than"):
        load_settings()
    assert load_settings(frontier={"lease_ttl": 900}).frontier.lease_ttl == 900


def test_every_default_is_within_its_bounds() -> None:
    settings = CrawlSettings()
    assert CrawlSettings.model_validate(settings.model_dump()) == settings


def test_crawl_with_a_bad_environment_value_exits_2_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "TOPICRAWL_FETCH": "{bad", "COLUMNS": "80"}
    result = subprocess.run(
        [sys.executable, "-m", "topicrawl.cli", "crawl", "--seed", "http://127.0.0.1:9/",
         "--db", str(tmp_path / "c.db"), "--quiet"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "TOPICRAWL_FETCH=" in lines[0]


# -- render (helper s16-render) --
def test_render_settings_are_checked() -> None:
    assert load_settings().render == "never"
    with pytest.raises(ConfigError, match="render"):
        load_settings(render="sometimes")
    with pytest.raises(ConfigError, match="site_rules"):
        load_settings(browser={"site_rules": ["["]})
    with pytest.raises(ConfigError, match=r"browser\.pages"):
        load_settings(browser={"pages": 0})
    settings = load_settings(render="auto", browser={"site_rules": "^https://app\\.example/"})
    assert settings.browser.site_rules == ("^https://app\\.example/",)
