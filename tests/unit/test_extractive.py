"""Extractive answers (no LLM configured): sentences that answer, conversations, fallbacks, determinism."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _extractive
from ai_search._answers import AnswerSource
from ai_search._citations import extract_citations
from ai_search._constants import MAX_SEARCH_ANSWER_MESSAGES, MAX_SEARCH_ANSWER_TEXT_LENGTH
from ai_search._extractive import (
    EXTRACTIVE_ANSWER_MAX_SENTENCES,
    EXTRACTIVE_CLOSEST_SENTENCES,
    EXTRACTIVE_CLOSEST_TEXT,
    EXTRACTIVE_NO_ANSWER_TEXT,
    EXTRACTIVE_NO_SOURCES_TEXT,
    EXTRACTIVE_SENTENCE_MAX_CHARS,
    build_extractive_answer,
)
from ai_search._sentences import is_question


def src(
    text: str, score: float | None = 0.6, conversation: str | None = None, ts: str | None = None
) -> AnswerSource:
    return AnswerSource(text, "bob", "ops", ts, score, conversation)


def first_line(answer: str) -> str:
    return answer.splitlines()[0]


# An incident thread: the report, a question, the cause, the fix. Times order the conversation.
THREAD = [
    src("billing-api is failing its health checks, customers see errors", 0.7, "t", "2026-09-17T02:14:00Z"),
    src("why is the pool still handing out dead sockets?", 0.6, "t", "2026-09-17T02:20:00Z"),
    src(
        "the pool kept its connections to the old primary because keepalives are off",
        0.5,
        "t",
        "2026-09-17T02:26:00Z",
    ),
    src("restarted billing-api pods one zone at a time, errors are gone", 0.5, "t", "2026-09-17T02:54:00Z"),
]


@pytest.mark.parametrize(
    ("query", "sources", "expected_first"),
    [
        pytest.param(
            "why did billing-api keep failing",
            THREAD,
            "the pool kept its connections to the old primary because keepalives are off [3]",
            id="why-gets-the-cause-not-the-report",
        ),
        pytest.param(
            "how did we fix billing-api",
            THREAD,
            "restarted billing-api pods one zone at a time, errors are gone [4]",
            id="how-did-we-fix-gets-the-fix-late-in-the-thread",
        ),
        pytest.param(
            "how many carts did we lose in the checkout incident",
            [
                src("checkout incident: carts take 10 seconds to load", 0.7, "c", "2026-10-27T14:24:00Z"),
                src(
                    "from the funnel: roughly 310 carts abandoned during the incident",
                    0.5,
                    "c",
                    "2026-10-27T16:58:00Z",
                ),
            ],
            "from the funnel: roughly 310 carts abandoned during the incident [2]",
            id="how-many-gets-the-count",
        ),
        pytest.param(
            "did SRE-14 accept the offer",
            [
                src("debrief for candidate SRE-14, scores first", 0.6, "h", "2026-09-28T15:34:00Z"),
                src("SRE-14 accepted the offer! starts in January", 0.6, "h", "2026-10-07T16:21:00Z"),
            ],
            "SRE-14 accepted the offer! [2]",
            id="yes-no-question-answered-by-its-statement",
        ),
        pytest.param(
            "could the leaked key move real money",
            [
                src(
                    "found a test-mode key in the CI logs, the key is rotated now",
                    0.7,
                    "k",
                    "2026-09-11T09:26:00Z",
                ),
                src("test mode only, no real money", 0.6, "k", "2026-09-11T09:31:00Z"),
                src("and CI output now goes through secret scanning", 0.6, "k", "2026-09-11T10:12:00Z"),
            ],
            "test mode only, no real money [2]",
            id="yes-no-question-answered-by-a-denial",
        ),
        pytest.param(
            "what did we decide about the monorepo",
            [
                src("can we talk about the monorepo again?", 0.8, "m", "2026-09-07T15:02:00Z"),
                src("my worry about the monorepo is CI time", 0.6, "m", "2026-09-07T15:07:00Z"),
                src(
                    "decision: billing-api and the ledger move into the monorepo by Q4",
                    0.4,
                    "m",
                    "2026-09-07T15:13:00Z",
                ),
            ],
            "decision: billing-api and the ledger move into the monorepo by Q4 [3]",
            id="decision-over-higher-ranked-discussion",
        ),
    ],
)
def test_the_sentence_that_answers_comes_first(
    query: str, sources: list[AnswerSource], expected_first: str
) -> None:
    assert first_line(build_extractive_answer(query, sources)) == expected_first


def test_questions_and_restatements_are_never_quoted() -> None:
    sources = [
        src("why did the failover take 4 minutes?", 0.9, "f", "2026-09-17T07:41:00Z"),
        src(
            "two questions I want answered: why did the failover take 4 minutes",
            0.9,
            "f",
            "2026-09-17T07:42:00Z",
        ),
        src(
            "the failover took 4m12s because patroni waits for its 30s ttl three times",
            0.4,
            "f",
            "2026-09-17T07:45:00Z",
        ),
    ]
    answer = build_extractive_answer("why did the failover take 4 minutes", sources)
    assert answer == "the failover took 4m12s because patroni waits for its 30s ttl three times [3]"


def test_a_reply_drawn_from_the_thread_is_cited_after_the_sources() -> None:
    sources = [
        src("SSO logins fail with jwt: unknown kid since 08:31", 0.8, "thread:sso", "2026-11-12T08:55:00Z")
    ]
    context = [
        src("SSO is down for several customers", None, "thread:sso", "2026-11-12T08:51:00Z"),
        src(
            "the identity provider rotated its signing key, so our cached JWKS lacks it",
            None,
            "thread:sso",
            "2026-11-12T08:58:00Z",
        ),
    ]
    answer = build_extractive_answer("why did SSO logins fail", sources, context)
    assert (
        first_line(answer) == "the identity provider rotated its signing key, so our cached JWKS lacks it [3]"
    )
    assert set(extract_citations(answer, 3)) <= {1, 2, 3}


def test_a_reply_with_no_question_word_needs_its_conversation_to_match() -> None:
    unrelated = [
        src("deploy of search-indexer done", 0.6, "x", "2026-10-01T10:00:00Z"),
        src("the font is downloaded at render time, so it times out", None, "y", "2026-10-01T10:05:00Z"),
    ]
    assert "font" not in build_extractive_answer(
        "why did the search-indexer deploy fail", unrelated[:1], unrelated[1:]
    )


@pytest.mark.parametrize(
    ("query", "sources", "closest"),
    [
        pytest.param("kubernetes upgrade", THREAD, True, id="no-shared-word"),
        pytest.param("?!", THREAD, True, id="wordless-question"),
        pytest.param(
            "did we make an offer to the SRE candidate",
            [src("we're opening an SRE role on bob's team, referrals welcome", 0.3)],
            True,
            id="a-weak-match-answers-nothing",
        ),
        pytest.param(
            "why did the deploy fail",
            [src("why did the deploy fail?", 0.9), src("did the deploy fail again?", 0.9)],
            False,
            id="only-questions",
        ),
    ],
)
def test_when_nothing_answers_it_says_so_and_shows_the_closest(
    query: str, sources: list[AnswerSource], closest: bool
) -> None:
    """The answer says plainly that the sources do not answer; under it, the closest sentences (never
    a question), each led by when and by whom, so the reader sees what was found."""
    answer = build_extractive_answer(query, sources)
    head, *lines = answer.splitlines()
    if not closest:
        assert answer == EXTRACTIVE_NO_ANSWER_TEXT
        return
    assert head == f"{EXTRACTIVE_NO_ANSWER_TEXT} {EXTRACTIVE_CLOSEST_TEXT}"
    assert 1 <= len(lines) <= EXTRACTIVE_CLOSEST_SENTENCES
    for line in lines:
        lead, _, quoted = line.partition(" — ")
        assert lead.endswith("bob"), "who wrote it"
        assert extract_citations(line, len(sources))
        assert not is_question(quoted)


@pytest.mark.parametrize(
    "sources",
    [pytest.param([], id="no-sources"), pytest.param([src(" \n "), src("...")], id="no-words")],
)
def test_no_words_at_all(sources: list[AnswerSource]) -> None:
    assert build_extractive_answer("deploy", sources) == EXTRACTIVE_NO_SOURCES_TEXT


def test_one_sentence_per_message_before_a_message_repeats() -> None:
    sources = [
        src("the deploy failed on db-2. the deploy disk was full. the deploy was retried.", 0.9),
        src("the deploy is green again after the retry", 0.5),
    ]
    answer = build_extractive_answer("what happened to the deploy", sources)
    cited = [extract_citations(line, 2)[0] for line in answer.splitlines()]
    assert sorted(cited) == [1, 1, 2]


def test_a_source_without_a_score_counts_as_an_average_match() -> None:
    answer = build_extractive_answer(
        "why did the deploy fail", [AnswerSource("the deploy failed because the disk was full")]
    )
    assert answer == "the deploy failed because the disk was full [1]"


def test_bracketed_numbers_in_quotes_are_defused() -> None:
    answer = build_extractive_answer(
        "what about the refund", [src("approved the refund for 214 payments, see [2] and [9]")]
    )
    assert answer == "approved the refund for 214 payments, see (2) and (9) [1]"


def test_long_sentence_is_clipped_at_a_word_boundary() -> None:
    text = "the deploy failed because " + " ".join(f"step{i} word" for i in range(100))
    quoted = build_extractive_answer("why did the deploy fail", [src(text, 0.9)]).removesuffix(" [1]")
    assert len(quoted) <= EXTRACTIVE_SENTENCE_MAX_CHARS
    assert quoted.endswith("…")
    assert text.startswith(quoted[:-1])
    assert text[len(quoted) - 1] == " "


def test_only_the_prompt_window_is_read() -> None:
    hidden = src("x " * MAX_SEARCH_ANSWER_TEXT_LENGTH + "\nsecret deploy note because of reasons", 0.9)
    assert build_extractive_answer("secret", [hidden]) == EXTRACTIVE_NO_ANSWER_TEXT


def test_max_sentences_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="1 or more"):
        build_extractive_answer("q", THREAD, max_sentences=0)


def test_module_examples_hold() -> None:
    assert doctest.testmod(_extractive).failed == 0


_texts = st.text(alphabet="deploy fail ok why because 42 failed.!?\n[]12", max_size=60)
_sources = st.lists(
    st.builds(
        AnswerSource,
        _texts,
        score=st.none() | st.floats(min_value=0, max_value=1),
        conversation=st.sampled_from([None, "a", "b"]),
    ),
    max_size=MAX_SEARCH_ANSWER_MESSAGES // 4,
)


@given(
    query=st.text(alphabet="deploy fail ok why how many?", max_size=20), sources=_sources, context=_sources
)
def test_answers_are_deterministic_cited_lines_that_never_ask(
    query: str, sources: list[AnswerSource], context: list[AnswerSource]
) -> None:
    answer = build_extractive_answer(query, sources, context)
    assert build_extractive_answer(query, sources, context) == answer
    if answer in (EXTRACTIVE_NO_SOURCES_TEXT, EXTRACTIVE_NO_ANSWER_TEXT):
        return
    every = [*sources, *context]
    lines = answer.split("\n")
    if lines[0] == f"{EXTRACTIVE_NO_ANSWER_TEXT} {EXTRACTIVE_CLOSEST_TEXT}":
        lines = lines[1:]
    assert 1 <= len(lines) <= EXTRACTIVE_ANSWER_MAX_SENTENCES
    for line in lines:
        cited = extract_citations(line, len(every))
        assert len(cited) == 1
        assert line.endswith(f" [{cited[0]}]")
        quoted = line.removesuffix(f" [{cited[0]}]")
        # A lead (a name, a date) comes before " — ", and the quote after it is the source's.
        if " — " in quoted and quoted.split(" — ", 1)[1].replace("(", "[").replace(")", "]") in every[
            cited[0] - 1
        ].text:
            quoted = quoted.split(" — ", 1)[1]
        assert not is_question(quoted)
        assert quoted.replace("(", "[").replace(")", "]") in every[cited[0] - 1].text or quoted.endswith("…")


# -- by the kind of question (issue 36): texts written for these tests, not from a judged set -----


def by(
    text: str, who: str, name: str, ts: str, score: float | None = 0.6, conversation: str | None = "c"
) -> AnswerSource:
    """A message by ``who`` (display name ``name``) in #ops at ``ts``."""
    return AnswerSource(text, who, "ops", ts, score, conversation, name)


