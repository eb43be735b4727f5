"""Query words, the FTS5 match expression and highlight ranges (retrieval/terms.py, retrieval/tokens.py)."""

from __future__ import annotations

import sqlite3

import pytest

from ai_search_server.retrieval.terms import (
    MAX_QUERY_TERMS,
    fold_word,
    fts_match_expression,
    highlight_ranges,
    matched_terms,
    query_terms,
    term_coverage,
    term_weights,
)
from ai_search_server.retrieval.tokens import text_tokens, token_column_text


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("deploy failed", (("deploy",), ("failed",)), id="words-become-single-word-terms"),
        pytest.param("Deploy DEPLOY deploy", (("deploy",),), id="case-folded-and-deduplicated"),
        pytest.param("Déploiement café", (("deploiement",), ("cafe",)), id="diacritics-removed"),
        pytest.param("ERR_CONN_RESET", (("err", "conn", "reset"),), id="identifier-becomes-a-phrase"),
        pytest.param("v2.14.0 hotfix", (("v2", "14", "0"), ("hotfix",)), id="version-becomes-a-phrase"),
        pytest.param("x509: expired", (("x509",), ("expired",)), id="trailing-punctuation-dropped"),
        pytest.param("?? !! --", (), id="punctuation-only-gives-no-terms"),
        pytest.param(
            "日本語 テスト", (("日本", "本語"), ("テス", "スト")), id="cjk-runs-become-phrases-of-pairs"
        ),
        pytest.param("库", (("库",),), id="one-cjk-character-is-a-term"),
        pytest.param(
            "DHCPの不具合",
            (("dhcp",), ("の不", "不具", "具合")),
            id="a-mixed-script-piece-gives-one-term-each",
        ),
        pytest.param("Привет мир", (("привет",), ("мир",)), id="spaced-scripts-stay-words"),
        pytest.param("why was the deploy slow", (("deploy",), ("slow",)), id="stopwords-dropped"),
        pytest.param("the was and", (), id="a-stopword-only-query-gives-no-terms"),
        pytest.param("can't DON'T", (), id="contractions-of-stopwords-dropped"),
        pytest.param("ERR_NOT_FOUND", (("err", "not", "found"),), id="a-phrase-keeps-its-stopwords"),
    ],
)
def test_query_terms(query: str, expected: tuple[tuple[str, ...], ...]) -> None:
    assert query_terms(query) == expected


def test_query_terms_stop_at_the_limit() -> None:
    query = " ".join(f"word{n}" for n in range(MAX_QUERY_TERMS + 10))
    assert len(query_terms(query)) == MAX_QUERY_TERMS


@pytest.mark.parametrize(
    ("word", "folded"),
    [
        pytest.param("Ärger", "arger", id="umlaut-and-case"),
        pytest.param("naïve", "naive", id="diaeresis"),
        pytest.param("ABC", "abc", id="ascii-case"),
    ],
)
def test_fold_word(word: str, folded: str) -> None:
    assert fold_word(word) == folded


@pytest.mark.parametrize(
    ("query", "expression"),
    [
        pytest.param("deploy", '"deploy"*', id="long-word-matches-as-prefix"),
        pytest.param("ops api", '"ops" OR "api"', id="short-words-match-whole-words"),
        pytest.param("老化测试", '"老化" + "化测" + "测试"', id="cjk-pairs-adjacent"),
        pytest.param("返品", '"返品"', id="a-cjk-pair-is-never-a-prefix"),
        pytest.param("ERR_CONN_RESET", '"err" + "conn" + "reset"', id="phrase-words-adjacent"),
        pytest.param('say "NEAR(a b)" OR', '"say" OR "near" + "a" + "b"', id="fts-syntax-is-quoted-away"),
        pytest.param('say NEAR(a b) OR', '"say" OR "near" + "a" OR "b"', id="fts-syntax-unquoted-is-words"),
        pytest.param('"rolling back" now', '"rolling" + "back" OR "now"', id="a-quoted-phrase-is-one-term"),
        pytest.param("", "", id="no-terms-no-expression"),
    ],
)
def test_fts_match_expression(query: str, expression: str) -> None:
    assert fts_match_expression(query_terms(query)) == expression


@pytest.fixture
def fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    # As the index stores it: the raw text, and its tokens in two columns (index_db's doc_terms).
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(x UNINDEXED, words, parts,"
        " tokenize='unicode61 remove_diacritics 2', prefix='2 3')"
    )
    texts = [
        "the deployment hit ERR_CONN_RESET",
        "err conn and reset in the wrong order",
        "errors everywhere",
        "Café opened",
        "then there was nothing",
        "max_client_conn in pgbouncer.ini is 400",
        "ran deploy_prod twice",
        "APNs returns 403 InvalidProviderToken",
        "好的，老化测试是 48 小时",
        "测试老化房的温度",
        "数据库主库切换了",
    ]
    rows = []
    for text in texts:
        tokens = text_tokens(text)
        rows.append((text, token_column_text(tokens.words), token_column_text(tokens.parts)))
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    return conn


