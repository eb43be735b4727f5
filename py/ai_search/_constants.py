"""Limits and tuning constants shared by the browser, the server and the MCP endpoint.

Every limit carries its unit in its name or in the comment beside it. The values match the upstream
AI-search package, so that a query, a filter list or an answer request that one side accepts is
accepted by the other. A keystroke module (`ai_search.KEYSTROKE_MODULES`): it also runs on the page's
MicroPython stage, so it follows the convention of `_portable`.
"""

__all__ = [
    "AI_LICENSE_MODULE",
    "AI_SEARCH_FILTER_SUGGESTION_LIMIT",
    "AI_SEARCH_PAGE_SIZE",
    "AI_SEARCH_RESULTS_PAGE_SIZE",
    "AI_SEARCH_ROOM_LOOKUP_LIMIT",
    "CLASSIFICATION_SEARCH_TYPE",
    "DEFAULT_INTELLIGENT_SEARCH_RECENCY_HALF_LIFE_DAYS",
    "DEFAULT_INTELLIGENT_SEARCH_SEMANTIC_WEIGHT",
    "INTELLIGENT_SEARCH_CANDIDATE_MULTIPLIER",
    "INTELLIGENT_SEARCH_RRF_CONSTANT",
    "MAX_AI_SERVICE_RESPONSE_SIZE",
    "MAX_FEEDBACK_REASON_LENGTH",
    "MAX_INTELLIGENT_SEARCH_CANDIDATES",
    "MAX_INTELLIGENT_SEARCH_RESULTS",
    "MAX_ROOM_SEARCH_PATTERN_LENGTH",
    "MAX_SEARCH_ANSWER_MESSAGES",
    "MAX_SEARCH_ANSWER_TEXT_LENGTH",
    "MAX_SEARCH_FILTER_VALUES",
    "MAX_SEARCH_QUERY_LENGTH",
    "MAX_SOURCE_MESSAGE_LENGTH",
    "MAX_SOURCE_URL_LENGTH",
    "MIN_INTELLIGENT_SEARCH_CANDIDATES",
]

# Results shown in the first page of the search panel, and each "show more" step (messages).
AI_SEARCH_PAGE_SIZE = 5
AI_SEARCH_RESULTS_PAGE_SIZE = 8
# Suggestions offered for the filter token under the caret (items).
AI_SEARCH_FILTER_SUGGESTION_LIMIT = 5
# Rooms returned by one autocomplete lookup (rooms).
AI_SEARCH_ROOM_LOOKUP_LIMIT = 20
# Results one search may return (messages); `intelligentCount` is clamped to 1..this.
MAX_INTELLIGENT_SEARCH_RESULTS = 50
# Values one multi-value filter (`in:`, `from:`) may hold (values).
MAX_SEARCH_FILTER_VALUES = 25
# Characters of a room lookup turned into a pattern; longer input is cut before escaping.
MAX_ROOM_SEARCH_PATTERN_LENGTH = 64
# Bytes of any AI service response body (pipeline, LLM, embeddings) read before giving up.
MAX_AI_SERVICE_RESPONSE_SIZE = 5 * 1024 * 1024
# Characters of a source message the page shows before cutting it.
MAX_SOURCE_MESSAGE_LENGTH = 700
# Source messages one answer may be grounded on (messages).
MAX_SEARCH_ANSWER_MESSAGES = 20
# Characters of each source message put into the answer prompt.
MAX_SEARCH_ANSWER_TEXT_LENGTH = 1600
# Characters of a search query (the free text, after filters are taken out).
MAX_SEARCH_QUERY_LENGTH = 500
# Characters of the optional reason given with an answer's rating: a sentence or two. The page's
# reason field stops there and the feedback route refuses more.
MAX_FEEDBACK_REASON_LENGTH = 1000
# Characters of a message's source link (its "open in Slack" address): a Slack permalink with its
# thread query is about 110; browsers and proxies take 2,000 everywhere. The store refuses longer
# ones and the page makes no link of them.
MAX_SOURCE_URL_LENGTH = 2000

# The licence module name that gates AI features upstream; kept for API compatibility.
AI_LICENSE_MODULE = "chat.rocket.rc-ai"

# Hybrid retrieval: each branch fetches max(limit, 5) x MULTIPLIER candidates, clamped to MIN..MAX.
INTELLIGENT_SEARCH_CANDIDATE_MULTIPLIER = 3
MIN_INTELLIGENT_SEARCH_CANDIDATES = 20
MAX_INTELLIGENT_SEARCH_CANDIDATES = 100
# The pipeline's classification search type for message search.
CLASSIFICATION_SEARCH_TYPE = 2
# k of reciprocal rank fusion: score += weight / (k + rank).
INTELLIGENT_SEARCH_RRF_CONSTANT = 60
# Share of the semantic branch in fusion, in percent (0 = keyword only, 100 = semantic only).
DEFAULT_INTELLIGENT_SEARCH_SEMANTIC_WEIGHT = 50
# Age at which the recency boost halves (days).
DEFAULT_INTELLIGENT_SEARCH_RECENCY_HALF_LIFE_DAYS = 30
