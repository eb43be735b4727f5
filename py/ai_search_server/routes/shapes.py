"""Rocket.Chat-shaped JSON for the records the store and the services hand back, so existing clients
and agents read them as they are. Times are written as JavaScript's ``Date#toISOString`` does
(``2026-11-30T12:00:00.000Z``), by the core's ``to_iso_timestamp``."""

from __future__ import annotations

from typing import Any

from ai_search import (
    CheckedSentence,
    describe_candidate_check,
    describe_search_scope,
    hidden_note,
    to_iso_timestamp,
)

from ..answers.answer_service import AnswerResult
from ..answers.records import OpenedAnswer
from ..answers.sources import Citation
from ..retrieval.diagnosis import Diagnosis, unknown_names
from ..retrieval.search_service import SearchHit, SearchReport, SearchScope, SearchService, SearchStatus
from ..store.records import Message, Room, Subscription, ThreadSummary, User

__all__ = [
    "answer_json",
    "citations_json",
    "message_json",
    "opened_answer_json",
    "retrieval_json",
    "room_json",
    "search_hit_json",
    "search_meta_json",
    "subscription_json",
    "user_json",
]


def user_json(user: User, *, full: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"_id": user.id, "username": user.username, "name": user.name}
    if full:
        out.update(
            {
                "roles": list(user.roles),
                "active": user.active,
                "createdAt": to_iso_timestamp(user.created_at),
                "type": "bot" if "bot" in user.roles else "user",
            }
        )
    return out


def room_json(room: Room, *, usernames: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "_id": room.id,
        "t": room.type,
        "name": room.name,
        "fname": room.fname,
        "ts": to_iso_timestamp(room.created_at),
    }
    if room.topic:
        out["topic"] = room.topic
    if usernames is not None:
        out["usernames"] = usernames
    return out


def message_json(message: Message, thread: ThreadSummary | None = None) -> dict[str, Any]:
    """Rocket.Chat's message shape: a reply has ``tmid``; a thread's first message, given its
    ``thread`` summary, has ``tcount``, ``tlm`` and ``replies`` (the repliers' ids); one imported or
    mirrored from another system has ``sourceUrl``, its link there."""
    out: dict[str, Any] = {
        "_id": message.id,
        "rid": message.room_id,
        "msg": message.text,
        "ts": to_iso_timestamp(message.ts),
        "u": {"_id": message.user_id, "username": message.username, "name": message.user_name},
        "_updatedAt": to_iso_timestamp(message.edited_at or message.ts),
    }
    if message.edited_at is not None:
        out["editedAt"] = to_iso_timestamp(message.edited_at)
        if message.edited_by is not None:
            out["editedBy"] = {"_id": message.edited_by}
    if message.tmid is not None:
        out["tmid"] = message.tmid
    if thread is not None:
        last_reply = to_iso_timestamp(thread.last_reply_at)
        out.update({"tcount": thread.count, "tlm": last_reply, "replies": list(thread.participants)})
    if message.attachments:
        out["files"] = [{"name": a.name, "type": a.type, "size": a.size} for a in message.attachments]
        out["attachments"] = [
            {"type": "file", "title": a.title or a.name, "description": a.description, "size": a.size}
            for a in message.attachments
        ]
    if message.reactions:
        out["reactions"] = {r.emoji: {"usernames": list(r.usernames)} for r in message.reactions}
    if message.mentions:
        out["mentions"] = [{"username": username, "type": "user"} for username in message.mentions]
    if message.pinned_at is not None:
        pinned_at = to_iso_timestamp(message.pinned_at)
        out.update({"pinned": True, "pinnedAt": pinned_at, "pinnedBy": {"_id": message.pinned_by}})
    if message.source_url:
        out["sourceUrl"] = message.source_url  # "open in Slack": the message where it came from
    return out


