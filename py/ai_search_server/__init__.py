"""ai_search_server: the thin proxy of ai-search.

It serves the search page, holds every secret, and does what the browser must not: the workspace
store, authentication, the permission-scoped retrieval pipeline, LLM answers and the MCP endpoint.
"""

__version__ = "0.1.0"
