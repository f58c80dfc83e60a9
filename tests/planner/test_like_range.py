"""``LIKE 'prefix%'`` as a key range: the range holds exactly the strings the prefix starts."""
from __future__ import annotations

from hypothesis import given, strategies as st

from piql.planner.like_range import PrefixRange, literal_prefix, prefix_range, successor

TEXT = st.text(alphabet=st.sampled_from("aAbz%_\x00\ud7ff\ue000\U0010ffffé"), max_size=6)


def test_the_successor_grows_the_last_character_that_can_grow():
    assert successor("ab") == "ac"
    assert successor("a\U0010ffff") == "b"
    assert successor("\ud7ff") == "\ue000"  # past the surrogates, which UTF-8 cannot hold
    assert successor("\U0010ffff\U0010ffff") is None


def test_the_literal_prefix_stops_at_the_first_wildcard():
    assert literal_prefix("ab_c%") == "ab"
    assert prefix_range("ab%") == PrefixRange("ab", "ac", True)
    assert prefix_range("ab%%") == PrefixRange("ab", "ac", True)
    assert prefix_range("ab_%") == PrefixRange("ab", "ac", False)
    assert prefix_range("ab%c") == PrefixRange("ab", "ac", False)
    assert prefix_range("%ab") is None and prefix_range("ab") is None


@given(TEXT.filter(lambda p: "%" not in p and "_" not in p and p), TEXT)
def test_the_range_holds_exactly_the_strings_the_prefix_starts(prefix, text):
    found = prefix_range(prefix + "%")
    assert found is not None and found.exact
    inside = found.lower <= text and (found.upper is None or text < found.upper)
    assert inside == text.startswith(prefix)
    # what the stores compare: UTF-8 bytes (SQLite's BINARY, PostgreSQL's "C")
    encoded = text.encode("utf-8", "surrogatepass")
    assert (found.lower.encode() <= encoded and (found.upper is None or encoded < found.upper.encode())) == inside
