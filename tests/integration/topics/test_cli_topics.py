"""``topicrawl topics track --demo`` and ``topicrawl topics show``, as a user runs them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from topicrawl.cli.app import app

runner = CliRunner()


def flat(text: str) -> str:
    """Output with rich's line wrapping undone."""
    return " ".join(text.split())


def test_track_the_demo_then_show_the_history(tmp_path: Path) -> None:
    db = tmp_path / "topics.db"
    result = runner.invoke(
        app,
        ["topics", "track", "--demo", "--periods", "3", "--period-seconds", "0", "--db", str(db)],
    )
    assert result.exit_code == 0, result.output
    for period in range(3):
        assert f"period {period}:" in result.output
    assert "topics show" in result.output
    with sqlite3.connect(db) as connection:
        periods = [r[0] for r in connection.execute("SELECT period FROM tracking_periods")]
        forecasts = connection.execute("SELECT COUNT(*) FROM heat_forecasts").fetchone()[0]
        allocated = connection.execute("SELECT COUNT(*) FROM allocations").fetchone()[0]
    assert periods == [0, 1, 2]
    assert forecasts > 0
    assert allocated > 0

    chart = tmp_path / "chart.html"
    shown = runner.invoke(app, ["topics", "show", "--db", str(db), "--html", str(chart)])
    assert shown.exit_code == 0, shown.output
    assert "topics over periods 0-2" in shown.output
    page = chart.read_text(encoding="utf-8")
    assert page.count("<svg") >= 5
    assert "<script" not in page


def test_track_resumes_with_the_same_database(tmp_path: Path) -> None:
    db = tmp_path / "topics.db"
    args = ["topics", "track", "--demo", "--periods", "1", "--period-seconds", "0", "--db", str(db)]
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "resuming after period 0" in again.output
    assert "period 1:" in again.output


def test_bad_usage_gets_clear_errors(tmp_path: Path) -> None:
    no_source = runner.invoke(app, ["topics", "track", "--keyword", "x"])
    assert no_source.exit_code == 2
    assert "--source" in flat(no_source.output)

    no_keyword = runner.invoke(app, ["topics", "track", "--source", "http://127.0.0.1:9/"])
    assert no_keyword.exit_code == 2
    assert "keyword" in flat(no_keyword.output)

    unreachable = runner.invoke(
        app,
        [
            "topics",
            "track",
            "--source",
            "http://127.0.0.1:9/",
            "--keyword",
            "x",
            "--db",
            str(tmp_path / "t.db"),
            "--periods",
            "1",
        ],
    )
    assert unreachable.exit_code == 3
    assert "cannot reach" in flat(unreachable.output)

    bad_alpha = runner.invoke(
        app, ["topics", "track", "--source", "http://127.0.0.1:9/", "-k", "x", "--alpha", "1.5"]
    )
    assert bad_alpha.exit_code == 2
    assert "--alpha must be" in flat(bad_alpha.output)

    missing = runner.invoke(app, ["topics", "show", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 4
    assert "does not exist" in flat(missing.output)
