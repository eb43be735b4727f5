"""A message's source link: which addresses may become a link (the store's rule and the page's), and
which chat system a link points into (the link's words)."""

from __future__ import annotations

import doctest
import sys
import unicodedata
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_search import MAX_SOURCE_URL_LENGTH, _source_links, is_source_url, source_system


def test_module_examples_hold() -> None:
    assert doctest.testmod(_source_links).failed == 0


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        pytest.param("https://acme.slack.com/archives/C024BE91L/p1355517523000005", True, id="slack-permalink"),
        pytest.param("http://chat.internal:3000/channel/ops?msg=Xk2", True, id="plain-http-with-a-port"),
        pytest.param("HTTPS://Chat.Example.com/group/x?msg=1", True, id="scheme-in-capitals"),
        pytest.param("javascript:alert(document.domain)", False, id="javascript"),
        pytest.param("JavaScript:alert(1)", False, id="javascript-in-capitals"),
        pytest.param(" javascript:alert(1)", False, id="a-leading-space"),
        pytest.param("java\tscript:alert(1)", False, id="a-tab-the-url-parser-would-strip"),
        pytest.param("javascript://chat.example.com/%0aalert(1)", False, id="javascript-dressed-as-a-url"),
        pytest.param("data:text/html,<script>alert(1)</script>", False, id="data"),
        pytest.param("vbscript:msgbox(1)", False, id="vbscript"),
        pytest.param("file:///etc/passwd", False, id="file"),
        pytest.param("slack://channel?team=T1&id=C1", False, id="an-app-scheme"),
        pytest.param("//evil.example/x", False, id="scheme-relative"),
        pytest.param("/channel/ops?msg=1", False, id="a-path-alone"),
        pytest.param("https://chat.example.com/a b", False, id="a-space"),
        pytest.param("https://chat.example.com/\u202eevil", False, id="a-bidi-override"),
        pytest.param("https://chat.example.com/\n", False, id="a-newline"),
        pytest.param("https://xn--80ak6aa92e.com/", True, id="punycode-host"),
        pytest.param("https://пример.com/", False, id="a-raw-unicode-host"),
        pytest.param("https://x.io/" + "a" * (MAX_SOURCE_URL_LENGTH - 13), True, id="at-the-length-cap"),
        pytest.param("https://x.io/" + "a" * (MAX_SOURCE_URL_LENGTH - 12), False, id="past-the-length-cap"),
        pytest.param("", False, id="empty"),
        pytest.param(None, False, id="null"),
        pytest.param(42, False, id="a-number"),
        pytest.param(["https://x.io/"], False, id="a-list"),
    ],
)
def test_only_http_and_https_addresses_are_source_links(url: object, allowed: bool) -> None:
    assert is_source_url(url) is allowed


@given(
    st.from_regex(r"[a-z][a-z0-9+.-]{0,10}", fullmatch=True).filter(lambda s: s not in ("http", "https")),
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=40),
)
def test_no_other_scheme_is_a_source_link(scheme: str, rest: str) -> None:
    assert not is_source_url(f"{scheme}:{rest}")
    assert not is_source_url(f"{scheme.upper()}:{rest}")


@pytest.mark.parametrize(
    ("url", "system"),
    [
        pytest.param("https://acme.slack.com/archives/C024BE91L/p1355517523000005", "Slack", id="slack-permalink"),
        pytest.param(
            "https://acme.slack.com/archives/C1/p1?thread_ts=1355517523.000005&cid=C1", "Slack", id="slack-reply"
        ),
        pytest.param("https://app.slack.com/client/T0123/C024BE91L", "Slack", id="slack-web-client"),
        pytest.param("https://notslack.com/archives/C1/p1", None, id="a-host-ending-in-slack-is-not-slack"),
        pytest.param(
            "https://acme.zulipchat.com/#narrow/channel/100-general/topic/deploy/near/1001", "Zulip", id="zulip"
        ),
        pytest.param("https://chat.example.com/channel/ops?msg=Xk2", "Rocket.Chat", id="rocketchat-channel"),
        pytest.param("https://chat.example.com/group/leads?msg=Xk2", "Rocket.Chat", id="rocketchat-group"),
        pytest.param("https://chat.example.com/direct/r1r2?msg=Xk2", "Rocket.Chat", id="rocketchat-direct"),
        pytest.param("https://chat.example.com/channel/ops", None, id="a-room-without-a-message"),
        pytest.param("https://chat.example.com/acme/channels/town-square", "Mattermost", id="mattermost-channel"),
        pytest.param("https://chat.example.com/acme/pl/8x1kq3", "Mattermost", id="mattermost-permalink"),
        pytest.param("https://wiki.example.org/page", None, id="no-known-shape"),
        pytest.param("https://[::1", None, id="unparsable"),
    ],
)
def test_the_system_is_named_by_the_links_shape(url: str, system: str | None) -> None:
    assert source_system(url) == system


