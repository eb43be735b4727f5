"""Each source's message markup turned into the plain text ai-search searches and shows.

One converter per source, each a table of (pattern, replacement) applied outside code, because what
a person typed inside a code block is meant literally (a ``<@U123>`` pasted into a snippet stays as
it is). Code fences are dropped and their content kept, so ``ERR_CONN_RESET`` in a snippet is found.

==============  ===============================  ==============================
what            source markup                    plain text
==============  ===============================  ==============================
mention         ``<@U123>`` (Slack),             ``@alice``: a mention the store
                ``@**Alice A|12**`` (Zulip)      records, as typed in ai-search
channel link    ``<#C123|general>`` (Slack),     ``#general``
                ``~town-square`` (Mattermost),
                ``#**design>logo**`` (Zulip)     ``#design > logo``
link + label    ``<https://x|the doc>`` (Slack)  ``the doc (https://x)``
                ``[the doc](https://x)``
entities        ``&amp; &lt; &gt;`` (Slack)      ``& < >``
broadcast       ``<!here>`` ``<!channel>``       ``@here`` ``@channel``
==============  ===============================  ==============================

The converters are pure functions of the text and the names they are given; unknown ids keep a
readable form (``@U0UNKNOWN``) rather than vanishing.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping

__all__ = ["mattermost_text", "rocketchat_text", "slack_text", "zulip_text"]

Replace = Callable[[re.Match[str]], str]

# A fenced block (```...``` or ~~~...~~~) or an inline `code` span. Markdown sources may name a
# language (or Zulip's "quote", "spoiler") on the opening fence's line; Slack has no such thing, and
# its blocks often start on that line ("```npm install").
_CODE = re.compile(r"(?P<fence>```|~~~)(?P<block>.*?)(?P=fence)|`(?P<inline>[^`\n]+)`", re.DOTALL)
_FENCE_LANGUAGE = re.compile(r"[\w+#.-]*[ \t]*\n")
_MARKDOWN_LINK = re.compile(r"(?<!!)\[(?P<label>[^\]\n]*)\]\((?P<url>[^)\s]+)\)")
_MARKDOWN_IMAGE = re.compile(r"!\[(?P<label>[^\]\n]*)\]\((?P<url>[^)\s]+)\)")


def _outside_code(
    text: str, convert: Callable[[str], str], inside: Callable[[str], str] = str, *, languages: bool = True
) -> str:
    """``convert`` applied to the parts of ``text`` outside code, ``inside`` to code content; with
    ``languages``, a word alone on a fence's first line is a language name and is dropped."""
    out: list[str] = []
    position = 0
    for match in _CODE.finditer(text):
        out.append(convert(text[position : match.start()]))
        if match.group("fence"):
            code = match.group("block")
            if languages and (language := _FENCE_LANGUAGE.match(code)):
                code = code[language.end() :]
            code = code.strip("\n")
        else:
            code = match.group("inline")
        out.append(inside(code))
        position = match.end()
    out.append(convert(text[position:]))
    return "".join(out).strip()


def _link(label: str, url: str) -> str:
    label = label.strip()
    bare = url.removeprefix("mailto:")
    if not label or label in (url, bare):
        return bare
    return f"{label} ({bare})"


def _apply(table: tuple[tuple[re.Pattern[str], Replace], ...], text: str) -> str:
    for pattern, replace in table:
        text = pattern.sub(replace, text)
    return text


# -- Slack ---------------------------------------------------------------------------------------

_SLACK_ANGLE = re.compile(r"<(?P<body>[^<>\n]+)>")
_SLACK_BROADCASTS = {"here", "channel", "everyone"}


