"""Reading settings from the environment, with errors that name the variable.

pydantic-settings decodes a list or object setting from JSON and, when that fails, raises an
error naming only the field. Here a list setting also takes the plain forms a person writes
(``TOPICRAWL_TOPICS='java thread'``, ``TOPICRAWL_SEEDS=https://a/,https://b/``), and a value
that is neither says which variable it was and what was expected. Invalid values are
described one line each, with the setting, the value and where it came from.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import EnvSettingsSource, SettingsError

__all__ = [
    "BadEnvironmentValue",
    "EnvironmentSource",
    "describe_invalid",
    "describe_unreadable",
    "env_variable",
    "parse_list",
]

ENV_PREFIX = "TOPICRAWL_"
NESTED = "__"


class BadEnvironmentValue(ValueError):
    """An environment variable's value could not be decoded (raised inside pydantic-settings,
    which wraps it; :func:`topicrawl.core.config.load_settings` unwraps it)."""


def parse_list(value: object, *, split: bool) -> object:
    """A list setting given as a string: a JSON array, else comma-separated items (``split``)
    or one item. Any other value is returned as is, for pydantic to validate.

    Raises:
        ValueError: the string starts with ``[`` but is not a JSON array, and ``split`` is set.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            if split:
                raise ValueError(
                    f"starts with '[' but is not a JSON array ({exc.msg} at column {exc.colno})"
                ) from exc
        else:
            if isinstance(parsed, list):
                return tuple(parsed)
    if not split:
        return (text,) if text else ()
    return tuple(item.strip() for item in text.split(",") if item.strip())


def env_variable(loc: tuple[str | int, ...]) -> str | None:
    """The environment variable that set the setting at ``loc`` (or a section holding it), if
    one is set: ``("fetch", "timeout")`` -> ``TOPICRAWL_FETCH__TIMEOUT`` or ``TOPICRAWL_FETCH``."""
    names = {name.upper(): name for name in os.environ}
    parts = [str(part).upper() for part in loc if isinstance(part, str)]
    for end in range(len(parts), 0, -1):
        candidate = ENV_PREFIX + NESTED.join(parts[:end])
        if candidate in names:
            return names[candidate]
    return None


def _expected(field: FieldInfo | None, variable: str) -> str:
    annotation = field.annotation if field is not None else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        name = next(iter(annotation.model_fields), "name")
        return (
            f'a JSON object of settings such as {{"{name}": ...}}, or one variable per setting '
            f"such as {variable}{NESTED}{name.upper()}=..."
        )
    if annotation is dict or getattr(annotation, "__origin__", None) is dict:
        return (
            'a JSON object such as {"name": 0.5}, or one variable per entry such as '
            f"{variable}{NESTED}NAME=0.5"
        )
    return "a JSON value"


class EnvironmentSource(EnvSettingsSource):
    """The environment source with decoding errors that name the variable and the form wanted."""

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        try:
            return super().decode_complex_value(field_name, field, value)
        except ValueError as exc:
            variable = self._variable_of(field_name, value)
            detail = (
                f"{exc.msg} at column {exc.colno}"
                if isinstance(exc, json.JSONDecodeError)
                else str(exc)
            )
            raise BadEnvironmentValue(
                f"{variable}={value!r} is not valid JSON ({detail}); expected "
                f"{_expected(field, variable)}"
            ) from exc

    def _variable_of(self, field_name: str, value: object) -> str:
        found = _named(self.env_vars, field_name, value)
        return found.upper() if found else ENV_PREFIX + field_name.upper()


def _named(env_vars: Mapping[str, str | None], field_name: str, value: object) -> str | None:
    suffix = field_name.lower()
    for name, held in env_vars.items():
        lowered = name.lower()
        if held == value and lowered.startswith(ENV_PREFIX.lower()) and lowered.endswith(suffix):
            return name
    return None


def describe_invalid(exc: ValidationError, overrides: dict[str, Any], path: Path | None) -> str:
    """One line per invalid value, naming the setting, where it came from and what is wrong."""
    lines = [_describe_one(error, overrides, path) for error in exc.errors()]
    if len(lines) == 1:
        return f"invalid setting {lines[0]}"
    return "\n".join(["invalid settings:", *(f"  {line}" for line in lines)])


def _describe_one(error: Any, overrides: dict[str, Any], path: Path | None) -> str:
    loc = tuple(error["loc"])
    where = ".".join(str(part) for part in loc)
    message = str(error["msg"]).removeprefix("Value error, ")
    if not where:
        return message
    origin = _origin(loc, overrides, path)
    value = error.get("input")
    shown = f" = {value!r}" if isinstance(value, (str, int, float)) else ""
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"{where}{shown}{origin}: {message}"


def _origin(loc: tuple[Any, ...], overrides: dict[str, Any], path: Path | None) -> str:
    given: Any = overrides
    for part in loc:
        if not isinstance(given, dict) or part not in given:
            break
        given = given[part]
    else:
        return ""
    if loc and loc[0] in overrides:
        return ""
    variable = env_variable(loc)
    if variable is not None:
        return f" (from {variable})"
    return f" (from {path})" if path is not None else ""


def describe_unreadable(exc: SettingsError) -> str:
    """One line saying which environment variable could not be read, and what it should be."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, BadEnvironmentValue):
            return f"invalid environment variable {cause}"
        cause = cause.__cause__
    detail = f": {exc.__cause__}" if exc.__cause__ is not None else ""
    return f"invalid settings: {exc}{detail}"