@pytest.mark.parametrize(
    ("query", "matches"),
    [
        pytest.param("deployment", ["the deployment hit ERR_CONN_RESET"], id="prefix-finds-the-word"),
        pytest.param("ERR_CONN_RESET", ["the deployment hit ERR_CONN_RESET"], id="phrase-needs-adjacency"),
        pytest.param("cafe", ["Café opened"], id="query-without-accent-finds-accented"),
        pytest.param(
            "err",
            ["err conn and reset in the wrong order", "the deployment hit ERR_CONN_RESET"],
            id="short-word-does-not-match-errors",
        ),
        pytest.param("the", [], id="a-stopword-matches-nothing"),
        pytest.param("pgbouncer", ["max_client_conn in pgbouncer.ini is 400"], id="word-inside-a-file-name"),
        pytest.param(
            "deploy",
            ["ran deploy_prod twice", "the deployment hit ERR_CONN_RESET"],
            id="word-inside-an-identifier",
        ),
        pytest.param("provider", ["APNs returns 403 InvalidProviderToken"], id="camel-case-part"),
        pytest.param("老化测试", ["好的，老化测试是 48 小时"], id="cjk-word-inside-a-run-in-order"),
        pytest.param("测试", ["好的，老化测试是 48 小时", "测试老化房的温度"], id="cjk-pair-anywhere"),
        pytest.param("库", ["数据库主库切换了"], id="one-cjk-character"),
        pytest.param('") OR x:*', [], id="hostile-query-is-just-words"),
    ],
)
def test_expression_runs_on_fts5_as_the_index_tokenizes(
    fts: sqlite3.Connection, query: str, matches: list[str]
) -> None:
    expression = fts_match_expression(query_terms(query))
    found = (
        sorted(row[0] for row in fts.execute("SELECT x FROM t WHERE t MATCH ?", (expression,)))
        if expression
        else []
    )
    assert found == sorted(matches)


@pytest.mark.parametrize(
    ("text", "query", "ranges"),
    [
        pytest.param(
            "The DEPLOYMENT failed", "deploy failed", [(4, 14), (15, 21)], id="prefix-and-exact-words"
        ),
        pytest.param(
            "hit ERR_CONN_RESET again", "ERR_CONN_RESET", [(4, 18)], id="phrase-highlighted-as-one-range"
        ),
        pytest.param(
            "reset the conn, err", "ERR_CONN_RESET", [], id="phrase-words-out-of-order-not-highlighted"
        ),
        pytest.param("Café au lait", "cafe", [(0, 4)], id="offsets-on-the-stored-accented-text"),
        pytest.param("🚀 deploy 🚀", "deploy", [(2, 8)], id="offsets-count-code-points-not-bytes"),
        pytest.param("then there", "ops", [], id="short-term-is-not-a-prefix"),
        pytest.param("the deployment was gone", "the deploy was", [(4, 14)], id="stopwords-never-highlight"),
        pytest.param(
            "returns InvalidProviderToken", "provider", [(15, 23)], id="camel-case-part-highlighted"
        ),
        pytest.param(
            "好的，老化测试是 48 小时", "老化测试", [(3, 7)], id="cjk-word-highlighted-inside-its-run"
        ),
        pytest.param("数据库主库", "库", [(2, 3), (4, 5)], id="one-cjk-character-highlighted"),
        pytest.param("no match here", "", [], id="no-terms-no-ranges"),
        pytest.param("a-b-c", "a-b b-c", [(0, 5)], id="overlapping-matches-merge"),
    ],
)
def test_highlight_ranges(text: str, query: str, ranges: list[tuple[int, int]]) -> None:
    assert highlight_ranges(text, query_terms(query)) == ranges


@pytest.mark.parametrize(
    ("text", "query", "matched"),
    [
        pytest.param(
            "the deployment failed", "deploy failed", {("deploy",), ("failed",)}, id="prefix-and-exact"
        ),
        pytest.param(
            "ERR_CONN_RESET again", "ERR_CONN_RESET the", {("err", "conn", "reset")}, id="phrase-in-order"
        ),
        pytest.param("reset the conn err", "ERR_CONN_RESET", set(), id="phrase-out-of-order"),
        pytest.param(
            "err conn x err conn reset",
            "ERR_CONN_RESET",
            {("err", "conn", "reset")},
            id="phrase-after-a-false-start",
        ),
        pytest.param("opsgenie", "ops", set(), id="short-word-whole-word-only"),
        pytest.param("测试老化", "老化测试", set(), id="cjk-pairs-out-of-order"),
        pytest.param("ERR_CONN_RESET", "conn", {("conn",)}, id="a-word-inside-a-phrase"),
    ],
)
def test_matched_terms(text: str, query: str, matched: set[tuple[str, ...]]) -> None:
    assert matched_terms(text, query_terms(query)) == matched


@pytest.mark.parametrize(
    ("counts", "total", "rarer_first"),
    [
        pytest.param({("rare",): 1, ("common",): 900}, 1000, [("rare",), ("common",)], id="rare-weighs-more"),
        pytest.param(
            {("everywhere",): 1000, ("nowhere",): 0},
            1000,
            [("nowhere",), ("everywhere",)],
            id="zero-count-weighs-most",
        ),
    ],
)
def test_term_weights_follow_idf(counts: dict, total: int, rarer_first: list) -> None:
    weights = term_weights(counts, total)
    assert weights[rarer_first[0]] > weights[rarer_first[1]] > 0


@pytest.mark.parametrize(
    ("matched", "weights", "coverage"),
    [
        pytest.param([("a",)], {("a",): 3.0, ("b",): 1.0}, 0.9, id="share-of-the-squared-weight"),
        pytest.param([("a",), ("a",)], {("a",): 1.0, ("b",): 1.0}, 0.5, id="a-term-counts-once"),
        pytest.param([], {("a",): 1.0}, 0.0, id="nothing-matched"),
        pytest.param([("a",)], {}, 0.0, id="weightless-query"),
    ],
)
def test_term_coverage(matched: list, weights: dict, coverage: float) -> None:
    assert term_coverage(matched, weights) == pytest.approx(coverage)


def test_a_word_matching_two_prefix_terms_credits_both() -> None:
    assert matched_terms("deployments", query_terms("deploy deployment")) == {("deploy",), ("deployment",)}