def subscription_json(sub: Subscription, room: Room) -> dict[str, Any]:
    return {
        "_id": f"{sub.room_id}{sub.user_id}",
        "rid": sub.room_id,
        "u": {"_id": sub.user_id},
        "t": room.type,
        "name": room.name,
        "fname": room.fname,
        "ts": to_iso_timestamp(sub.created_at),
        "open": True,
        "banned": sub.banned,
    }


def search_hit_json(hit: SearchHit) -> dict[str, Any]:
    """One ``ai.search`` result: upstream's fields (``_id, rid, msgId, text, ts, u, score, room``), then
    ``highlights`` and ``matchReason``; ``files``, ``thread`` and ``tmid`` when the message has them, and
    ``sourceUrl`` (its "open in ..." link) when it came from another system."""
    message, room = hit.message, hit.room
    out: dict[str, Any] = {
        "_id": message.id,
        "rid": message.room_id,
        "msgId": message.id,
        "text": message.text,
        "ts": to_iso_timestamp(message.ts),
        "u": {"_id": message.user_id, "username": message.username, "name": message.user_name},
        "room": {"_id": room.id, "t": room.type, "name": room.name, "fname": room.fname},
        "highlights": [list(span) for span in hit.highlights],
        "matchReason": hit.match_reason,
    }
    if hit.score is not None:
        out["score"] = hit.score
    if message.attachments:
        out["files"] = [{"name": a.name, "title": a.title, "type": a.type} for a in message.attachments]
    if hit.thread is not None:
        out["thread"] = {"_id": hit.thread.id, "title": hit.thread.title, "replies": hit.thread.replies}
        if message.tmid is not None:
            out["tmid"] = message.tmid
    if message.source_url:
        out["sourceUrl"] = message.source_url
    if hit.band is not None:
        out["band"] = hit.band
    return out


def retrieval_json(report: SearchReport) -> dict[str, Any]:
    """What the search did: the pipeline, each branch's state, notices for the page."""
    retrieval: dict[str, Any] = {"pipeline": report.pipeline}
    if report.ran:
        retrieval["searchType"] = report.search_type
        retrieval["branches"] = {"keyword": report.keyword, "semantic": report.semantic}
    retrieval["degraded"] = report.degraded
    retrieval["notices"] = list(report.notices)
    if report.pending_embeddings:
        retrieval["pendingEmbeddings"] = report.pending_embeddings
    if report.strong is not None and report.related is not None:
        retrieval["bands"] = {"strong": report.strong, "related": report.related}
    if report.stage is not None:
        stage = report.stage
        retrieval["secondStage"] = {
            "kind": stage.kind,
            "model": stage.model,
            "coverage": round(stage.coverage, 4),
            "state": stage.state,
        }
    return retrieval


def scope_json(scope: SearchScope) -> dict[str, Any]:
    """The receipt of a search: rooms and days searched (the caller's), and the sentence for them;
    with `note` (also said in the sentence) when filters were checked on the candidates only."""
    text = describe_search_scope(scope.rooms, scope.first, scope.last, scope.today)
    found: dict[str, Any] = {
        "rooms": scope.rooms,
        "from": scope.first.isoformat() if scope.first is not None else None,
        "to": scope.last.isoformat(),
        "timeZone": scope.zone,
        "text": text,
        "unknown": list(unknown_names(scope)),
    }
    if scope.candidates_checked:
        note = describe_candidate_check(scope.checked_operators, scope.candidates_checked)
        found.update(text=f"{text}; {note}", note=note, candidatesChecked=scope.candidates_checked)
    return found


def diagnosis_json(diagnosis: Diagnosis) -> dict[str, Any]:
    """Why nothing was found: one sentence, and each relaxation with its count and its line."""
    return {
        "text": diagnosis.text,
        "relaxations": [
            {"drop": r.key, "tokens": list(r.dropped), "count": r.count, "more": r.more, "q": r.line}
            for r in diagnosis.relaxations
        ],
    }


