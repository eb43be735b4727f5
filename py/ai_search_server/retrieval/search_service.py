"""``SearchService``: permission-scoped hybrid search, the server half of ``GET /api/v1/ai.search``.

The upstream service's steps (spec §6 `search`), with permission scoping enforced three times
(DESIGN decision 3), each one failing closed:

1. **Before the pipeline.** The caller's readable rooms (subscribed, not banned) are read from the
   store; requested room ids and room names are intersected with them by the pure core. Names that
   resolve to nothing readable give no results, never a search of every room. The pipeline filter
   holds only readable rooms.
2. **After the pipeline.** Candidates are normalised against the same rooms: one from any other
   room is dropped, whatever the pipeline said.
3. **From the store.** Each result is rebuilt from the stored message, after re-reading the caller's
   readable rooms (a ban during the pipeline call counts). A candidate whose message is gone, or
   sits in a room outside the filter, or breaks the author or date filter, is dropped.

Retrieval: the keyword and semantic branches run in parallel (the semantic weight decides which run:
0 keyword only, 100 semantic only), semantic hits below the minimum similarity are dropped, both
branches must clear the relevance floor (``floor``: keyword hits a share of the query's term weight,
messages found only by meaning a similarity), the two lists are fused by weighted RRF and may be
reranked by recency (all pure core). What clears no floor is not a result, so a query about nothing
the workspace holds answers nothing, and the count is of results that passed. A branch that fails
degrades the search to the other branch's results; ``SearchOutcome.report`` says what happened
so the page can show it.

The service hands back records (``SearchHit``, ``SearchReport``); ``routes/shapes.py`` renders them as
the REST answer, so every caller shares one service without sharing a wire shape.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Literal

import anyio

from ai_search import (
    AI_SEARCH_PAGE_SIZE,
    DEFAULT_INTELLIGENT_SEARCH_RECENCY_HALF_LIFE_DAYS,
    DEFAULT_INTELLIGENT_SEARCH_SEMANTIC_WEIGHT,
    MAX_INTELLIGENT_SEARCH_CANDIDATES,
    CandidateSource,
    IntelligentSearchCandidate,
    PipelineFilters,
    SearchDateRange,
    SearchFilters,
    apply_temporal_rerank,
    build_intelligent_search_pipeline_filters,
    filter_semantic_candidates_by_minimum_similarity,
    filter_semantic_candidates_by_relevance_floor,
    fuse_candidates_with_weighted_rrf,
    get_intelligent_search_candidate_limit,
    get_match_reason,
    normalize_intelligent_search_candidates,
    resolve_search_dates,
    search_date_bounds,
    to_ranked_candidates,
)

from ..store.base import Store
from ..store.records import Message, Room, User
from .conditions import PIPELINE_IS_VALUES, MessageConditions, conditions_applied
from .floor import KNOWN_TERMS_FIELD, MODEL_FIELD, RelevanceFloor
from .message_checks import MessageChecks, MessageContext
from .pipeline_client import Pipeline, PipelineError
from .second_stage import Passage, SecondStage, SecondStageError
from .second_stage.bands import Band, BandPolicy, Scored, assign_bands, query_kind, stage_is_calibrated
from .terms import Term, highlight_ranges, query_terms, quoted_phrases, value_term

__all__ = [
    "THREAD_TITLE_CHARS",
    "BranchState",
    "Evidence",
    "SearchHit",
    "SearchOptions",
    "SearchOutcome",
    "SearchReport",
    "SearchRequest",
    "SearchScope",
    "SearchService",
    "SearchStatus",
    "SearchType",
    "SortOrder",
    "StageReport",
    "ThreadRef",
    "thread_title",
]

log = logging.getLogger(__name__)

SearchType = Literal["keyword", "semantic", "hybrid"]
# relevance: the fused ranking; new: the same results, newest first.
SortOrder = Literal["relevance", "new"]
# ok: ran; off: the weight left it out; unavailable: cannot run here (no embedder); failed: errored.
BranchState = Literal["ok", "off", "unavailable", "failed"]
_TYPE_WEIGHTS: dict[str, int] = {"keyword": 0, "semantic": 100}
# Characters of a thread's title in a result (its first message's first line, cut at a word).
THREAD_TITLE_CHARS = 120
# First-stage candidates a second stage re-scores by default (messages).
DEFAULT_STAGE_CANDIDATES = 50
# The store keeps times in milliseconds: an excluded end is the included instant 1 ms before it.
_TIMESTAMP_STEP = timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """The search settings, read once from `Settings` (see `wiring.search_options`)."""

    enabled: bool = True
    semantic_weight: int = DEFAULT_INTELLIGENT_SEARCH_SEMANTIC_WEIGHT
    recency_weight: int = 0
    recency_half_life_days: int = DEFAULT_INTELLIGENT_SEARCH_RECENCY_HALF_LIFE_DAYS
    min_similarity_percent: int = 0
    answer_enabled: bool = True
    # What a candidate must hold to be a result (floor.py); the wiring picks the embedder's.
    floor: RelevanceFloor = field(default_factory=RelevanceFloor)
    # The floor for the model a pipeline names in its semantic answer (`MODEL_FIELD`), replacing
    # `floor` for that search: a proxy then floors as one process does. None: `floor` always.
    model_floor: Callable[[str], RelevanceFloor] | None = None
    # Confidence bands instead of the floor (second_stage/bands.py), for the first-stage model's
    # calibrated policy; None: the floor alone, every result strong. `model_bands` is the policy for
    # the model a pipeline names in its answer, as `model_floor`.
    bands: BandPolicy | None = None
    model_bands: Callable[[str], BandPolicy | None] | None = None
    # First-stage candidates the second stage re-scores (the best by the fused first-stage order).
    stage_candidates: int = DEFAULT_STAGE_CANDIDATES
    # An uncalibrated second stage's own band thresholds (the settings); None: its scores only order.
    stage_thresholds: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search, already validated: lists hold at most 25 non-empty values, date-times are aware.

    `start_date`/`end_date` are absolute bounds (upstream's parameters); `dates` holds the date
    values of a search line as typed (`after:-7d`), read on the service's clock in `zone`, the
    caller's time zone. The `excluded_*`, `has`, `is_` and `excluded_words` fields are the search
    line's (`_operators`): sent to the pipeline as our extension (`conditions`), `is:dm` applied to
    the room filter, and checked again on each stored message (`message_checks`).
    """

    text: str
    limit: int = AI_SEARCH_PAGE_SIZE
    rids: tuple[str, ...] = ()
    rid: str | None = None
    room_names: tuple[str, ...] = ()
    from_usernames: tuple[str, ...] = ()
    from_username: str | None = None
    start_date: datetime | None = None
    end_date: datetime | None = None
    search_type: SearchType | None = None
    excluded_room_names: tuple[str, ...] = ()
    excluded_usernames: tuple[str, ...] = ()
    has: tuple[str, ...] = ()
    excluded_has: tuple[str, ...] = ()
    is_: tuple[str, ...] = ()
    excluded_is: tuple[str, ...] = ()
    excluded_words: tuple[str, ...] = ()
    sort: SortOrder = "relevance"
    dates: SearchFilters = field(default_factory=SearchFilters)
    zone: tzinfo = UTC

    def checks(self) -> MessageChecks:
        """What each stored message must be for this request (beyond room, author and time)."""
        return MessageChecks(
            has=self.has,
            excluded_has=self.excluded_has,
            is_=self.is_,
            excluded_is=self.excluded_is,
            excluded_usernames=self.excluded_usernames,
            excluded_words=tuple(t for t in map(value_term, self.excluded_words) if t),
            required_phrases=quoted_phrases(self.text),
        )

    def conditions(self) -> MessageConditions:
        """What the pipeline is asked to apply beyond room, author and time (`is:dm` is the rooms')."""
        return MessageConditions(
            has=self.has,
            not_has=self.excluded_has,
            is_=tuple(v for v in self.is_ if v in PIPELINE_IS_VALUES),
            not_is=tuple(v for v in self.excluded_is if v in PIPELINE_IS_VALUES),
            not_usernames=tuple(dict.fromkeys(u.removeprefix("@") for u in self.excluded_usernames)),
            not_words=self.excluded_words,
            phrases=tuple(" ".join(phrase) for phrase in quoted_phrases(self.text)),
        )


