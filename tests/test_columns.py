"""Narrow columns of line numbers take a value past four billion by widening, losing none before it."""

from __future__ import annotations

from compactcli.core.columns import narrow, widened
from compactcli.layers.micro import Facts, ResultFact
from compactcli.pipelines.micro_file import Spans


def test_widened_keeps_the_values_and_appends_the_big_one():
    column = narrow()
    column.extend([1, 7, 2**32 - 1])
    wide = widened(column, 2**32)
    assert list(wide) == [1, 7, 2**32 - 1, 2**32]
    assert wide.itemsize == 8


def test_spans_past_four_billion_lines_and_bytes():
    spans = Spans()
    spans.add(3, 10, 5)
    spans.add(2**32 + 5, 2**40, 2**33)  # a line number and a length no 4-byte column holds
    spans.add(2**32 + 6, 2**40 + 2**33, 1)
    assert spans[3] == (10, 5)
    assert spans[2**32 + 5] == (2**40, 2**33)
    assert spans[2**32 + 6] == (2**40 + 2**33, 1)


def test_result_facts_past_four_byte_values():
    facts = Facts([ResultFact(5, -1, "a", True, 10, None), ResultFact(2**32, 2**31, "b", True, 2**33, None)])
    assert [(fact.line, fact.slot, fact.chars) for fact in facts] == [(5, -1, 10), (2**32, 2**31, 2**33)]
