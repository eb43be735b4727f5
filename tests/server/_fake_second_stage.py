"""A real remote second stage for the tests: Starlette on uvicorn, in a thread, on 127.0.0.1.

It speaks the three shapes the remote stages call, and records every request:

- ``POST /rerank`` (TEI): ``{"query", "texts", ...}`` answers ``[{"index", "score"}]``, best first;
- ``POST /v2/rerank`` (Cohere, Jina, vLLM): ``{"model", "query", "documents", "top_n"}`` answers
  ``{"results": [{"index", "relevance_score"}]}``, best first;
- ``POST /v1/embeddings`` (OpenAI): ``{"model", "input"}`` answers ``{"data": [{"index", "embedding"}]}``.

Scores are deterministic: a rerank score is the share of the query's words the text holds
(``overlap``), a vector counts the text's words in ``DIMENSIONS`` buckets chosen by a hash of each word
(``vector``), so texts that share words point the same way. ``behaviour`` switches what every route
does next (tests set it; ``reset`` puts everything back):

==============  ===========================================================================
ok              answer as above
slow            wait (up to ``MAX_HOLD_SECONDS``) before any byte, until the client goes away
500             HTTP 500 with an error body
401-echo        HTTP 401 whose body quotes the Authorization header it got (as OpenAI does)
redirect        HTTP 302 to another path
malformed       200 with a body that is not JSON
nan             a score (or a vector value) written as the bare constant ``NaN``
huge            a score (or a vector value) ``1e999``: valid JSON that parses to infinity
wrong-index     the last result's (or vector's) index one past the end
duplicate       the last result's (or vector's) index is the first one's
missing         one result (one vector) fewer than asked
bool-index      the first result's index is ``true``
string-score    the first result's score (or first vector) is a string
not-a-list      ``{"error": null}`` where the results (or ``data``) belong
echo-in-result  a wrong index in a result that also quotes the Authorization header
oversize        a body larger than the stage's cap (the results or vectors padded)
wide            vectors one value wider than before (an embedding model swapped under the same name)
==============  ===========================================================================
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .._uvicorn import UvicornThread

__all__ = ["DIMENSIONS", "FakeSecondStage", "RecordedRequest", "overlap", "vector"]

# Buckets of a fake vector: words land in them by a hash, so shared words give a cosine above 0.
DIMENSIONS = 16
# Longest a slow answer waits (seconds) before giving up by itself.
MAX_HOLD_SECONDS = 30.0
# How often a waiting answer checks whether its client went away (seconds).
POLL_SECONDS = 0.02
# Bytes an oversize answer is padded with: past the rerank cap (1 MiB) and the embeddings cap (5 MiB).
OVERSIZE_PADDING_BYTES = 5 * 1024 * 1024 + 64 * 1024
# Stands for a number JSON cannot hold once parsed; replaced in the body text.
_PLACEHOLDER = "__NUMBER__"


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    authorization: str | None
    body: Any


def words(text: str) -> set[str]:
    return {word for word in text.lower().split() if word}


def overlap(query: str, text: str) -> float:
    """The fake reranker's score: the share of the query's words that ``text`` holds."""
    asked = words(query)
    return len(asked & words(text)) / len(asked) if asked else 0.0


def vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The fake embedding: word counts in hashed buckets, plus 1 in the last bucket (never all zero)."""
    out = [0.0] * dimensions
    for word in text.lower().split():
        out[hashlib.sha256(word.encode()).digest()[0] % (dimensions - 1)] += 1.0
    out[-1] += 1.0
    return out