def slack_text(text: str, users: Mapping[str, str], channels: Mapping[str, str]) -> str:
    """Slack's ``mrkdwn`` as plain text; ``users`` and ``channels`` map Slack ids to our names."""

    def angle(match: re.Match[str]) -> str:
        body = match.group("body")
        target, _, label = body.partition("|")
        if target.startswith("@"):
            return f"@{users.get(target[1:]) or label.removeprefix('@') or target[1:]}"
        if target.startswith("#"):
            return f"#{channels.get(target[1:]) or label or target[1:]}"
        if target.startswith("!"):
            command = target[1:]
            if command in _SLACK_BROADCASTS:
                return f"@{command}"
            if command.startswith("subteam^"):
                return label if label.startswith("@") else f"@{label or command.removeprefix('subteam^')}"
            return label or f"@{command.split('^', 1)[0]}"  # <!date^...|fallback> shows its fallback
        return _link(label, target)

    return _outside_code(
        text, lambda part: html.unescape(_SLACK_ANGLE.sub(angle, part)), html.unescape, languages=False
    )


# -- Mattermost ----------------------------------------------------------------------------------

_MATTERMOST_CHANNEL = re.compile(r"(?<![\w~])~(?P<name>[a-z0-9][a-z0-9_-]*)")

_MATTERMOST = (
    (_MARKDOWN_IMAGE, lambda m: _link(m.group("label"), m.group("url"))),
    (_MARKDOWN_LINK, lambda m: _link(m.group("label"), m.group("url"))),
    (_MATTERMOST_CHANNEL, lambda m: f"#{m.group('name')}"),
)


def mattermost_text(text: str) -> str:
    """Mattermost's Markdown as plain text: links with labels, ``~channel`` links, code fences."""
    return _outside_code(text, lambda part: _apply(_MATTERMOST, part))


# -- Zulip ---------------------------------------------------------------------------------------

_ZULIP_USER = re.compile(r"@_?\*\*(?P<name>[^*|\n]+?)(?:\|(?P<id>\d+))?\*\*")
_ZULIP_GROUP = re.compile(r"@_?\*(?P<name>[^*\n]+)\*")
_ZULIP_STREAM = re.compile(r"#\*\*(?P<stream>[^*>\n]+?)(?:>(?P<topic>[^*@\n]+?))?(?:@\d+)?\*\*")
_ZULIP_WILDCARDS = {"all": "all", "everyone": "all", "stream": "all", "channel": "all", "topic": "all"}


def zulip_text(text: str, users_by_id: Mapping[int, str], users_by_name: Mapping[str, str]) -> str:
    """Zulip's Markdown as plain text; ``@**Name|id**`` becomes ``@username`` through the maps."""

    def user(match: re.Match[str]) -> str:
        name, user_id = match.group("name").strip(), match.group("id")
        if user_id is not None and int(user_id) in users_by_id:
            return f"@{users_by_id[int(user_id)]}"
        if name.lower() in _ZULIP_WILDCARDS:
            return f"@{_ZULIP_WILDCARDS[name.lower()]}"
        return f"@{users_by_name.get(name, name)}"

    def stream(match: re.Match[str]) -> str:
        topic = match.group("topic")
        return f"#{match.group('stream').strip()}" + (f" > {topic.strip()}" if topic else "")

    table: tuple[tuple[re.Pattern[str], Replace], ...] = (
        (_ZULIP_USER, user),
        (_ZULIP_GROUP, lambda m: f"@{m.group('name').strip()}"),
        (_ZULIP_STREAM, stream),
        (_MARKDOWN_IMAGE, lambda m: _link(m.group("label"), m.group("url"))),
        (_MARKDOWN_LINK, lambda m: _link(m.group("label"), m.group("url"))),
    )
    return _outside_code(text, lambda part: _apply(table, part))


# -- Rocket.Chat ---------------------------------------------------------------------------------

_ROCKETCHAT_ANGLE = re.compile(r"<(?P<url>(?:https?|mailto):[^|<>\s]+)\|(?P<label>[^<>\n]+)>")

_ROCKETCHAT = (
    (_ROCKETCHAT_ANGLE, lambda m: _link(m.group("label"), m.group("url"))),
    (_MARKDOWN_IMAGE, lambda m: _link(m.group("label"), m.group("url"))),
    (_MARKDOWN_LINK, lambda m: _link(m.group("label"), m.group("url"))),
)


def rocketchat_text(text: str) -> str:
    """Rocket.Chat's message Markdown as plain text (mentions are already ``@username``)."""
    return _outside_code(text, lambda part: _apply(_ROCKETCHAT, part))