# -- the portable split against urllib's (the code source_system had before MicroPython) -------------

_ROCKETCHAT_ROOM_KINDS = frozenset({"channel", "group", "direct"})
_MATTERMOST_VIEWS = frozenset({"channels", "messages", "pl"})


def _check_bracketed_netloc(netloc: str) -> None:
    # CPython 3.14's urllib.parse._check_bracketed_netloc (3.11.7 checks only inside the brackets): the
    # portable split follows the newer, stricter rule, so the oracle applies it where this CPython lacks it.
    before, bracket, bracketed = netloc.rpartition("@")[2].partition("[")
    if bracket:
        if before:
            raise ValueError("Invalid IPv6 URL")
        hostname, _, port = bracketed.partition("]")
        if port and not port.startswith(":"):
            raise ValueError("Invalid IPv6 URL")
    else:
        hostname = before.partition(":")[0]
    urllib.parse._check_bracketed_host(hostname)  # type: ignore[attr-defined]


def urllib_source_system(url: str) -> str | None:
    """source_system as it was, on urllib.parse (the oracle)."""
    try:
        parts = urllib.parse.urlsplit(url)
        if "[" in parts.netloc and "]" in parts.netloc and not hasattr(urllib.parse, "_check_bracketed_netloc"):
            _check_bracketed_netloc(parts.netloc)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    segments = [segment for segment in parts.path.split("/") if segment]
    if host == "slack.com" or host.endswith(".slack.com"):
        return "Slack"
    if parts.fragment.startswith("narrow/"):
        return "Zulip"
    if segments and segments[0] in _ROCKETCHAT_ROOM_KINDS and "msg" in urllib.parse.parse_qs(parts.query):
        return "Rocket.Chat"
    if len(segments) >= 2 and segments[1] in _MATTERMOST_VIEWS:
        return "Mattermost"
    return None


def _split_parts(url: str) -> tuple[str, str, str, str] | None:
    try:
        parts = urllib.parse.urlsplit(url)
        if "[" in parts.netloc and "]" in parts.netloc and not hasattr(urllib.parse, "_check_bracketed_netloc"):
            _check_bracketed_netloc(parts.netloc)
    except ValueError:
        return None
    return (parts.hostname or "").lower(), parts.path, parts.query, parts.fragment