EXPORT = [
    by("the nightly invoice export failed for every EU account this morning", "dana", "Dana Ruiz",
       "2027-05-11T07:02:00Z", 0.8),
    by("who is going to look at the export failures?", "lee", "Lee Park", "2027-05-11T07:10:00Z"),
    by("I'll take it, I wrote the export batching last year", "omar", "Omar Haddad", "2027-05-11T07:12:00Z"),
    by("root cause: the VAT lookup service changed its date format, so our parser threw on every EU row",
       "omar", "Omar Haddad", "2027-05-11T08:40:00Z", 0.5),
    by("action items: (1) alert on export failures (2) retry the export once before paging", "dana",
       "Dana Ruiz", "2027-05-11T09:30:00Z", 0.7),
    by("decision from ingrid: the EU export runs again tonight, finance gets the files tomorrow", "ingrid",
       "Ingrid Berg", "2027-05-11T10:05:00Z", 0.6),
]  # fmt: skip
BACKUP = [
    by("the database backup job stopped running yesterday, the last good backup is from 02:00", "dana",
       "Dana Ruiz", "2027-05-11T08:00:00Z", 0.8, "b"),
    by("restarted the backup scheduler, tonight's run is queued", "omar", "Omar Haddad",
       "2027-05-11T08:30:00Z", 0.6, "b"),
]  # fmt: skip
BRAZIL = [
    by("checkout pages time out for shoppers in Brazil", "dana", "Dana Ruiz", "2027-06-01T12:00:00Z", 0.8, "w"),
    by("only Brazil, other regions never saw a timeout", "lee", "Lee Park", "2027-06-01T12:05:00Z", 0.7, "w"),
    by("rerouted Brazil traffic to the us-east edge, pages load again", "omar", "Omar Haddad",
       "2027-06-01T12:30:00Z", 0.6, "w"),
    by("the real bug: the São Paulo edge kept a stale route to our origin since the network change on Monday",
       "omar", "Omar Haddad", "2027-06-01T14:00:00Z", 0.5, "w"),
]  # fmt: skip
CERTIFICATE = [
    by("the api certificate expired at midnight, every client gets TLS errors", "dana", "Dana Ruiz",
       "2027-03-02T00:10:00Z", 0.8, "x"),
    by("the renewal cron has been failing with a 403 from the DNS API for weeks", "omar", "Omar Haddad",
       "2027-03-02T00:25:00Z", 0.5, "x"),
    by("issued a new certificate by hand, clients reconnect", "omar", "Omar Haddad", "2027-03-02T00:40:00Z",
       0.6, "x"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("query", "sources", "expected_first"),
    [
        pytest.param(
            "who took the export failures",
            EXPORT,
            "Omar Haddad — I'll take it, I wrote the export batching last year [3]",
            id="who-names-the-author-who-acted",
        ),
        pytest.param(
            "who decided when the export runs again",
            EXPORT,
            "Ingrid Berg — decision from ingrid: the EU export runs again tonight, finance gets the files"
            " tomorrow [6]",
            id="who-names-the-person-the-sentence-names",
        ),
        pytest.param(
            "who fixed the alert routing",
            [
                by("the alert routing now sends the certificate pages to ingrid as well", "dana", "Dana Ruiz",
                   "2027-05-12T09:00:00Z", 0.7),
                by("fixed the alert routing, pages reach on-call again", "omar", "Omar Haddad",
                   "2027-05-12T08:00:00Z", 0.6),
                by("ingrid watches the alert pages this week", "ingrid", "Ingrid Berg", "2027-05-12T09:30:00Z", 0.5),
            ],
            "Omar Haddad — fixed the alert routing, pages reach on-call again [2]",
            id="who-is-the-one-who-acted-not-the-one-acted-on",
        ),
        pytest.param(
            "why did the invoice export fail",
            EXPORT,
            "root cause: the VAT lookup service changed its date format, so our parser threw on every EU row [4]",
            id="why-gets-the-cause-not-the-report-nor-the-action-items",
        ),
        pytest.param(
            "why did checkout time out in Brazil",
            BRAZIL,
            "the real bug: the São Paulo edge kept a stale route to our origin since the network change on"
            " Monday [4]",
            id="why-gets-the-cause-wherever-it-sits-in-the-thread",
        ),
        pytest.param(
            "when did the backup job stop",
            BACKUP,
            "May 10, 2027 — the database backup job stopped running yesterday, the last good backup is from"
            " 02:00 [1]",
            id="when-writes-a-relative-day-as-a-date",
        ),
        pytest.param(
            "what did we decide about the EU export",
            EXPORT,
            "decision from ingrid: the EU export runs again tonight, finance gets the files tomorrow [6]",
            id="what-did-we-decide-gets-the-decision",
        ),
    ],
)
def test_each_kind_of_question_gets_its_answer_first(
    query: str, sources: list[AnswerSource], expected_first: str
) -> None:
    assert first_line(build_extractive_answer(query, sources)) == expected_first


def test_when_and_why_get_a_line_each() -> None:
    """"when did it expire and why": the date of the expiry, and the cause, each on a line."""
    lines = build_extractive_answer("when did the api certificate expire and why", CERTIFICATE).splitlines()
    assert "Mar 2, 2027 — the api certificate expired at midnight, every client gets TLS errors [1]" in lines
    assert any("the renewal cron has been failing with a 403 from the DNS API for weeks [2]" in line for line in lines)


@pytest.mark.parametrize(
    ("query", "sources", "said"),
    [
        pytest.param("invoice export", EXPORT, "invoice export", id="words-of-a-topic"),
        pytest.param("EU export in:#ops", EXPORT, "EU export", id="with-a-filter-left-in"),
        pytest.param(
            "钢网",
            [by("新的钢网明天到货，2号线下周恢复", "mei", "Mei Lin", "2027-01-20T02:00:00Z", 0.7, "s")],
            "钢网",
            id="chinese-written-without-spaces",
        ),
    ],
)
def test_a_keyword_query_is_summarised_by_when_and_whom(
    query: str, sources: list[AnswerSource], said: str
) -> None:
    """A query that asks nothing ("invoice export") gets what the results say, never a refusal: each
    line led by the date and the author of what it quotes."""
    answer = build_extractive_answer(query, sources)
    assert not answer.startswith(EXTRACTIVE_NO_ANSWER_TEXT)
    for line in answer.splitlines():
        lead, separator, _quoted = line.partition(" — ")
        assert separator and lead[:3] in {"Jan", "May"} and lead.split(", ")[-1] in {"Dana Ruiz", "Omar Haddad",
                                                                                     "Ingrid Berg", "Mei Lin"}
    assert said.split()[0] in answer


def test_every_line_of_these_answers_passes_the_citation_check() -> None:
    """Leads are made of the message's own date and author, so the check supports every line."""
    from ai_search._grounding import check_citations

    for query, sources in (
        ("who took the export failures", EXPORT),
        ("when did the backup job stop", BACKUP),
        ("invoice export", EXPORT),
        ("when did the api certificate expire and why", CERTIFICATE),
    ):
        answer = build_extractive_answer(query, sources)
        checked = check_citations(answer, sources)
        assert checked and all(sentence.supported is not False for sentence in checked), (query, answer)
