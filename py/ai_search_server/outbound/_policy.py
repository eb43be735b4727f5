"""What outbound calls may reach, how long they may take and how much they may read.

One ``OutboundPolicy`` is built at start-up from the settings and handed to the app's one
``GuardedClient``. Per call, ``timeout_seconds`` and ``max_bytes`` replace these defaults (the values
come from code, never from a request). ``max_concurrent_calls`` and ``queue_wait_seconds`` size the
client's call gate (``_gate``), which the whole app shares with its one client.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field

from ai_search import MAX_AI_SERVICE_RESPONSE_SIZE

__all__ = [
    "DEFAULT_MAX_CONCURRENT_CALLS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_QUEUE_WAIT_SECONDS",
    "DEFAULT_TOTAL_TIMEOUT_SECONDS",
    "IPNetwork",
    "OutboundPolicy",
    "check_max_bytes",
    "check_timeout",
    "normalise_host",
]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Whole-call deadline (seconds): connect + send + every read of the body, streamed or not.
DEFAULT_TOTAL_TIMEOUT_SECONDS = 10.0
# Body cap (bytes) for pipeline, LLM and embeddings answers: the upstream package's 5 MiB.
DEFAULT_MAX_RESPONSE_BYTES = MAX_AI_SERVICE_RESPONSE_SIZE
# Outbound calls (pipeline, LLM, embeddings) running at once in one process. A search makes up to two
# pipeline calls and an answer one LLM call that may stream for 20 s; 32 lets 16 searches or 32 answers
# run together, while a slow provider can no longer pile up an unbounded number of connections, tasks
# and buffers (each call may hold up to 5 MiB).
DEFAULT_MAX_CONCURRENT_CALLS = 32
# Seconds a call waits for a free slot before failing with OutboundBusy (503): a burst queues briefly,
# a backlog behind a slow provider is refused at once instead of at its deadline.
DEFAULT_QUEUE_WAIT_SECONDS = 2.0


def normalise_host(host: str) -> str:
    """Lower-case a host and drop one trailing dot, so ``Example.COM.`` and ``example.com`` compare equal."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host[:-1] if host.endswith(".") else host


def _parse_entry(entry: str) -> IPNetwork | str:
    """An allow-list entry is an IP, a CIDR or a host name (no scheme, no port, no wildcard)."""
    text = normalise_host(entry)
    if not text:
        raise ValueError("outbound allow-list: empty entry")
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        pass
    if any(ch in text for ch in "/:*@ ") or text.startswith("-"):
        raise ValueError(
            f"outbound allow-list: {entry!r} is neither an IP, a CIDR nor a host name "
            "(give a bare host such as 'ollama.internal' or a network such as '10.0.0.0/8')"
        )
    return text


@dataclass(frozen=True)
class OutboundPolicy:
    """Destinations, deadline and byte cap of outbound calls.

    ``allow_hosts`` lists host names (matched exactly, case-insensitively) and IPs or CIDRs that may be
    reached even though they are private, loopback or otherwise non-global: a host name entry trusts
    every address that name resolves to; a network entry trusts the resolved addresses inside it.
    ``allow_private`` opens the private, loopback, CGNAT and unique-local ranges to every host (a
    single-machine deployment with Ollama on 127.0.0.1); link-local, metadata, multicast, unspecified
    and reserved addresses stay refused unless allow-listed. At most ``max_concurrent_calls`` calls
    run at once in the process; one more waits up to ``queue_wait_seconds`` for a slot.

    Raises:
        ValueError: an allow-list entry does not parse, or a limit is not a positive finite number.
    """

    allow_hosts: tuple[str, ...] = ()
    total_timeout_seconds: float = DEFAULT_TOTAL_TIMEOUT_SECONDS
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    allow_private: bool = False
    max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS
    queue_wait_seconds: float = DEFAULT_QUEUE_WAIT_SECONDS
    allowed_names: frozenset[str] = field(init=False, repr=False, compare=False)
    allowed_networks: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A bare string would otherwise be read as one entry per character.
        entries = (self.allow_hosts,) if isinstance(self.allow_hosts, str) else tuple(self.allow_hosts)
        parsed = [_parse_entry(entry) for entry in entries]
        object.__setattr__(self, "allow_hosts", entries)
        object.__setattr__(self, "allowed_names", frozenset(p for p in parsed if isinstance(p, str)))
        object.__setattr__(self, "allowed_networks", tuple(p for p in parsed if not isinstance(p, str)))
        check_timeout(self.total_timeout_seconds)
        check_max_bytes(self.max_response_bytes)
        if isinstance(self.max_concurrent_calls, bool) or self.max_concurrent_calls < 1:
            raise ValueError(
                f"max_concurrent_calls must be a positive integer, not {self.max_concurrent_calls!r}"
            )
        if not (math.isfinite(self.queue_wait_seconds) and self.queue_wait_seconds >= 0):
            raise ValueError(
                f"queue_wait_seconds must be a finite number >= 0, not {self.queue_wait_seconds!r}"
            )

    def host_allowed(self, host: str) -> bool:
        return normalise_host(host) in self.allowed_names

    def address_allowed(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return any(address.version == net.version and address in net for net in self.allowed_networks)


def check_timeout(seconds: float) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ValueError(f"outbound timeout must be a number of seconds, not {type(seconds).__name__}")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"outbound timeout must be a positive finite number of seconds, not {seconds!r}")
    return float(seconds)


def check_max_bytes(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValueError(f"outbound byte cap must be a positive integer of bytes, not {limit!r}")
    return limit
