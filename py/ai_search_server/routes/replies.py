"""What the routes answer, declared as pydantic models: the 200 body's schema in the OpenAPI document
and the ``outputSchema`` of the route's MCP tool, from one declaration (``reply=`` on the route).

The bodies themselves are written by ``shapes.py`` (Rocket.Chat's field names, times as
``2026-11-30T12:00:00.000Z``); these models only describe them, and the tests hold every declared
route's real answers to its model. A field that may be left out is :data:`Absent` (never null); extra
fields are allowed, so a body may grow without breaking a client that validates it.
"""

from __future__ import annotations

from typing import Literal, TypeVar, Union

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

__all__ = [
    "AnswerReply",
    "ChannelsReply",
    "HistoryReply",
    "MessageContextReply",
    "MessageReply",
    "PostedMessageReply",
    "RoomReply",
    "RoomsReply",
    "SearchReply",
    "ThreadMessagesReply",
    "ThreadsReply",
]

T = TypeVar("T")
#: A field a body may leave out; when it is there, it has the type (the schema admits no null).
Absent = Union[T, SkipJsonSchema[None]]  # noqa: UP007 -- a generic alias needs Union's subscript form
Time = Field(description="ISO 8601, UTC, milliseconds: 2026-11-30T12:00:00.000Z.")


class _Body(BaseModel):
    success: Literal[True] = Field(description="Always true on a 200 answer.")


class UserRef(BaseModel):
    id: str = Field(alias="_id")
    username: str
    name: str


class RoomRef(BaseModel):
    id: str = Field(alias="_id")
    t: Literal["c", "p", "d"] = Field(description="c: public channel, p: private group, d: direct room.")
    name: str
    fname: str


class Room(RoomRef):
    ts: str = Time
    topic: Absent[str] = None
    usernames: Absent[list[str]] = Field(default=None, description="The members of a direct room.")


class _IdRef(BaseModel):
    id: str = Field(alias="_id")


class _File(BaseModel):
    name: str
    type: str
    size: Absent[int] = None


class _Reactions(BaseModel):
    usernames: list[str]


class Message(BaseModel):
    id: str = Field(alias="_id")
    rid: str = Field(description="Id of the message's room.")
    msg: str = Field(description="The text.")
    ts: str = Time
    u: UserRef
    updatedAt: str = Field(alias="_updatedAt", description="When it was last written (ISO 8601).")
    editedAt: Absent[str] = None
    editedBy: Absent[_IdRef] = None
    tmid: Absent[str] = Field(default=None, description="A reply: the id of its thread's first message.")
    tcount: Absent[int] = Field(default=None, description="A thread's first message: its replies.")
    tlm: Absent[str] = Field(default=None, description="A thread's first message: its last reply's time.")
    replies: Absent[list[str]] = Field(default=None, description="A thread's first message: who replied.")
    files: Absent[list[_File]] = None
    reactions: Absent[dict[str, _Reactions]] = Field(default=None, description="By emoji, who reacted.")
    pinned: Absent[bool] = None


class MessageReply(_Body):
    message: Message


class PostedMessageReply(_Body):
    ts: int = Field(description="The new message's time, in milliseconds since 1970.")
    channel: str = Field(description="The room's name.")
    message: Message


class _Page(_Body):
    count: int = Field(description="Items in this page.")
    offset: int
    total: int = Field(description="Items in all pages.")


class ThreadMessagesReply(_Page):
    messages: list[Message] = Field(description="The thread's replies, oldest first.")


class ThreadsReply(_Page):
    threads: list[Message] = Field(description="The threads' first messages, the latest reply first.")


class MessageContextReply(_Body):
    kind: Literal["thread", "room"] = Field(description="thread: its thread; room: the messages around it.")
    message: Message
    room: RoomRef
    tmid: str | None = Field(description="The thread's first message's id; null for kind room.")
    replies: int = Field(description="Replies of the whole thread (0 for kind room).")
    messages: list[Message] = Field(description="The conversation shown, oldest first.")


class HistoryReply(_Body):
    messages: list[Message] = Field(description="The room's messages, newest first.")


class RoomReply(_Body):
    room: Room


class RoomsReply(_Body):
    update: list[Room] = Field(description="The rooms the caller can read.")
    remove: list[Room]


