"""The guarded outbound HTTP client: every call to the pipeline, the LLM provider and embeddings.

DESIGN decision 7. The pipeline and LLM URLs come from configuration, never from a request, a chat
message, a model's answer or an MCP argument; this client is the second line: even a configured
URL only reaches a destination the policy allows.

What every call gets:

- **Destination checked after DNS resolution.** Numeric hosts in any form (``2130706433``,
  ``0x7f000001``, ``127.1``, ``0177.0.0.1``, ``[::ffff:127.0.0.1]``) are normalised to the address they
  denote; names are resolved, and every answer must be global unless the host or the address is
  allow-listed (``OutboundPolicy.allow_hosts``). Refused: private, loopback, link-local, CGNAT
  100.64/10, multicast, reserved, unspecified, documentation, cloud metadata (169.254.169.254,
  fd00:ec2::254) and IPv6 forms carrying any of those (mapped, compatible, NAT64, 6to4, Teredo).
- **Pinned connect.** The check happens inside the httpcore network backend, which then connects
  to an address from that same answer, so DNS rebinding between check and connect cannot switch
  the target. Why a backend and not a URL rewrite with ``sni_hostname``: see ``_transport``.
- **Redirects refused** (a 3xx is an error, its Location never contacted), only http and https,
  no credentials in URLs, no proxies from the environment, no cookies kept.
- **One total deadline per call** (connect + every read, streamed or not) and **a byte cap** on the
  body, counted as it arrives whatever Content-Length says.
- **A cap on calls at once** (``max_concurrent_calls``, 32), held by the client, so by the whole app
  that shares it: one more waits up to ``queue_wait_seconds`` (2 s) for a slot, then fails with
  ``OutboundBusy``; the wait is not part of the call's deadline.
- **No secrets in messages or logs**: targets are shown as ``scheme://host:port/path``; header
  values are never logged nor quoted.

The exception tree (``proxy_status`` is what the proxy answers its own client)::

    OutboundError                 502
    ├── OutboundRefused           502  destination not allowed: scheme, URL, host or resolved address
    ├── OutboundTimeout           504  the total deadline passed
    ├── OutboundBusy              503  the process's cap of calls at once stayed full for the wait
    ├── OutboundTooLarge          502  the body passed the byte cap
    ├── OutboundRedirect          502  a 3xx answer
    ├── OutboundHTTPError         502  a non-2xx answer; ``.status`` is the upstream's status
    └── OutboundProtocolError     502  DNS/connection failure, bad framing, bad JSON or UTF-8

Usage::

    policy = OutboundPolicy(allow_hosts=tuple(settings.outbound_allow_hosts))
    async with GuardedClient(policy) as client:
        result = await client.request_json("POST", pipeline_url, headers=keys, json=query)

One client per app (``Services.outbound``), handed to everything that calls out; a thread that blocks
(the embedder) uses it through ``BlockingClient``.
"""

from ai_search_server.outbound._addresses import (
    METADATA_ADDRESSES,
    AddressClass,
    IPAddress,
    Resolver,
    check_addresses,
    classify_address,
    parse_ip_literal,
    system_resolve,
)
from ai_search_server.outbound._blocking import BlockingClient, blocking_client
from ai_search_server.outbound._call import check_configured_url, check_url_shape
from ai_search_server.outbound._client import ERROR_BODY_EXCERPT_BYTES, GuardedClient, OutboundResponse
from ai_search_server.outbound._errors import (
    OutboundBusy,
    OutboundError,
    OutboundHTTPError,
    OutboundProtocolError,
    OutboundRedirect,
    OutboundRefused,
    OutboundTimeout,
    OutboundTooLarge,
)
from ai_search_server.outbound._policy import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_QUEUE_WAIT_SECONDS,
    DEFAULT_TOTAL_TIMEOUT_SECONDS,
    OutboundPolicy,
)

__all__ = [
    "DEFAULT_MAX_CONCURRENT_CALLS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_QUEUE_WAIT_SECONDS",
    "DEFAULT_TOTAL_TIMEOUT_SECONDS",
    "ERROR_BODY_EXCERPT_BYTES",
    "METADATA_ADDRESSES",
    "AddressClass",
    "BlockingClient",
    "GuardedClient",
    "IPAddress",
    "OutboundBusy",
    "OutboundError",
    "OutboundHTTPError",
    "OutboundPolicy",
    "OutboundProtocolError",
    "OutboundRedirect",
    "OutboundRefused",
    "OutboundResponse",
    "OutboundTimeout",
    "OutboundTooLarge",
    "Resolver",
    "blocking_client",
    "check_addresses",
    "check_configured_url",
    "check_url_shape",
    "classify_address",
    "parse_ip_literal",
    "system_resolve",
]
