"""Loading schemas and rules from TOML: good files work, bad ones give clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicrawl.parse.methods import ParserConfigError, load_config

from .pages import SCHEMA_TOML

HEAD = '[[schemas]]\nname = "a"\ndomains = ["x.com"]\n[schemas.fields.t]\n'


def test_a_schema_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "parsers.toml"
    path.write_text(SCHEMA_TOML, encoding="utf-8")
    config = load_config(path)
    (schema,) = config.schemas
    assert schema.name == "film"
    assert schema.required == ("title", "plays")
    assert config.schema_for("filmsite.com", "/film/1.html") is schema
    assert config.schema_for("filmsite.com", "/about") is None
    assert config.schema_for("other.org", "/film/1.html") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[schemas]\nname=", "not valid TOML"),
        (
            HEAD + 'rule = "css:h1[["\n',
            "bad CSS selector",
        ),
        (
            HEAD + 'rule = "xpath://h1[("\n',
            "bad XPath",
        ),
        (
            HEAD + 'validator = "money"\n',
            "unknown validator",
        ),
        (
            '[[schemas]]\nname = "a"\n[schemas.fields.t]\nvalidator = "text"\n',
            "needs at least one domain",
        ),
        ('[[schemas]]\nname = "a"\ndomains = ["x.com"]\n', "needs [schemas.fields.NAME]"),
        (
            '[[schemas]]\nname = "a"\ndomains = ["x.com"]\npaths = ["(("]\n[schemas.fields.t]\n',
            "bad regular expression",
        ),
        (
            HEAD + 'selector = "h1"\n',
            "unknown keys",
        ),
    ],
)
def test_bad_settings_are_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ParserConfigError, match=r"bad\.toml") as caught:
        load_config(path)
    assert message in str(caught.value)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ParserConfigError, match="cannot read"):
        load_config(tmp_path / "nope.toml")
