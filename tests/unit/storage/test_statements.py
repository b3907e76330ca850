"""Multi-row SQLite inserts come in a few fixed sizes, so few statements are ever prepared."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from topicrawl.storage.statements import MAX_ROWS_PER_STATEMENT, RowStatement

COLUMNS = ("a", "b", "c")
SQL = "INSERT INTO t (a, b, c) VALUES (?, ?, ?)"


def statement(max_variables: int = 250_000) -> RowStatement:
    return RowStatement(SQL, COLUMNS, max_variables=max_variables)


@given(st.integers(min_value=0, max_value=1000))
def test_chunks_keep_every_row_in_order_in_power_of_two_statements(count: int) -> None:
    rows = [(i, f"u{i}", i * 2) for i in range(count)]
    chunks = statement().chunks(rows)
    flat = [value for _, parameters in chunks for value in parameters]
    assert flat == [value for row in rows for value in row]
    for sql, parameters in chunks:
        size = sql.count("(?, ?, ?)")
        assert size * len(COLUMNS) == len(parameters)
        assert size & (size - 1) == 0
        assert size <= MAX_ROWS_PER_STATEMENT
    # Full statements first, then falling sizes: at most one of each smaller size.
    sizes = [sql.count("(?, ?, ?)") for sql, _ in chunks]
    assert sizes == sorted(sizes, reverse=True)
    rest = [size for size in sizes if size < MAX_ROWS_PER_STATEMENT]
    assert len(rest) == len(set(rest))


def test_batches_of_every_length_prepare_at_most_seven_statements() -> None:
    made = statement()
    texts = {sql for count in range(1, 301) for sql, _ in made.chunks([(1, 2, 3)] * count)}
    assert len(texts) == 7  # 64, 32, 16, 8, 4, 2 and 1 rows


def test_a_low_variable_limit_caps_rows_per_statement() -> None:
    made = statement(max_variables=20)  # 6 rows of 3 fit; the statements take 4
    assert made.rows_per_statement == 4
    assert [sql.count("(?, ?, ?)") for sql, _ in made.chunks([(1, 2, 3)] * 11)] == [4, 4, 2, 1]


def test_the_statements_insert_into_sqlite() -> None:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (a, b, c)")
    rows = [(i, str(i), None) for i in range(203)]
    for sql, parameters in statement().chunks(rows):
        connection.execute(sql, parameters)
    assert connection.execute("SELECT a, b, c FROM t ORDER BY rowid").fetchall() == rows
