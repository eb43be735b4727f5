"""A message's source link: which addresses may become a link (the store's rule and the page's), and
which chat system a link points into (the link's words)."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
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