class ChannelsReply(_Page):
    channels: list[Room] = Field(description="The public channels the caller has joined, by name.")


class _ThreadRef(BaseModel):
    id: str = Field(alias="_id", description="The thread's first message's id.")
    title: str = Field(description="Its first line.")
    replies: int


class _SearchFile(BaseModel):
    name: str
    title: str | None
    type: str


class SearchHit(BaseModel):
    id: str = Field(alias="_id")
    rid: str
    msgId: str
    text: str
    ts: str = Time
    u: UserRef
    room: RoomRef
    highlights: list[list[int]] = Field(description="[start, end) code-point ranges of matched words.")
    matchReason: str = Field(description="keyword, semantic or both.")
    score: Absent[float] = Field(default=None, description="0 to 1, higher is better.")
    files: Absent[list[_SearchFile]] = None
    thread: Absent[_ThreadRef] = Field(default=None, description="The conversation the message is in.")
    tmid: Absent[str] = None
    band: Absent[Literal["strong", "related"]] = Field(
        default=None,
        description="How sure the match is: strong (answers the query), or related (shown apart). "
        "Absent where no bands are calibrated for the model.",
    )


class _Branches(BaseModel):
    keyword: Literal["ok", "off", "unavailable", "failed"]
    semantic: Literal["ok", "off", "unavailable", "failed"]


class _Bands(BaseModel):
    strong: int = Field(description="Strong results among those returned.")
    related: int = Field(description="Related results among those returned (after the strong ones).")


class _SecondStage(BaseModel):
    kind: Literal["local", "rerank", "embeddings"]
    model: str
    coverage: float = Field(description="Share of messages the stage can score yet (0 to 1).")
    state: Literal["ok", "off", "unavailable", "failed"]


class _Retrieval(BaseModel):
    pipeline: str
    searchType: Absent[Literal["keyword", "semantic", "hybrid"]] = None
    branches: Absent[_Branches] = None
    degraded: bool
    notices: list[str]
    pendingEmbeddings: Absent[int] = None
    bands: Absent[_Bands] = None
    secondStage: Absent[_SecondStage] = None


class _SearchMeta(BaseModel):
    intelligentSearchEnabled: bool
    intelligentSearchConfigured: bool
    answerGenerationConfigured: bool
    retrieval: _Retrieval


class SearchReply(_Body):
    intelligent: list[SearchHit] = Field(description="The results, best first; cite them by _id.")
    meta: _SearchMeta


class _IndexStatus(BaseModel):
    messages: int = Field(description="Messages in the embedded index.")
    pendingEmbeddings: int = Field(description="Messages still waiting for their first-stage vectors.")


class _StageStatus(BaseModel):
    kind: Literal["local", "rerank", "embeddings"]
    model: str
    coverage: float = Field(description="Share of messages the second stage can score yet (0 to 1).")
    scored: int
    total: int


class SearchStatusReply(_Body):
    searchEnabled: bool
    answersEnabled: bool
    pipeline: str = Field(description="embedded, or remote.")
    index: Absent[_IndexStatus] = Field(
        default=None, description="The embedded index (absent with a remote pipeline)."
    )
    secondStage: Absent[_StageStatus] = Field(
        default=None, description="The re-ranking stage, when one is on."
    )


class _CitedAuthor(BaseModel):
    username: str
    name: str


class _Citation(BaseModel):
    n: int = Field(description="The [N] of the answer's text.")
    msgId: str
    rid: str
    u: Absent[_CitedAuthor] = Field(default=None, description="Who wrote the message.")
    room: Absent[RoomRef] = Field(
        default=None, description="Its room: a page names a message it does not list by author and room."
    )


class _Span(BaseModel):
    n: int
    start: int
    end: int


class _Sentence(BaseModel):
    text: str
    citations: list[int]
    supported: bool | None = Field(description="Whether its sources bear it out; null: it cites nothing.")
    spans: list[_Span]


class AnswerReply(_Body):
    answerId: str | None = Field(description="The id it is kept under (to share or rate it); null: not kept.")
    answer: str = Field(description="The answer, citing its sources as [1], [2]...")
    citations: list[_Citation]
    provider: dict[str, str] = Field(description="Who wrote it: name, and model when an LLM did.")
    truncated: bool
    sentences: list[_Sentence]
    searched: Absent[str] = Field(default=None, description="A follow-up: what it was searched as.")
