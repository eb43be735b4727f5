"""Cited answers: an OpenAI-compatible provider over the guarded client, or extractive answers.

- ``provider``: the OpenAI-compatible client (models, completions, streamed completions).
- ``stream``: the answer's text shaping, whole or chunk by chunk, and the server-sent events.
- ``answer_service``: status checks, source loading under the caller's permissions, LLM or extractive.

The routes are ``routes/answers.py`` (``ai.search.answer``, ``ai.llm.models``).
"""