class FakeSecondStage:
    """The fake server's state and its Starlette app; see the module docstring."""

    def __init__(self) -> None:
        self.app = Starlette(
            routes=[
                Route("/rerank", self._tei, methods=["POST"]),
                Route("/v2/rerank", self._cohere, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
            ]
        )
        self.reset()

    def reset(self) -> None:
        self.behaviour = "ok"
        self.requests: list[RecordedRequest] = []

    def serve(self) -> UvicornThread:
        return UvicornThread(self.app)

    async def _record(self, request: Request) -> Any:
        raw = await request.body()
        body = json.loads(raw) if raw else None
        self.requests.append(RecordedRequest(request.url.path, request.headers.get("authorization"), body))
        return body

    async def _misbehaviour(self, request: Request) -> Response | None:
        """The answer of a behaviour that is the same on every route, or None."""
        behaviour = self.behaviour
        if behaviour == "slow":
            deadline = time.monotonic() + MAX_HOLD_SECONDS
            while time.monotonic() < deadline and not await request.is_disconnected():
                await asyncio.sleep(POLL_SECONDS)
            return Response(status_code=204)
        if behaviour == "500":
            return JSONResponse({"error": "model exploded"}, status_code=500)
        if behaviour == "401-echo":
            given = request.headers.get("authorization", "")
            return JSONResponse({"error": f"Incorrect API key provided: {given}"}, status_code=401)
        if behaviour == "redirect":
            return RedirectResponse("/elsewhere", status_code=302)
        if behaviour == "malformed":
            return Response(b'[{"index": 0, "score": ', media_type="application/json")
        return None

    async def _tei(self, request: Request) -> Response:
        body = await self._record(request)
        if (answer := await self._misbehaviour(request)) is not None:
            return answer
        results = self._ranked(body["query"], body["texts"], "score", request)
        return _json(results)

    async def _cohere(self, request: Request) -> Response:
        body = await self._record(request)
        if (answer := await self._misbehaviour(request)) is not None:
            return answer
        results = self._ranked(body["query"], body["documents"], "relevance_score", request)
        top_n = body.get("top_n")
        if isinstance(results, list) and top_n is not None and self.behaviour != "oversize":
            results = results[:top_n]
        return _json({"id": "rerank-fake", "results": results})

    def _ranked(self, query: str, texts: list[str], key: str, request: Request) -> Any:
        """Results best first, as the real servers answer, spoilt as ``behaviour`` says."""
        results: list[dict[str, Any]] = sorted(
            ({"index": i, key: overlap(query, text)} for i, text in enumerate(texts)),
            key=lambda result: -result[key],
        )
        behaviour = self.behaviour
        if behaviour == "not-a-list":
            return {"error": None} if key == "score" else None
        if behaviour == "nan":
            results[0][key] = float("nan")
        elif behaviour == "huge":
            results[0][key] = _PLACEHOLDER
        elif behaviour == "wrong-index":
            results[-1]["index"] = len(texts)
        elif behaviour == "duplicate" and len(results) > 1:
            results[-1]["index"] = results[0]["index"]
        elif behaviour == "missing":
            results = results[:-1]
        elif behaviour == "bool-index":
            results[0]["index"] = True
        elif behaviour == "string-score":
            results[0][key] = "0.9"
        elif behaviour == "echo-in-result":
            results[0] = {"index": -1, key: 0.5, "note": request.headers.get("authorization", "")}
        elif behaviour == "oversize":
            results[0]["text"] = "x" * OVERSIZE_PADDING_BYTES
        return results

    async def _embeddings(self, request: Request) -> Response:
        body = await self._record(request)
        if (answer := await self._misbehaviour(request)) is not None:
            return answer
        inputs: list[str] = body["input"]
        width = DIMENSIONS + 1 if self.behaviour == "wide" else DIMENSIONS
        items: list[dict[str, Any]] = [
            {"object": "embedding", "index": i, "embedding": vector(text, width)}
            for i, text in enumerate(inputs)
        ]
        behaviour = self.behaviour
        if behaviour == "not-a-list":
            return _json({"object": "list", "data": None})
        if behaviour == "nan":
            items[0]["embedding"][0] = float("nan")
        elif behaviour == "huge":
            items[0]["embedding"][0] = _PLACEHOLDER
        elif behaviour == "missing":
            items = items[:-1]
        elif behaviour == "wrong-index":
            items[-1]["index"] = len(items)
        elif behaviour == "duplicate":
            items[-1]["index"] = items[0]["index"]
        elif behaviour in ("string-score", "echo-in-result"):
            items[0]["embedding"] = request.headers.get("authorization", "") or "not a vector"
        elif behaviour == "oversize":
            items[0]["padding"] = "x" * OVERSIZE_PADDING_BYTES
        # Out of order, as some servers answer: the index says where each vector belongs.
        return _json({"object": "list", "data": list(reversed(items)), "model": body["model"]})


def _json(payload: Any) -> Response:
    """``payload`` as JSON text, NaN written bare and the placeholder as ``1e999`` (what JSONResponse
    refuses to write, and what a broken server still sends)."""
    text = json.dumps(payload, allow_nan=True).replace(f'"{_PLACEHOLDER}"', "1e999")
    return Response(text.encode(), media_type="application/json")