@dataclass(frozen=True, slots=True)
class SearchScope:
    """What a search looked through, for the receipt under the results: how many rooms, from which
    day to which (in the caller's zone; `first` None when those rooms hold no message yet), and the
    names the request gave that are no room or person of the caller's ("no room #inc that you are in").
    """

    rooms: int
    first: date | None
    last: date
    today: date
    zone: str
    unknown_rooms: tuple[str, ...] = ()
    unknown_people: tuple[str, ...] = ()
    no_days: bool = False  # the date filters contradict each other
    # A pipeline that does not apply our conditions extension: the operators it left to the
    # candidate check, and how many candidates each branch proposed (0: every message was checked).
    candidates_checked: int = 0
    checked_operators: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ThreadRef:
    """The conversation a hit belongs to: its thread's first message's id, title and reply count."""

    id: str
    title: str
    replies: int


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result, rebuilt from the store: the message, its room, why and how well it matched."""

    message: Message
    room: Room
    match_reason: str  # keyword, semantic or both
    score: float | None
    # [start, end) code-point ranges of the matched words in the message's text.
    highlights: tuple[tuple[int, int], ...]
    # None: neither a reply nor a thread's first message.
    thread: ThreadRef | None = None
    # The confidence band (strong or related); None where no bands apply (the floor alone decided).
    band: Band | None = None


@dataclass(frozen=True, slots=True)
class StageReport:
    """The second stage in one search: which, how much of the workspace it covers, whether it ran."""

    kind: str
    model: str
    coverage: float  # share of messages it can score (0..1)
    state: BranchState


@dataclass(frozen=True, slots=True)
class SearchReport:
    """How one search went: which pipeline answered, each branch's state, notices for the page.

    ``ran`` False: search is switched off, and nothing but the pipeline's kind is said.
    """

    pipeline: str
    ran: bool = True
    search_type: SearchType = "hybrid"
    keyword: BranchState = "off"
    semantic: BranchState = "off"
    degraded: bool = False
    notices: tuple[str, ...] = ()
    # Messages the embedded index has yet to embed (0: all of them, or a remote pipeline).
    pending_embeddings: int = 0
    scope: SearchScope | None = None
    stage: StageReport | None = None
    # Results per band, of those returned; None where no bands apply.
    strong: int | None = None
    related: int | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """One search's candidates as the bands read them (``bench/tune_bands.py`` reads it too)."""

    policy: BandPolicy
    items: tuple[Scored, ...]
    candidates: dict[str, IntelligentSearchCandidate]
    stage_scores: dict[str, float]
    calibrated: bool  # the stage's scores count in the bands (else they only order)
    stage: StageReport | None


