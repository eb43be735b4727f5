"""Secret redaction: the configured secrets never leave the server in what it writes.

The server holds keys for its upstreams (the LLM's API key, the remote pipeline's key and secret, the
embeddings key, the served pipeline's keys: ``settings.SECRET_SETTINGS``). A hostile or broken upstream
can hand one back: a provider that quotes the ``Authorization`` header it got in an error body, in the
answer text or in its model ids. Everything an upstream says that the server passes on or logs goes
through one :class:`SecretRedactor`, which replaces every configured secret with ``[redacted]``:

    redactor = SecretRedactor.from_settings(settings)
    redactor.redact("called with Bearer sk-live-123456")        # 'called with Bearer [redacted]'
    stream = redactor.stream()                                   # for streamed text
    "".join(stream.feed(c) for c in chunks) + stream.flush()     # == redactor.redact("".join(chunks))

A stream holds back the end of the text so far while it could still be the start of a secret, so a
secret split across chunks (one character per chunk, even) never leaves in pieces.

Secrets shorter than :data:`MIN_SECRET_CHARS` are not redacted: a value that short ("ollama", which
Ollama's own docs put as the key) is an ordinary word, and replacing it everywhere would garble
answers without hiding anything worth hiding. Start-up warns about such values.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .settings import SECRET_SETTINGS, Settings

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "SecretRedactor", "SecretStream"]

log = logging.getLogger(__name__)

REDACTED = "[redacted]"
# Characters a configured secret needs to be redacted (see the module docstring). Real API keys are
# 20 to 200 characters; 8 still catches short self-chosen secrets.
MIN_SECRET_CHARS = 8


class SecretRedactor:
    """Replaces each of ``secrets`` (longest first, so one that contains another goes whole)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {secret for secret in secrets if len(secret) >= MIN_SECRET_CHARS}
        self.secrets: tuple[str, ...] = tuple(sorted(unique, key=lambda s: (-len(s), s)))

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretRedactor:
        return cls(str(getattr(settings, name)) for name in sorted(SECRET_SETTINGS))

    @staticmethod
    def warn_about_short_secrets(settings: Settings) -> None:
        """Logs, once at start-up, each secret setting too short to be redacted."""
        for name in sorted(SECRET_SETTINGS):
            if 0 < len(str(getattr(settings, name))) < MIN_SECRET_CHARS:
                log.warning(
                    "setting %r is shorter than %d characters: too short to be redacted from answers",
                    name,
                    MIN_SECRET_CHARS,
                )

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def held_back(self, text: str) -> int:
        """Characters at the end of ``text`` that could be the start of a secret still to come."""
        longest = 0
        for secret in self.secrets:
            for size in range(min(len(secret) - 1, len(text)), longest, -1):
                if text.endswith(secret[:size]):
                    longest = size
                    break
        return longest

    def stream(self) -> SecretStream:
        return SecretStream(self)


class SecretStream:
    """``SecretRedactor.redact`` chunk by chunk: ``feed`` what arrives, ``flush`` at the end."""

    def __init__(self, redactor: SecretRedactor) -> None:
        self._redactor = redactor
        self._pending = ""

    def feed(self, chunk: str) -> str:
        """The text so far that no later chunk can turn into a secret, redacted."""
        if not self._redactor.secrets:
            return chunk
        text = self._redactor.redact(self._pending + chunk)
        keep = self._redactor.held_back(text)
        self._pending = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """The rest, at the end of the stream (held back only because it began like a secret)."""
        rest, self._pending = self._pending, ""
        return rest