def search_meta_json(
    status: SearchStatus,
    report: SearchReport,
    *,
    diagnosis: Diagnosis | None = None,
    hints: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``ai.search``'s ``meta``: upstream's three flags and ``retrieval``; then ``scope`` (the receipt),
    ``diagnosis`` when nothing was found, and ``hints`` for tokens of the line searched as words."""
    meta: dict[str, Any] = {
        "intelligentSearchEnabled": status.enabled,
        "intelligentSearchConfigured": True,
        "answerGenerationConfigured": status.answers,
        "retrieval": retrieval_json(report),
    }
    if report.scope is not None:
        meta["scope"] = scope_json(report.scope)
    if diagnosis is not None:
        meta["diagnosis"] = diagnosis_json(diagnosis)
    if hints:
        meta["hints"] = list(hints)
    return meta


def _citation_json(c: Citation) -> dict[str, Any]:
    """One citation: its number and message, then the message's author and room (``u`` and ``room``
    as a search result has them), so a page can name a message it does not list."""
    out: dict[str, Any] = {"n": c.n, "msgId": c.msg_id, "rid": c.rid}
    if c.username:
        out["u"] = {"username": c.username, "name": c.user_name}
    if c.room is not None:
        out["room"] = {"_id": c.room.id, "t": c.room.type, "name": c.room.name, "fname": c.room.fname}
    return out


def citations_json(citations: tuple[Citation, ...]) -> list[dict[str, Any]]:
    """An answer's ``citations`` (and the streamed ``sources`` event's)."""
    return [_citation_json(c) for c in citations]


def _sentences_json(sentences: tuple[CheckedSentence, ...]) -> list[dict[str, Any]]:
    return [sentence.to_json() for sentence in sentences]


def answer_json(result: AnswerResult) -> dict[str, Any]:
    """``ai.search.answer``'s answer (and the streamed ``done`` event's)."""
    out: dict[str, Any] = {
        "answerId": result.answer_id,
        "answer": result.answer,
        "citations": citations_json(result.citations),
        "provider": dict(result.provider),
        "truncated": result.truncated,
        "sentences": _sentences_json(result.sentences),
    }
    if result.searched is not None:
        out["searched"] = result.searched
    return out


def opened_answer_json(opened: OpenedAnswer) -> dict[str, Any]:
    """``ai.search.answer.get``: a kept answer as its reader may see it."""
    stored, view, feedback = opened.stored, opened.view, opened.feedback
    out: dict[str, Any] = {
        "answerId": stored.id,
        "query": stored.query,
        "answer": view.answer,
        "citations": citations_json(opened.citations),
        "sentences": _sentences_json(view.sentences),
        "provider": dict(stored.provider),
        "createdAt": to_iso_timestamp(stored.created_at),
        "shared": stored.shared_at is not None,
        "mine": opened.mine,
        "hiddenSources": view.hidden_sources,
        "note": hidden_note(view),
        "feedback": None if feedback is None else {"rating": feedback.rating, "reason": feedback.reason},
    }
    if stored.searched is not None:
        out["searched"] = stored.searched
    return out


def search_status_json(service: SearchService) -> dict[str, Any]:
    """``ai.search.status``: search and answers on or off, the index's backlog, the second stage's
    progress (``coverage``: messages it can score out of all of them)."""
    status = service.status()
    out: dict[str, Any] = {
        "searchEnabled": status.enabled,
        "answersEnabled": status.answers,
        "pipeline": service.pipeline.kind,
    }
    index = getattr(service.pipeline, "index", None)
    if index is not None:
        out["index"] = {"messages": index.db.count(), "pendingEmbeddings": index.pending_embeddings}
    stage = service.second_stage
    if stage is not None:
        coverage = stage.coverage()
        out["secondStage"] = {
            "kind": stage.kind,
            "model": stage.model_id,
            "coverage": round(coverage.ratio, 4),
            "scored": coverage.scored,
            "total": coverage.total,
        }
    return out