@dataclass(frozen=True, slots=True)
class SearchStatus:
    """Whether search answers at all, and whether answers can be asked for (they need only search:
    without an LLM they are extractive)."""

    enabled: bool
    answers: bool


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: tuple[SearchHit, ...]
    report: SearchReport


@dataclass(frozen=True, slots=True)
class _Plan:
    """One search's scope: the pipeline filter (None: nothing can match), the rooms it covers, the
    absolute bounds every result must fall within, and what the receipt says."""

    filters: PipelineFilters | None
    rooms: frozenset[str]
    start: datetime | None
    end: datetime | None
    scope: SearchScope


@dataclass(slots=True)
class _Branches:
    keyword: BranchState = "off"
    semantic: BranchState = "off"
    notices: list[str] = field(default_factory=list)
    # Branches whose pipeline answered without applying the conditions it was sent.
    unconditioned: list[str] = field(default_factory=list)
    # Query terms found in the searched rooms (the embedded keyword branch says); None: not said.
    known_terms: int | None = None


class SearchService:
    """Holds the store, the pipeline and the options; `search` is safe to call concurrently."""

    def __init__(
        self,
        store: Store,
        pipeline: Pipeline,
        options: SearchOptions,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        second_stage: SecondStage | None = None,
    ) -> None:
        self.store = store
        self.pipeline = pipeline
        self.options = options
        self._clock = clock
        self.second_stage = second_stage

    def status(self) -> SearchStatus:
        return SearchStatus(self.options.enabled, self.options.enabled and self.options.answer_enabled)

    async def aclose(self) -> None:
        await self.pipeline.aclose()
        if self.second_stage is not None:
            await self.second_stage.aclose()

    # -- the three scoping steps ---------------------------------------------------------------------

    def _plan(self, user: User, request: SearchRequest) -> _Plan:
        readable = self.store.readable_room_ids(user.id)
        name_ids, unknown = self._room_ids(user, request.room_names, readable)
        excluded, unknown_excluded = self._room_ids(user, request.excluded_room_names, readable)
        people = tuple(
            name
            for name in dict.fromkeys((*request.from_usernames, *request.excluded_usernames))
            if not self.store.shares_a_room(user.id, name.removeprefix("@"))
        )
        zone = request.zone
        today = self._clock().astimezone(zone).date()
        days = resolve_search_dates(request.dates, today)
        start, end = _bounds(request, days, zone)
        filters: PipelineFilters | None = None
        # The rooms asked for by name are not the caller's: no fallback to all rooms.
        if not (request.room_names and not name_ids and not request.rids and not request.rid):
            filters = build_intelligent_search_pipeline_filters(
                sorted(readable - set(excluded)),
                rid=request.rid,
                rids=[*request.rids, *name_ids],
                from_username=request.from_username,
                from_usernames=request.from_usernames,
                start_date=start,
                end_date=end,
            )
        rooms = frozenset(_filter_rooms(filters)) if filters is not None else frozenset()
        earliest = _local_day(self.store.earliest_message_at(rooms), zone) if rooms else None
        bounds = [d for d in (days.start, earliest) if d is not None]
        first = max(bounds) if bounds else None
        last = min(today, days.end - timedelta(days=1)) if days.end is not None else today
        scope = SearchScope(
            rooms=len(rooms),
            first=first,
            last=last,
            today=today,
            zone=_zone_name(zone),
            unknown_rooms=(*unknown, *unknown_excluded),
            unknown_people=people,
            no_days=days.empty,
        )
        return _Plan(filters if not days.empty else None, rooms, start, end, scope)

    def _room_ids(
        self, user: User, names: Sequence[str], readable: frozenset[str]
    ) -> tuple[list[str], list[str]]:
        """The ids of the rooms named, among the caller's only (a foreign room of the same name
        never shadows theirs), and the names that are none of theirs."""
        ids, unknown = [], []
        for name in names:
            room = self.store.readable_room_by_name(user.id, name)
            if room is not None and room.id in readable:
                ids.append(room.id)
            else:
                unknown.append(name)
        return ids, unknown

    def _resolve(
        self,
        user: User,
        request: SearchRequest,
        ranked: Sequence[IntelligentSearchCandidate],
        plan: _Plan,
        bands: Mapping[str, Band] | None = None,
    ) -> tuple[SearchHit, ...]:
        ids = list(dict.fromkeys(c.msg_id for c in ranked if c.msg_id))
        messages = self.store.get_messages(ids)
        # Read again: a subscription lost or a ban set while the pipeline answered counts.
        allowed = plan.rooms & self.store.readable_room_ids(user.id)
        rooms = self.store.get_rooms({m.room_id for m in messages.values() if m.room_id in allowed})
        authors = {
            n.removeprefix("@").lower() for n in (*request.from_usernames, request.from_username or "")
        }
        authors.discard("")
        checks = request.checks()
        matcher = checks.matcher()
        threads = self.store.thread_summaries(messages) if checks.needs_threads else {}
        terms = query_terms(request.text)
        # Either order shows the same results, the first `limit` by relevance: sorting every
        # candidate by time would put the faintest semantic neighbours of the words on top.
        wanted = request.limit
        hits: list[SearchHit] = []
        seen: set[str] = set()
        for candidate in ranked:
            message = messages.get(candidate.msg_id or "")
            room = rooms.get(message.room_id) if message is not None else None
            if message is None or room is None or message.id in seen:
                continue
            if not _within(message, authors, plan.start, plan.end):
                continue
            if checks.active and not matcher.passes(MessageContext(message, room, message.id in threads)):
                continue
            seen.add(message.id)
            band = None if bands is None else bands.get(message.id)
            hits.append(replace(_hit(message, room, candidate, terms), band=band))
            if len(hits) >= wanted:
                break
        if request.sort == "new":
            # Newest first within each band: the strong results stay above the related ones.
            hits.sort(key=lambda hit: (hit.band != "related", hit.message.ts, hit.message.id), reverse=True)
            hits = hits[: request.limit]
        return self._with_threads(hits, messages)

    def _with_threads(self, hits: list[SearchHit], messages: dict[str, Message]) -> tuple[SearchHit, ...]:
        """Say which conversation each hit belongs to: its thread's id, title and reply count."""
        found = [hit.message for hit in hits]
        summaries = self.store.thread_summaries({m.tmid or m.id for m in found})
        parents = self.store.get_messages({m.tmid for m in found if m.tmid} - messages.keys())
        parents.update(messages)
        threaded: list[SearchHit] = []
        for hit in hits:
            thread_id = hit.message.tmid or hit.message.id
            summary = summaries.get(thread_id)
            if summary is not None:
                parent = parents.get(thread_id)
                title = thread_title(parent.text) if parent is not None else ""
                hit = replace(hit, thread=ThreadRef(thread_id, title, summary.count))
            threaded.append(hit)
        return tuple(threaded)

    # -- retrieval ---------------------------------------------------------------------------------

    async def search(self, user: User, request: SearchRequest) -> SearchOutcome:
        """Raises nothing for pipeline trouble (the outcome says so); store errors propagate."""
        if not self.options.enabled:
            return SearchOutcome((), SearchReport(self.pipeline.kind, ran=False))
        plan = self._plan(user, request)
        if plan.filters is None:
            scoped_out = bool(plan.scope.unknown_rooms) and not plan.scope.no_days
            return SearchOutcome((), self._report(_Branches(), request, plan, scoped_out=scoped_out))
        filters, scope_rooms = self._room_kinds(plan.filters, plan.rooms, request)
        if filters is None:  # is:dm among rooms that are none, or -is:dm among direct messages only
            return SearchOutcome((), self._report(_Branches(), request, plan))
        weight = _TYPE_WEIGHTS.get(request.search_type or "hybrid", self.options.semantic_weight)
        branches = _Branches()
        if weight > 0 and not self.pipeline.semantic_available:
            branches.semantic = "unavailable"
            branches.notices.append(
                "Semantic search is off (no embedding model): results match keywords only."
            )
            weight = 0
        limit = get_intelligent_search_candidate_limit(request.limit)
        conditions = request.conditions()
        if request.checks().active:
            # Checked on the stored messages too: a pipeline that does not apply the conditions
            # misses the fewer, the more candidates it proposes.
            limit = MAX_INTELLIGENT_SEARCH_CANDIDATES
        classifications = list(dict.fromkeys(["user", *user.roles]))
        found: dict[CandidateSource, list[IntelligentSearchCandidate]] = {}
        coverage: dict[str, float] = {}
        models: list[str] = []

        async def run(mode: CandidateSource) -> None:
            try:
                raw = await self.pipeline.search(
                    request.text,
                    mode=mode,
                    classifications=classifications,
                    pipeline_filters=filters,
                    limit=limit,
                    conditions=conditions if conditions.active else None,
                )
            except PipelineError as exc:
                log.warning("ai.search: %s", exc)
                setattr(branches, mode, "unavailable" if exc.kind == "unavailable" else "failed")
                branches.notices.append(
                    f"The {exc.reason.removeprefix('the ')}; showing what else was found."
                )
                return
            if conditions.active and not conditions_applied(raw):
                branches.unconditioned.append(mode)
            known = raw.get(KNOWN_TERMS_FIELD) if isinstance(raw, dict) else None
            if isinstance(known, int) and not isinstance(known, bool):
                branches.known_terms = known
            if mode == "keyword":
                coverage.update(_keyword_coverage(raw))
            elif isinstance(raw, dict) and isinstance(raw.get(MODEL_FIELD), str):
                models.append(raw[MODEL_FIELD])
            normalised = normalize_intelligent_search_candidates(raw, scope_rooms, limit, mode)
            if normalised.out_of_range_count:
                log.warning(
                    "Intelligent search scores outside the documented cosine range: source=%s "
                    "outOfRangeCount=%d",
                    mode,
                    normalised.out_of_range_count,
                )
            found[mode] = list(normalised.candidates)
            setattr(branches, mode, "ok")

        async with anyio.create_task_group() as group:
            if weight < 100:
                group.start_soon(run, "keyword")
            if weight > 0:
                group.start_soon(run, "semantic")
        model = models[0] if models else None
        policy = self._policy(model)
        stage: StageReport | None = None
        bands: dict[str, Band] | None = None
        if policy is None:
            ranked = self._rank(found, weight, limit, coverage, request.text, model)
        else:
            ranked, bands, stage = await self._banded(policy, found, coverage, request.text, branches)
        hits = self._resolve(user, request, ranked, replace(plan, rooms=scope_rooms), bands)
        if branches.unconditioned:
            checked = replace(plan.scope, candidates_checked=limit, checked_operators=conditions.operators())
            plan = replace(plan, scope=checked)
        report = self._report(branches, request, plan)
        if bands is not None:
            strong = sum(1 for hit in hits if hit.band == "strong")
            report = replace(report, stage=stage, strong=strong, related=len(hits) - strong)
        return SearchOutcome(hits, report)

    def _policy(self, model: str | None) -> BandPolicy | None:
        """The bands for this search: the named model's (a remote pipeline), else the configured one's."""
        if model is not None and self.options.model_bands is not None:
            return self.options.model_bands(model)
        return self.options.bands

    async def _banded(
        self,
        policy: BandPolicy,
        found: dict[CandidateSource, list[IntelligentSearchCandidate]],
        coverage: dict[str, float],
        query: str,
        branches: _Branches,
    ) -> tuple[list[IntelligentSearchCandidate], dict[str, Band], StageReport | None]:
        """The candidates in band order (strong, then related) and each one's band."""
        evidence = await self._evidence(policy, found, coverage, query, branches)
        known = branches.known_terms
        banded = assign_bands(
            evidence.policy,
            query,
            evidence.items,
            known_words=known != 0,
            all_words_known=known is not None and known >= len(query_terms(query)),
        )
        scores = evidence.stage_scores
        if scores and not evidence.calibrated:
            # An uncalibrated stage orders each band by its own score, and leaves the bands alone.
            banded.sort(key=lambda b: (b.band != "strong", -scores.get(b.id, -math.inf)))
        ranked = [evidence.candidates[b.id] for b in banded]
        return ranked, {b.id: b.band for b in banded}, evidence.stage

    async def _evidence(
        self,
        policy: BandPolicy,
        found: dict[CandidateSource, list[IntelligentSearchCandidate]],
        coverage: dict[str, float],
        query: str,
        branches: _Branches,
    ) -> Evidence:
        """What the bands read, per candidate.

        The first stage's candidates are gathered without the floor (the bands replace it), the best
        `stage_candidates` of them by the fused first-stage order are re-scored by the second stage.
        A second stage that fails leaves the first stage's evidence alone, and the search says so.
        """
        keyword = [c for c in found.get("keyword", []) if coverage.get(c.id, 1.0) >= policy.related_coverage]
        semantic = list(
            filter_semantic_candidates_by_minimum_similarity(
                found.get("semantic", []), self.options.min_similarity_percent
            )
        )
        fused = fuse_candidates_with_weighted_rrf(
            semantic, keyword, 50, MAX_INTELLIGENT_SEARCH_CANDIDATES * 2
        )
        by_id: dict[str, IntelligentSearchCandidate] = {}
        for candidate in fused:
            by_id.setdefault(candidate.msg_id or candidate.id, candidate)
        similarity = {
            c.msg_id or c.id: c.semantic_similarity for c in semantic if c.semantic_similarity is not None
        }
        covered = {c.msg_id or c.id: coverage.get(c.id, 1.0) for c in keyword}
        if query_kind(query) == "symbols":
            # Emoji and punctuation are no keyword terms: a message holding the symbols as typed
            # counts as a keyword hit holding all of the query.
            wanted = query.strip()
            texts = self.store.get_messages(by_id)
            covered.update({key: 1.0 for key, m in texts.items() if wanted in m.text})
        scores, stage = await self._stage_scores(query, list(by_id.values()), branches)
        calibrated = stage is not None and stage_is_calibrated(stage.model)
        thresholds = self.options.stage_thresholds
        if stage is not None and not calibrated and thresholds is not None:
            strong, related = thresholds
            policy = replace(policy, strong=strong, related=related, stage_weight=1.0)
            calibrated = True
        items = tuple(
            Scored(
                key,
                similarity=similarity.get(key),
                stage=scores.get(key) if calibrated else None,
                coverage=covered.get(key),
            )
            for key in by_id
        )
        return Evidence(policy, items, by_id, scores, calibrated, stage)

    async def _stage_scores(
        self, query: str, candidates: Sequence[IntelligentSearchCandidate], branches: _Branches
    ) -> tuple[dict[str, float], StageReport | None]:
        stage = self.second_stage
        if stage is None:
            return {}, None
        ratio = stage.coverage().ratio
        passages = [Passage(c.msg_id or c.id, c.text) for c in candidates[: self.options.stage_candidates]]
        if not passages:
            return {}, StageReport(stage.kind, stage.model_id, ratio, "ok")
        try:
            scores = dict(await stage.score(query, passages))
        except SecondStageError as exc:
            log.warning("ai.search: %s", exc)
            branches.notices.append("Re-ranking is unavailable right now; results are in first-stage order.")
            return {}, StageReport(stage.kind, stage.model_id, ratio, "failed")
        return scores, StageReport(stage.kind, stage.model_id, ratio, "ok")

    def _room_kinds(
        self, filters: PipelineFilters, rooms: frozenset[str], request: SearchRequest
    ) -> tuple[PipelineFilters | None, frozenset[str]]:
        """The filter and rooms narrowed by `is:dm` / `-is:dm`: whether a room is a direct message
        is the store's to say, so the room filter carries it, exact whatever the pipeline."""
        wanted = {True} if "dm" in request.is_ else {True, False}
        if "dm" in request.excluded_is:
            wanted.discard(True)
        if wanted == {True, False}:
            return filters, rooms
        kinds = self.store.get_rooms(rooms)
        kept = frozenset(rid for rid, room in kinds.items() if (room.type == "d") in wanted)
        if not kept:
            return None, kept
        return {**filters, "room_id": {"$in": sorted(kept)}}, kept

    def _rank(
        self,
        found: dict[CandidateSource, list[IntelligentSearchCandidate]],
        weight: int,
        limit: int,
        coverage: dict[str, float],
        query: str,
        model: str | None,
    ) -> Sequence[IntelligentSearchCandidate]:
        named = self.options.model_floor
        floor = self.options.floor if model is None or named is None else named(model)
        keyword = found.get("keyword")
        if keyword is not None:
            # A hit holding little of the query's weight (one common word of a long question, or a
            # query whose weight is mostly in words the workspace never uses) is no result. Only the
            # embedded pipeline reports coverage; a remote pipeline's hits all count.
            keyword = [c for c in keyword if coverage.get(c.id, 1.0) >= floor.keyword_coverage]
        semantic = found.get("semantic")
        if semantic is not None:
            similar_enough = filter_semantic_candidates_by_minimum_similarity(
                semantic, self.options.min_similarity_percent
            )
            corroborated = {c.msg_id or c.id for c in keyword or ()}
            candidate_floor, query_floor = floor.semantic_for(query)
            if corroborated and floor.keyword_opens_query_floor:
                # A keyword hit that cleared its floor says the workspace holds the topic: the
                # query floor, there to tell unanswerable queries apart, has nothing left to decide.
                query_floor = 0.0
            semantic = list(
                filter_semantic_candidates_by_relevance_floor(
                    similar_enough, candidate_floor, corroborated, query_floor=query_floor
                )
            )
        if semantic is not None and keyword is not None:
            fused = fuse_candidates_with_weighted_rrf(semantic, keyword, weight, limit)
        else:
            fused = to_ranked_candidates(semantic if semantic is not None else keyword or [])
        return apply_temporal_rerank(
            fused,
            recency_weight=self.options.recency_weight,
            half_life_days=self.options.recency_half_life_days,
            now=self._clock(),
        )

    def _report(
        self, branches: _Branches, request: SearchRequest, plan: _Plan, *, scoped_out: bool = False
    ) -> SearchReport:
        notices = ["None of the requested rooms is one you can read."] if scoped_out else branches.notices
        pending = getattr(getattr(self.pipeline, "index", None), "pending_embeddings", 0)
        return SearchReport(
            self.pipeline.kind,
            search_type=request.search_type or "hybrid",
            keyword=branches.keyword,
            semantic=branches.semantic,
            degraded="failed" in (branches.keyword, branches.semantic),
            notices=tuple(notices),
            pending_embeddings=pending,
            scope=plan.scope,
        )


