"""The conversation a message is embedded with, besides the message alone.

A chat message is short and its meaning often lives in its conversation: "ok, rolling it back now"
says what is rolled back only through its thread. The index keeps two vectors per message: the
message alone, and the message after the `CONTEXT_MESSAGES` messages it follows in its conversation
(its thread's first message and the replies before it; outside a thread, the room's messages of the
`CONTEXT_WINDOW` before it). A search scores a message by the better of its two similarities.

Chosen on the judged sets (docs/retrieval.md, "Conversation context: measured"): against the message
alone, hybrid nDCG@10 0.535 -> 0.635 on the Halden workspace, questions about a conversation 0.304 ->
0.567, no-answer precision unchanged; two earlier messages beat one and four on the held-out set.
Only earlier messages count, so a message's context is fixed when it is posted.

    >>> context_text("rolling it back now", ["deploy of 2.14 failed", "is it the migration?"])
    'deploy of 2.14 failed\\nis it the migration?\\nrolling it back now'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

__all__ = ["CONTEXT_MAX_CHARS", "CONTEXT_MESSAGES", "CONTEXT_RULE", "CONTEXT_WINDOW", "context_text"]

# Earlier messages of the conversation a message is embedded with (messages).
CONTEXT_MESSAGES = 2
# How far back in a room (outside threads) a message's context reaches (time).
CONTEXT_WINDOW = timedelta(minutes=30)
# Characters of context kept before the message: the model reads 256 tokens, and the message
# itself must fit after its context.
CONTEXT_MAX_CHARS = 600
# Names the rule above in the index's model id, so a change of rule re-embeds every context.
CONTEXT_RULE = f"ctx{CONTEXT_MESSAGES}-{int(CONTEXT_WINDOW.total_seconds() // 60)}m"


def context_text(text: str, earlier: Sequence[str]) -> str | None:
    """The message after its earlier conversation (cut to `CONTEXT_MAX_CHARS`), or None without one."""
    before = "\n".join(earlier)[-CONTEXT_MAX_CHARS:]
    return f"{before}\n{text}" if before else None
