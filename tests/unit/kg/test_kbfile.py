"""Reading KB files: both formats, and every bad line reported with its number."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from topicrawl.cli.app import app
from topicrawl.kg.kbfile import KbFileError, parse_kb, read_kb_file

CSV = """\
kind,id,name,type,aliases,priors,description,subject,relation,object,confidence
entity,apple-inc,Apple Inc.,organisation,Apple|苹果公司,0.6|1,maker of the iPhone,,,,
entity,apple-fruit,apple,food,Apple|苹果,0.4|0.8,a fruit,,,,
relation,,,,,,,apple-inc,named_after,apple-fruit,0.5
"""


def test_csv_entities_with_priors_and_a_relation() -> None:
    kb = parse_kb(CSV, fmt="csv")
    inc = kb.get("apple-inc")
    assert inc is not None
    assert inc.type == "organisation"
    assert [(a.text, a.prior) for a in inc.all_names()] == [
        ("Apple Inc.", 1.0),
        ("Apple", 0.6),
        ("苹果公司", 1.0),
    ]
    assert [(r.subject, r.type, r.object, r.confidence) for r in kb.relations] == [
        ("apple-inc", "named_after", "apple-fruit", 0.5)
    ]
    assert {e.key for e in kb.find("apple")} == {"apple-inc", "apple-fruit"}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "a", "type": "person"}', "'name' must be a non-empty string"),
        ('{"id": "a", "name": "A", "type": "p", "aliases": "A"}', "'aliases' must be a list"),
        (
            '{"id": "a", "name": "A", "type": "p", "aliases": [{"alias": "x", "prior": 2}]}',
            "prior must be in (0, 1]",
        ),
        ('{"id": "found:x", "name": "A", "type": "p"}', "kept for entities the crawl finds"),
        ('{"subject": "e1", "relation": "r", "object": "nobody"}', "unknown entity id 'nobody'"),
        ('{"subject": "e1", "object": "e1"}', "needs a non-empty 'relation'"),
        ('{"kind": "event", "id": "a"}', "kind must be 'entity' or 'relation'"),
        ("[1, 2]", "not a JSON object"),
        ('{"id": "e1", "name": "again", "type": "p"}', "entity id 'e1' is defined twice"),
    ],
)
def test_a_bad_jsonl_line_is_named_by_its_number(line: str, problem: str) -> None:
    content = '# a comment\n{"id": "e1", "name": "One", "type": "person"}\n\n' + line + "\n"
    with pytest.raises(KbFileError) as caught:
        parse_kb(content, fmt="jsonl")
    [reported] = caught.value.problems
    assert reported.startswith("line 4: ")
    assert problem in reported


def test_csv_problems_carry_line_numbers() -> None:
    content = CSV + "entity,b,B,,,,,,,,\nentity,c,C,person,x|y,0.5,,,,,\n"
    with pytest.raises(KbFileError) as caught:
        parse_kb(content, fmt="csv")
    assert caught.value.problems == [
        "line 5: 'type' must be a non-empty string",
        "line 6: 2 aliases but 1 priors",
    ]


def test_unknown_csv_column_is_refused() -> None:
    with pytest.raises(KbFileError, match="line 1: unknown column"):
        parse_kb("id,name,colour\n1,A,red\n", fmt="csv")


def test_relations_may_name_entities_already_known() -> None:
    kb = parse_kb(
        '{"subject": "old", "relation": "r", "object": "old"}', fmt="jsonl", known={"old"}
    )
    assert len(kb.relations) == 1


def test_cli_rejects_a_bad_file_whole_with_exit_2(tmp_path: Path) -> None:
    kb = tmp_path / "kb.jsonl"
    kb.write_text(
        '{"id": "a", "name": "A", "type": "person"}\nnot json\n'
        '{"id": "b", "name": "B", "type": ""}\n',
        encoding="utf-8",
    )
    db = tmp_path / "crawl.db"
    result = CliRunner().invoke(app, ["kg", "load", str(kb), "--db", str(db)])
    assert result.exit_code == 2
    assert "line 2: not valid JSON" in result.output
    assert "line 3: 'type' must be a non-empty string" in result.output
    assert not db.exists()  # nothing made, nothing half-loaded


def test_cli_loads_a_good_file_and_a_later_one_may_relate_to_it(tmp_path: Path) -> None:
    first = tmp_path / "kb.csv"
    first.write_text(CSV, encoding="utf-8")
    later = tmp_path / "more.jsonl"
    later.write_text(
        '{"id": "jobs", "name": "Steve Jobs", "type": "person"}\n'
        '{"subject": "jobs", "relation": "founded", "object": "apple-inc"}\n',
        encoding="utf-8",
    )
    db = str(tmp_path / "crawl.db")
    runner = CliRunner()
    assert runner.invoke(app, ["kg", "load", str(first), "--db", db]).exit_code == 0
    result = runner.invoke(app, ["kg", "load", str(later), "--db", db])
    assert result.exit_code == 0, result.output
    assert "loaded 1 entities" in result.output
    assert "1 relations" in result.output


def test_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KbFileError, match="cannot read it"):
        read_kb_file(tmp_path / "missing.jsonl")