def _bounds(
    request: SearchRequest, days: SearchDateRange, zone: tzinfo
) -> tuple[datetime | None, datetime | None]:
    """The later start and the earlier end of the request's absolute bounds and its typed dates.

    The typed dates end at a midnight that is itself excluded; the pipeline's `$le` and `_within`
    include their end, so that end is moved back by the smallest step a timestamp has (1 ms).
    """
    start, end = search_date_bounds(days, zone)
    if end is not None:
        end -= _TIMESTAMP_STEP
    starts = [d for d in (request.start_date, start) if d is not None]
    ends = [d for d in (request.end_date, end) if d is not None]
    return (max(starts) if starts else None), (min(ends) if ends else None)


def _local_day(moment: datetime | None, zone: tzinfo) -> date | None:
    return None if moment is None else moment.astimezone(zone).date()


def _zone_name(zone: tzinfo) -> str:
    key = getattr(zone, "key", None)  # a ZoneInfo's IANA name
    return key if isinstance(key, str) else zone.tzname(None) or "UTC"


def _keyword_coverage(raw: object) -> dict[str, float]:
    """msg id -> `coverage` of a keyword answer's items (the embedded pipeline's extension field)."""
    items = raw.get("results") if isinstance(raw, dict) else None
    found: dict[str, float] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        value, key = item.get("coverage"), item.get("id")
        if isinstance(key, str) and isinstance(value, int | float) and not isinstance(value, bool):
            found[key] = float(value)
    return found