# Pieces of links and of attacks on a parser: schemes (valid, odd, none), authority syntax (user
# info, ports, brackets with IPv4, IPv6, zones and IPvFuture), Unicode that folds or normalises into
# ASCII (Kelvin sign, fullwidth and compatibility delimiters), the characters urlsplit strips, and
# the paths, queries and fragments of each system's links.
_URL_PIECES = st.sampled_from(
    [
        "https:", "HTTP:", "h+t-t.p:", "1http:", "ja\tva:", "x:", ":", "//", "/", "///", "\\\\", "@", ":", "::",
        "[", "]", "[::1]", "[::ffff:1.2.3.4]", "[1:2:3:4:5:6:7:8]", "[1::2::3]", "[fe80::1%eth0]", "[::1%]",
        "[v1.x]", "[v.x]", "[vz.x]", "[1.2.3.4]", "[01.2.3.4]", "[::1.2.3.256]", "[12345::]", "[:1::]",
        "user:pw@", "a@b@", ":8080", ":x", "slack.com", "SLACK.COM", "acme.slack.com", "slac\u212a.com",
        "notslack.com", ".slack.com", "x.io", "ex\u2100mple", "\uff0f", "\uff20", "\ufe55", "\u2047",
        "пример", "İ", "Σ", "%", "%41", "channel", "group", "direct", "channels", "messages", "pl", "acme",
        "?", "?msg=1", "msg=", "&msg=x", "%6dsg=1", "m%73g=1", "m%7Sg=1", "msg+=1", "m+sg=1", "&&", "=",
        "#", "#narrow/", "narrow/", "#Narrow/", " ", "\x00", "\x1f", "\n", "\r", "\t", "\x7f", "\u00a0",
    ]
)  # fmt: skip
_AUTHORITY_PIECES = st.sampled_from(
    [
        "slack.com", "acme.slack.com", "SLACK.com", "slac\u212a.com", "x.io", "[::1]", "[fe80::1%25eth0]",
        "[v1.x]", "[1.2.3.4]", "[::ffff:1.2.3.4]", "[1::2::3]", "[", "]", "@", "u:p@", ":80", ":", "a",
        "\u2100", "\uff1a", "\u00e9", "%", ".", "%zone", "[::1]x", "x[::1]",
    ]
)  # fmt: skip
_PATH_PIECES = st.sampled_from(["/channel", "/group", "/direct", "/acme", "/channels", "/pl", "/messages", "/x", "/", "//"])
_QUERIES = st.lists(st.sampled_from(["msg=1", "msg=", "msg", "%6Dsg=x", "m%73g=1", "ms%67=", "m+sg=1", "&", "=1", "x=1", "%zz"]), max_size=4).map("&".join)
_LINKS = st.tuples(
    st.sampled_from(["https:", "HTTP:", "", "x-y:", "1a:", " https:", "\x00http:"]),
    st.sampled_from(["//", "", "/", "///"]),
    st.lists(_AUTHORITY_PIECES, max_size=4).map("".join),
    st.lists(_PATH_PIECES, max_size=3).map("".join),
    st.one_of(st.just(""), _QUERIES.map(lambda query: "?" + query)),
    st.sampled_from(["", "#narrow/x", "#x", "#", "#narrow"]),
).map("".join)
_HOSTILE_URLS = st.one_of(
    _LINKS,
    st.lists(_URL_PIECES, max_size=10).map("".join),
    st.lists(_URL_PIECES | st.text(max_size=3), max_size=8).map("".join),
    st.text(max_size=30),
)


@settings(max_examples=1000)
@given(_HOSTILE_URLS)
def test_the_portable_split_names_the_system_urllib_named(url: str) -> None:
    assert source_system(url) == urllib_source_system(url)
    assert _source_links._split(url) == _split_parts(url)


@given(st.one_of(_QUERIES, st.lists(_URL_PIECES | st.text(max_size=3), max_size=6).map("".join)))
def test_a_message_field_is_found_as_parse_qs_finds_it(query: str) -> None:
    assert _source_links._has_field(query, "msg") is ("msg" in urllib.parse.parse_qs(query))


@pytest.mark.parametrize(
    "url",
    [
        "https://acme.slack.com/archives/C1/p1?thread_ts=1.2&cid=C1",
        "https://chat.example.com/channel/ops?msg=Xk2",
        "https://chat.example.com/channel/ops?m%73g=Xk2",
        "https://chat.example.com/channel/ops?msg=",
        "https://chat.example.com/channel/ops?msg",
        "https://u:p@[::1]:3000/acme/pl/1",
        "https://a[::1]/acme/pl/1",
        "https://[::1]x/acme/pl/1",
        "https://[v7.x]/acme/pl/1",
        "https://[1.2.3.4]/acme/pl/1",
        "https://slac\u212a.com/x",
        "https://ex\u2100mple.com/acme/pl/1",
        "  \x00https://acme.slack.com/x",
        "ht\ttps://ac\nme.slack.com/x",
        "https://x.io/#narrow/stream/1",
        "//acme.slack.com/x",
    ],
)
def test_the_portable_split_agrees_on_each_kind_of_link(url: str) -> None:
    assert source_system(url) == urllib_source_system(url)
    assert _source_links._split(url) == _split_parts(url)


def test_the_nfkc_delimiters_are_every_character_that_normalises_into_one() -> None:
    # urlsplit refuses a non-ASCII host holding one (unicodedata decides); the portable split, a table.
    found = {
        chr(code)
        for code in range(0x80, sys.maxunicode + 1)
        if unicodedata.decomposition(chr(code)) and any(delimiter in unicodedata.normalize("NFKC", chr(code)) for delimiter in "/?#@:")
    }
    assert found == _source_links._NFKC_DELIMITERS
