"""Each source's markup as plain text: tables of cases per source, and properties over any text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search_server.imports.markup import mattermost_text, rocketchat_text, slack_text, zulip_text

USERS = {"U01": "alice", "U02": "bob"}
CHANNELS = {"C01": "general"}


@pytest.mark.parametrize(
    ("source", "text"),
    [
        pytest.param("hi <@U01>", "hi @alice", id="mention"),
        pytest.param("hi <@U01|ally>", "hi @alice", id="mention-with-label-known"),
        pytest.param("hi <@U99|zed>", "hi @zed", id="mention-unknown-with-label"),
        pytest.param("hi <@U99>", "hi @U99", id="mention-unknown"),
        pytest.param("see <#C01|general>", "see #general", id="channel-link"),
        pytest.param("see <#C77>", "see #C77", id="channel-link-unknown"),
        pytest.param(
            "<https://x.test/a?b=1&amp;c=2|the doc>", "the doc (https://x.test/a?b=1&c=2)", id="url-label"
        ),
        pytest.param("<https://x.test/>", "https://x.test/", id="bare-url"),
        pytest.param("<mailto:a@b.test|a@b.test>", "a@b.test", id="mailto"),
        pytest.param("<!here> <!channel> <!everyone>", "@here @channel @everyone", id="broadcasts"),
        pytest.param("<!subteam^S01|@oncall> help", "@oncall help", id="user-group"),
        pytest.param("<!date^1392734382^{date_num}|2014-02-18>", "2014-02-18", id="date-fallback"),
        pytest.param("a &lt;b&gt; &amp; c", "a <b> & c", id="entities"),
        pytest.param("```npm i <@U01>\nls```", "npm i <@U01>\nls", id="code-block-kept-literally"),
        pytest.param("run `rm &lt;x&gt;`", "run rm <x>", id="inline-code"),
        pytest.param("日本語 <@U02> ✓", "日本語 @bob ✓", id="unicode"),
    ],
)
def test_slack(source: str, text: str) -> None:
    assert slack_text(source, USERS, CHANNELS) == text


@pytest.mark.parametrize(
    ("source", "text"),
    [
        pytest.param("@**Alice A|12** ok", "@alice ok", id="mention-by-id"),
        pytest.param("@**Bob B** ok", "@bob ok", id="mention-by-name"),
        pytest.param("@_**Alice A|12**", "@alice", id="silent-mention"),
        pytest.param("@**all** @**everyone** @**topic**", "@all @all @all", id="wildcards"),
        pytest.param("@*support team*", "@support team", id="group"),
        pytest.param("#**design>logo review**", "#design > logo review", id="stream-topic-link"),
        pytest.param("#**design>logo@123**", "#design > logo", id="message-link"),
        pytest.param("#**design**", "#design", id="stream-link"),
        pytest.param("[doc](https://x.test)", "doc (https://x.test)", id="link"),
        pytest.param("```quote\nsaid it\n```", "said it", id="quote-block"),
        pytest.param("```python\nprint(1)\n```", "print(1)", id="code-with-language"),
        pytest.param("~~~\nraw @**Bob B**\n~~~", "raw @**Bob B**", id="tilde-fence-literal"),
    ],
)
def test_zulip(source: str, text: str) -> None:
    assert zulip_text(source, {12: "alice"}, {"Bob B": "bob"}) == text


@pytest.mark.parametrize(
    ("source", "text"),
    [
        pytest.param("join ~town-square", "join #town-square", id="channel-link"),
        pytest.param(
            "[doc](https://x.test) ![img](https://i.test/a.png)",
            "doc (https://x.test) img (https://i.test/a.png)",
            id="links",
        ),
        pytest.param("mail a~b@c.test", "mail a~b@c.test", id="tilde-inside-a-word"),
        pytest.param("```sql\nselect 1\n```", "select 1", id="fence"),
    ],
)
def test_mattermost(source: str, text: str) -> None:
    assert mattermost_text(source) == text


@pytest.mark.parametrize(
    ("source", "text"),
    [
        pytest.param("[doc](https://x.test) ok", "doc (https://x.test) ok", id="link"),
        pytest.param("<https://x.test|the doc>", "the doc (https://x.test)", id="angle-link"),
        pytest.param("@alice look", "@alice look", id="mentions-as-they-are"),
    ],
)
def test_rocketchat(source: str, text: str) -> None:
    assert rocketchat_text(source) == text


CONVERTERS = [
    pytest.param(lambda t: slack_text(t, USERS, CHANNELS), id="slack"),
    pytest.param(lambda t: zulip_text(t, {12: "alice"}, {}), id="zulip"),
    pytest.param(mattermost_text, id="mattermost"),
    pytest.param(rocketchat_text, id="rocketchat"),
]


@pytest.mark.parametrize("convert", CONVERTERS)
@given(st.text(max_size=300))
def test_any_text_converts_without_error_and_without_growing_much(convert, text: str) -> None:  # type: ignore[no-untyped-def]
    out = convert(text)
    assert isinstance(out, str)
    assert len(out) <= 2 * len(text) + 16  # a label gains its URL in brackets, nothing more


@pytest.mark.parametrize("convert", CONVERTERS)
@given(st.text(alphabet=st.characters(blacklist_characters="<>&*[]()~`#@!_|:\\"), max_size=200))
def test_text_without_markup_is_kept_as_it_is(convert, text: str) -> None:  # type: ignore[no-untyped-def]
    assert convert(text) == text.strip()