def _filter_rooms(filters: PipelineFilters) -> list[str]:
    room_filter = filters.get("room_id", {})
    if "$eq" in room_filter:
        return [room_filter["$eq"]]
    return list(room_filter.get("$in", []))


def _within(message: Message, authors: set[str], start: datetime | None, end: datetime | None) -> bool:
    """The author and date filters, checked again on the stored message (a pipeline may ignore them)."""
    if authors and message.username.lower() not in authors:
        return False
    if start is not None and message.ts < start:
        return False
    return end is None or message.ts <= end


def _hit(
    message: Message, room: Room, candidate: IntelligentSearchCandidate, terms: Sequence[Term]
) -> SearchHit:
    score = candidate.score if candidate.score is not None and math.isfinite(candidate.score) else None
    highlights = tuple((start, end) for start, end in highlight_ranges(message.text, terms))
    return SearchHit(message, room, get_match_reason(candidate), score, highlights)


def thread_title(text: str) -> str:
    """A thread's name as a list shows it: the first line of its first message, cut at a word."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    if len(line) <= THREAD_TITLE_CHARS:
        return line
    cut = line[:THREAD_TITLE_CHARS].rsplit(" ", 1)[0] or line[:THREAD_TITLE_CHARS]
    return cut.rstrip(" ,.;:") + "…"
