"""The rule registry, ``piql rules`` and the docs/rules.md it is kept in step with."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from piql.cli import main
from piql.language.loader import load_plan
from piql.rules import RULES, codes_of, resolve, rule
from tests.conftest import FIXTURES, PAPER_QUERIES, PAPER_SCHEMA

DOCS = Path(__file__).parents[2] / "docs" / "rules.md"
EXAMPLES = Path(__file__).parents[2] / "examples"


def test_codes_and_ids_are_unique_and_well_formed():
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.id for r in RULES}) == len(RULES)
    for r in RULES:
        assert re.fullmatch(r"[a-z][a-z-]*", r.code) and re.fullmatch(r"PQ\d{3}", r.id)
        assert r.summary and r.explanation and r.example and r.fix


@pytest.mark.parametrize("schema, queries", [
    (EXAMPLES / "social/schema.sql", EXAMPLES / "social/queries.sql"),
    (EXAMPLES / "tpcw/schema.sql", EXAMPLES / "tpcw/queries.sql"),
    (PAPER_SCHEMA, PAPER_QUERIES),
    (PAPER_SCHEMA, FIXTURES / "paper_unbounded_queries.sql"),
])
def test_every_diagnostic_carries_a_registered_code(schema, queries):
    plan = load_plan(schema, queries)
    found = [d for q in plan.queries for d in q.diagnostics] + list(plan.catalog.notes)
    assert found
    for d in found:
        assert rule(d.code).id == d.rule_id


def test_words_ids_and_prefixes_resolve_case_insensitively():
    assert rule("unbounded") is rule("PQ101") is rule("pq101") is rule(" Unbounded ")
    assert {r.code for r in resolve("PQ1")} == {"unbounded", "unsupported", "view-rejected"}
    assert codes_of("hotspot, PQ101", "--ignore") == {"hotspot", "unbounded"}
    with pytest.raises(ValueError, match=r"--ignore: unknown rule code 'unbound'; did you "
                                         r"mean 'unbounded'\?"):
        codes_of("unbound", "--ignore")


def test_piql_rules_lists_every_rule_one_line_each(capsys):
    assert main(["rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(RULES)
    for line, r in zip(lines, RULES):
        assert line.split()[:3] == [r.id, r.code, r.severity.value]
        assert line.endswith(r.summary)


@pytest.mark.parametrize("code", ["hotspot", "PQ201"])
def test_piql_rules_code_explains_with_example_and_fix(capsys, code):
    assert main(["rules", code]) == 0
    out = capsys.readouterr().out
    r = rule("hotspot")
    assert out.startswith(f"PQ201 hotspot (warning): {r.summary}")
    assert r.explanation in out and "example:" in out and f"fix: {r.fix}" in out
    assert f"docs: {r.help_uri}" in out


def test_piql_rules_of_an_unknown_code_exits_2(capsys):
    assert main(["rules", "hotspots"]) == 2
    assert "unknown rule code 'hotspots'; did you mean 'hotspot'?" in capsys.readouterr().err


def test_docs_have_a_section_per_rule_with_its_text():
    docs = DOCS.read_text(encoding="utf-8")
    for r in RULES:
        assert f'<a id="{r.anchor}"></a>' in docs, r.code
        assert f"### {r.id} `{r.code}`" in docs, r.code
        assert r.summary in docs and r.fix in docs


def _anchors(markdown: str) -> set[str]:
    """The fragment ids a page of markdown has: explicit ``<a id>`` and GitHub's heading ids."""
    found = set(re.findall(r'<a id="([^"]+)"></a>', markdown))
    for heading in re.findall(r"^#+ (.+)$", markdown, re.MULTILINE):
        found.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return found


def test_every_help_uri_is_a_section_of_rules_md_under_the_documentation_url():
    import tomllib

    from piql.version import DOCUMENTATION, documentation

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    declared = pyproject["project"]["urls"]["Documentation"]
    assert documentation() == DOCUMENTATION == declared  # installed, fallback and source agree
    anchors = _anchors(DOCS.read_text(encoding="utf-8"))
    for r in RULES:
        page, _, anchor = r.help_uri.partition("#")
        assert page == f"{declared}/rules.md"
        assert anchor in anchors, r.help_uri


def test_the_documentation_url_is_read_from_project_urls():
    from piql.version import project_url

    urls = ["Repository, https://example.org/repo", "documentation , https://example.org/docs/ "]
    assert project_url(urls, "Documentation") == "https://example.org/docs"
    assert project_url(["Homepage, https://example.org"], "Documentation") is None
