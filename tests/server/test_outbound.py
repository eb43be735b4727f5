"""The guarded outbound client against real fake upstreams on loopback (DESIGN 7; spec D1-D3, F2, F3).

Nothing on the network path is mocked: the client opens real sockets to servers these tests start,
and every "refused" case asserts on the server's own request and connection counters that nothing
arrived. The only seam is DNS (``resolve=``), to play a name that resolves to loopback or rebinds.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ai_search_server.outbound as outbound
from ai_search_server.outbound import (
    DEFAULT_MAX_RESPONSE_BYTES,
    GuardedClient,
    IPAddress,
    OutboundError,
    OutboundHTTPError,
    OutboundPolicy,
    OutboundProtocolError,
    OutboundRedirect,
    OutboundRefused,
    OutboundTimeout,
    OutboundTooLarge,
    check_addresses,
    classify_address,
    parse_ip_literal,
)
from tests.server._outbound_servers import LoopbackServer

MiB = 1024 * 1024
# Deadline for the slow-upstream cases (seconds): small, so the file stays fast.
SHORT_DEADLINE_SECONDS = 0.5
# Guard around calls that must end by themselves (seconds); tripping it means the deadline did not work.
MUST_END_WITHIN_SECONDS = 5.0
# What httpcore reads per socket read (bytes): the most a capped call may read past the cap.
READ_CHUNK_BYTES = 64 * 1024

LOOPBACK_POLICY = OutboundPolicy(allow_hosts=("127.0.0.1",))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    upstream = LoopbackServer("127.0.0.1").start()
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def rebinding_pair() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    """Two servers on one port: the checked address 127.0.0.2 and the trap 127.0.0.1."""
    for _attempt in range(5):
        checked = LoopbackServer("127.0.0.2").start()
        try:
            trap = LoopbackServer("127.0.0.1", checked.port).start()
        except OSError:  # the port is taken on 127.0.0.1: pick another
            checked.stop()
            continue
        yield checked, trap
        trap.stop()
        checked.stop()
        return
    pytest.fail("could not bind the same port on 127.0.0.2 and 127.0.0.1")


class StubResolver:
    """DNS seam: answers in turn (the last one repeats) and records every question."""

    def __init__(self, *answers: Sequence[str]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.calls.append(host)
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        return [ipaddress.ip_address(a) for a in answer]


async def failing_resolver(host: str, port: int) -> list[IPAddress]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def collect_sse(client: GuardedClient, url: str, **kwargs: Any) -> list[str]:
    async with aclosing(client.stream_sse("GET", url, **kwargs)) as events:
        return [data async for data in events]


# --- allowed destinations work --------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("policy", "host"),
    [
        pytest.param(OutboundPolicy(allow_hosts=("127.0.0.1",)), "127.0.0.1", id="an-allow-listed-address"),
        pytest.param(OutboundPolicy(allow_hosts=("127.0.0.0/8",)), "127.0.0.1", id="an-allow-listed-cidr"),
        pytest.param(
            OutboundPolicy(allow_hosts=("LocalHost.",)), "localhost", id="an-allow-listed-host-name"
        ),
        pytest.param(OutboundPolicy(allow_private=True), "127.0.0.1", id="allow-private-opens-loopback"),
    ],
)
async def test_allowed_loopback_upstream_answers_json(
    server: LoopbackServer, policy: OutboundPolicy, host: str
) -> None:
    before = server.hits["/json"]
    async with GuardedClient(policy) as client:
        response = await client.request_json(
            "POST",
            server.url("/json?x=1", host=host),
            headers={"X-API-KEY": "k1"},
            json={"query": "déploiement", "k": 5},
        )
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    echo = response.json
    assert echo["method"] == "POST"
    assert echo["body"] == {"query": "déploiement", "k": 5}
    assert echo["headers"]["host"] == f"{host}:{server.port}"
    assert echo["headers"]["x-api-key"] == "k1"
    assert echo["headers"]["accept-encoding"] == "identity"
    assert echo["headers"]["content-type"] == "application/json"
    assert server.hits["/json"] == before + 1


@pytest.mark.anyio
async def test_allowed_upstream_streams_sse_data_payloads(server: LoopbackServer) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        events = await collect_sse(client, server.url("/sse?events=3"))
    assert events == ["first line\nsecond line", '{"n": 0}', '{"n": 1}', '{"n": 2}', "[DONE]"]
    assert server.request_headers[-1]["accept"] == "text/event-stream"


@pytest.mark.anyio
async def test_event_cut_off_by_the_end_of_the_stream_is_dropped(server: LoopbackServer) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        assert await collect_sse(client, server.url("/sse-cut")) == ["one", "two"]


@pytest.mark.anyio
async def test_cookies_from_an_upstream_are_not_sent_back(server: LoopbackServer) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        await client.request_json("GET", server.url("/cookie"))
        second = await client.request_json("GET", server.url("/json"))
    assert "cookie" not in second.json["headers"]


# --- refused destinations: nothing reaches the server ---------------------------------------------

REFUSED_HOSTS = [
    pytest.param("127.0.0.1", id="loopback-literal"),
    pytest.param("127.0.0.1.", id="loopback-with-trailing-dot"),
    pytest.param("localhost", id="localhost-via-the-system-resolver"),
    pytest.param("[::1]", id="ipv6-loopback"),
    pytest.param("2130706433", id="decimal-integer-form"),
    pytest.param("0x7f000001", id="hex-integer-form"),
    pytest.param("0x7f.1", id="hex-short-form"),
    pytest.param("127.1", id="short-dotted-form"),
    pytest.param("0177.0.0.1", id="octal-dotted-form"),
    pytest.param("017700000001", id="octal-integer-form"),
    pytest.param("[::ffff:127.0.0.1]", id="ipv4-mapped-ipv6-dotted"),
    pytest.param("[::ffff:7f00:1]", id="ipv4-mapped-ipv6-hex"),
    pytest.param("[::127.0.0.1]", id="ipv4-compatible-ipv6"),
    pytest.param("[64:ff9b::7f00:1]", id="nat64-of-loopback"),
    pytest.param("0", id="zero-means-this-host"),
    pytest.param("0.0.0.0", id="unspecified"),
    pytest.param("10.0.0.1", id="rfc1918-private"),
    pytest.param("192.168.1.1", id="rfc1918-192-168"),
    pytest.param("100.64.0.1", id="cgnat"),
    pytest.param("169.254.169.254", id="cloud-metadata"),
    pytest.param("[fd00:ec2::254]", id="aws-ipv6-metadata"),
    pytest.param("[fe80::1]", id="ipv6-link-local"),
    pytest.param("[fc00::1]", id="ipv6-unique-local"),
    pytest.param("224.0.0.1", id="multicast"),
    pytest.param("256.0.0.1", id="out-of-range-octet"),
]


@pytest.mark.anyio
@pytest.mark.parametrize("host", REFUSED_HOSTS)
async def test_non_public_destinations_are_refused_by_default(server: LoopbackServer, host: str) -> None:
    before = (server.connections, server.requests)
    async with GuardedClient(OutboundPolicy()) as client:
        with pytest.raises(OutboundRefused):
            await client.request_json("GET", server.url("/json", host=host))
        with pytest.raises(OutboundRefused):
            await collect_sse(client, server.url("/sse", host=host))
    assert (server.connections, server.requests) == before


@pytest.mark.anyio
@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(["127.0.0.1"], id="a-name-resolving-to-loopback"),
        pytest.param(["8.8.8.8", "127.0.0.1"], id="one-loopback-answer-among-public-ones"),
        pytest.param(["2606:4700:4700::1111", "::ffff:127.0.0.1"], id="a-mapped-loopback-answer"),
        pytest.param(["169.254.169.254"], id="a-name-resolving-to-metadata"),
    ],
)
async def test_host_names_are_checked_after_resolution(server: LoopbackServer, answer: list[str]) -> None:
    resolver = StubResolver(answer)
    before = (server.connections, server.requests)
    async with GuardedClient(OutboundPolicy(), resolve=resolver) as client:
        with pytest.raises(OutboundRefused, match=r"api\.example\.com resolves to"):
            await client.request_json("GET", server.url("/json", host="api.example.com"))
    assert resolver.calls == ["api.example.com"]
    assert (server.connections, server.requests) == before


@pytest.mark.anyio
async def test_rebinding_cannot_switch_the_checked_address(
    rebinding_pair: tuple[LoopbackServer, LoopbackServer],
) -> None:
    checked, trap = rebinding_pair
    resolver = StubResolver(["127.0.0.2"], ["127.0.0.1"])  # allowed first, then rebound to the trap
    policy = OutboundPolicy(allow_hosts=("127.0.0.2",))
    url = checked.url("/json", host="rebind.example")
    async with GuardedClient(policy, resolve=resolver) as client:
        response = await client.request_json("GET", url)
        assert response.json["headers"]["host"] == f"rebind.example:{checked.port}"
        # The one resolution that was checked is the one connected to.
        assert (resolver.calls, checked.hits["/json"], trap.connections) == (["rebind.example"], 1, 0)
        # Next connection: the name now rebinds to loopback, and is refused before any connect.
        with pytest.raises(OutboundRefused):
            await client.request_json("GET", url)
    assert len(resolver.calls) == 2
    assert (trap.connections, trap.requests) == (0, 0)


@pytest.mark.anyio
@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize(
    "target",
    [
        pytest.param("/redirect-target", id="to-the-same-upstream"),
        pytest.param("http://169.254.169.254/latest/meta-data/", id="to-cloud-metadata"),
    ],
)
async def test_redirects_are_refused_and_never_followed(
    server: LoopbackServer, code: int, target: str
) -> None:
    before = server.hits["/redirect-target"]
    location = server.url(target) if target.startswith("/") else target
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with pytest.raises(OutboundRedirect) as caught:
            await client.request_json("POST", server.url(f"/redirect?code={code}&to={location}"), json={})
    assert caught.value.status == code
    assert "meta-data" not in str(caught.value)
    assert server.hits["/redirect-target"] == before


@pytest.mark.anyio
@pytest.mark.parametrize(
    "url",
    [
        pytest.param("ftp://127.0.0.1/x", id="ftp-scheme"),
        pytest.param("file:///etc/passwd", id="file-scheme"),
        pytest.param("gopher://127.0.0.1:70/_x", id="gopher-scheme"),
        pytest.param("http://user:pw@127.0.0.1/json", id="credentials-in-the-url"),
        pytest.param("http:///json", id="no-host"),
        pytest.param("http://127.0.0.1:99999/json", id="invalid-port"),
    ],
)
async def test_urls_of_the_wrong_shape_are_refused(url: str) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with pytest.raises(OutboundRefused) as caught:
            await client.request_json("GET", url)
    assert "pw" not in str(caught.value)


# --- limits: size and time ------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["length", "chunked", "close"])
async def test_a_6_mib_body_is_cut_at_the_5_mib_cap(server: LoopbackServer, mode: str) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with pytest.raises(OutboundTooLarge) as caught:
            await client.request_json("GET", server.url(f"/big?size={6 * MiB}&mode={mode}"))
    assert caught.value.limit_bytes == DEFAULT_MAX_RESPONSE_BYTES
    if mode == "length":  # the declared length alone gives it away: nothing is read
        assert caught.value.read_bytes == 0
    else:
        assert (
            DEFAULT_MAX_RESPONSE_BYTES
            < caught.value.read_bytes
            <= DEFAULT_MAX_RESPONSE_BYTES + READ_CHUNK_BYTES
        )


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["length", "chunked", "close"])
@pytest.mark.parametrize(
    ("size", "fits"),
    [
        pytest.param(4096, True, id="exactly-the-cap-fits"),
        pytest.param(4097, False, id="one-byte-over-is-cut"),
    ],
)
async def test_per_call_byte_cap_is_exact(server: LoopbackServer, mode: str, size: int, fits: bool) -> None:
    url = server.url(f"/big?size={size}&mode={mode}")
    async with GuardedClient(LOOPBACK_POLICY) as client:
        if fits:
            response = await client.request_json("GET", url, max_bytes=4096)
            assert len(response.body) == size
        else:
            with pytest.raises(OutboundTooLarge):
                await client.request_json("GET", url, max_bytes=4096)


@pytest.mark.anyio
async def test_streams_are_capped_too(server: LoopbackServer) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with pytest.raises(OutboundTooLarge):
            await collect_sse(client, server.url("/sse-drip?interval=0"), max_bytes=2048)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/drip?interval=0.05", id="headers-then-one-byte-every-50-ms"),
        pytest.param("/hang", id="accepts-and-never-answers"),
    ],
)
async def test_slow_upstream_ends_with_a_timeout(server: LoopbackServer, path: str) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with anyio.fail_after(MUST_END_WITHIN_SECONDS), pytest.raises(OutboundTimeout) as caught:
            await client.request_json("GET", server.url(path), timeout_seconds=SHORT_DEADLINE_SECONDS)
    assert caught.value.proxy_status == 504


@pytest.mark.anyio
async def test_policy_deadline_applies_when_the_call_names_none(server: LoopbackServer) -> None:
    policy = OutboundPolicy(allow_hosts=("127.0.0.1",), total_timeout_seconds=SHORT_DEADLINE_SECONDS)
    async with GuardedClient(policy) as client:
        with anyio.fail_after(MUST_END_WITHIN_SECONDS), pytest.raises(OutboundTimeout):
            await client.request_json("GET", server.url("/drip?interval=0.05"))


@pytest.mark.anyio
async def test_dripping_event_stream_is_cut_by_the_total_deadline(server: LoopbackServer) -> None:
    received: list[str] = []
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with anyio.fail_after(MUST_END_WITHIN_SECONDS), pytest.raises(OutboundTimeout):
            stream = client.stream_sse("GET", server.url("/sse-drip?interval=0.05"), timeout_seconds=0.5)
            async with aclosing(stream) as events:
                async for data in events:  # every event arrives well within any per-read timeout
                    received.append(data)
    assert received[:2] == ["0", "1"]


@pytest.mark.anyio
async def test_time_the_consumer_spends_between_events_counts_against_the_deadline(
    server: LoopbackServer,
) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with anyio.fail_after(MUST_END_WITHIN_SECONDS), pytest.raises(OutboundTimeout):
            stream = client.stream_sse("GET", server.url("/sse?events=50"), timeout_seconds=0.3)
            async with aclosing(stream) as events:
                async for _data in events:
                    await anyio.sleep(0.1)


# --- bad answers ------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body",
    [
        pytest.param("%7Bnot%20json", id="garbage"),
        pytest.param("%7B%22a%22%3A", id="truncated-json"),
        pytest.param("NaN", id="nan-constant"),
        pytest.param("%5B1e400", id="truncated-array"),
        pytest.param("%22%FF%FE%22", id="invalid-utf8"),
        pytest.param("%5B" * 10_000 + "%5D" * 10_000, id="valid-but-10000-deep"),
    ],
)
async def test_garbage_json_is_a_protocol_error(server: LoopbackServer, body: str) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with pytest.raises(OutboundProtocolError, match="not valid JSON"):
            await client.request_json("GET", server.url(f"/raw?body={body}"))


@pytest.mark.anyio
async def test_invalid_utf8_in_a_stream_is_a_protocol_error(server: LoopbackServer) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with pytest.raises(OutboundProtocolError, match="UTF-8"):
            await collect_sse(client, server.url("/raw?body=data:%20%FF%FE%0A%0A"))


@pytest.mark.anyio
@pytest.mark.parametrize("code", [400, 401, 404, 429, 500, 503])
async def test_non_2xx_is_an_http_error_carrying_the_status(server: LoopbackServer, code: int) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with pytest.raises(OutboundHTTPError) as caught:
            await client.request_json("POST", server.url(f"/status?code={code}"), json={"q": 1})
    assert caught.value.status == code
    assert b"internal detail" in caught.value.body_excerpt
    assert "internal detail" not in str(caught.value)


@pytest.mark.anyio
async def test_an_error_status_wins_over_an_error_body_past_the_cap(server: LoopbackServer) -> None:
    async with GuardedClient(LOOPBACK_POLICY) as client:
        with pytest.raises(OutboundHTTPError) as caught:
            await client.request_json("GET", server.url("/status?code=502"), max_bytes=10)
    assert caught.value.status == 502


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("resolve", "port"),
    [
        pytest.param(failing_resolver, None, id="dns-failure"),
        pytest.param(StubResolver(["127.0.0.1"]), "closed", id="connection-refused"),
    ],
)
async def test_unreachable_upstream_is_a_protocol_error(
    server: LoopbackServer, resolve: Any, port: str | None
) -> None:
    policy = OutboundPolicy(allow_hosts=("127.0.0.1",))
    url = f"http://api.example.com:{closed_port() if port else server.port}/json"
    async with GuardedClient(policy, resolve=resolve) as client:
        with pytest.raises(OutboundProtocolError):
            await client.request_json("GET", url)


# --- secrets stay out of messages and logs ---------------------------------------------------------

SECRET = "sk-very-secret-4d9f"


@pytest.mark.anyio
async def test_header_values_and_query_strings_never_reach_messages_or_logs(
    server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    headers = {"Authorization": f"Bearer {SECRET}", "X-API-KEY-SECRET": SECRET}
    failures: list[OutboundError] = []
    async with GuardedClient(LOOPBACK_POLICY) as client:
        await client.request_json("POST", server.url("/json"), headers=headers, json={"q": 1})
        for path in ("/status?code=500", "/redirect?to=/x", "/raw?body=x", "/drip?interval=0.05"):
            with pytest.raises(OutboundError) as caught:
                await client.request_json(
                    "GET", server.url(f"{path}&key={SECRET}"), headers=headers, timeout_seconds=0.2
                )
            failures.append(caught.value)
        with pytest.raises(OutboundProtocolError) as bad_header:
            await client.request_json(
                "GET", server.url("/json"), headers={"Authorization": f"{SECRET}\r\nX: y"}
            )
        failures.append(bad_header.value)
    assert [type(f) for f in failures] == [
        OutboundHTTPError,
        OutboundRedirect,
        OutboundProtocolError,
        OutboundTimeout,
        OutboundProtocolError,
    ]
    assert all(SECRET not in str(f) and SECRET not in f.target for f in failures)
    assert SECRET not in caplog.text.replace(f"key={SECRET}", "")  # httpx itself logs request URLs
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("ai_search_server")]
    assert ours and not any(SECRET in message for message in ours)


# --- the address rules, as tables ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param("2130706433", "127.0.0.1", id="decimal"),
        pytest.param("0x7f000001", "127.0.0.1", id="hex"),
        pytest.param("0X7F000001", "127.0.0.1", id="hex-upper-case"),
        pytest.param("127.1", "127.0.0.1", id="two-parts"),
        pytest.param("127.0.1", "127.0.0.1", id="three-parts"),
        pytest.param("0177.0.0.1", "127.0.0.1", id="octal-part"),
        pytest.param("0x7f.1", "127.0.0.1", id="hex-part-then-short"),
        pytest.param("017700000001", "127.0.0.1", id="octal-integer"),
        pytest.param("0", "0.0.0.0", id="zero"),
        pytest.param("127.0.0.1.", "127.0.0.1", id="trailing-dot"),
        pytest.param("8.8.8.8", "8.8.8.8", id="plain-dotted"),
        pytest.param("[::1]", "::1", id="bracketed-ipv6"),
        pytest.param("::ffff:127.0.0.1", "::ffff:7f00:1", id="mapped-ipv6-stays-ipv6"),
    ],
)
def test_numeric_hosts_are_normalised_like_browsers_do(host: str, expected: str) -> None:
    assert parse_ip_literal(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize(
    "host",
    ["example.com", "localhost", "1.2.3.foo", "api.example.com.", "xn--bcher-kva.example"],
)
def test_names_are_left_to_the_resolver(host: str) -> None:
    assert parse_ip_literal(host) is None


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("256.0.0.1", id="octet-over-255"),
        pytest.param("1.2.3.4.5", id="five-parts"),
        pytest.param("08.0.0.1", id="bad-octal-digit"),
        pytest.param("foo.123", id="name-ending-in-a-number"),
        pytest.param("4294967296", id="integer-over-32-bits"),
        pytest.param("1.16777216", id="short-form-overflow"),
        pytest.param("::zz", id="bad-ipv6"),
    ],
)
def test_malformed_numeric_hosts_are_refused_not_resolved(host: str) -> None:
    with pytest.raises(OutboundRefused):
        parse_ip_literal(host)


@given(value=st.integers(0, 2**32 - 1), parts=st.integers(1, 4), data=st.data())
@settings(max_examples=300, deadline=None)
def test_any_ipv4_spelling_denotes_the_same_address(value: int, parts: int, data: st.DataObject) -> None:
    octets = value.to_bytes(4, "big")
    numbers = [*octets[: parts - 1], int.from_bytes(octets[parts - 1 :], "big")]
    spell: dict[str, Callable[[int], str]] = {"dec": str, "hex": hex, "oct": lambda n: "0" + format(n, "o")}
    bases = data.draw(st.lists(st.sampled_from(sorted(spell)), min_size=parts, max_size=parts))
    host = ".".join(spell[base](n) for base, n in zip(bases, numbers, strict=True))
    assert parse_ip_literal(host) == ipaddress.IPv4Address(value)


REFUSED_ADDRESSES = [
    ("0.0.0.0", "unspecified", False),
    ("127.0.0.1", "loopback", True),
    ("127.255.255.254", "loopback", True),
    ("10.1.2.3", "private", True),
    ("172.16.0.1", "private", True),
    ("192.168.1.1", "private", True),
    ("100.64.0.1", "CGNAT", True),
    ("100.100.100.200", "metadata", False),
    ("169.254.169.254", "metadata", False),
    ("169.254.1.1", "link-local", False),
    ("192.0.0.192", "IETF", False),
    ("192.0.2.1", "documentation", False),
    ("198.18.0.1", "benchmarking", False),
    ("224.0.0.1", "multicast", False),
    ("240.0.0.1", "reserved", False),
    ("255.255.255.255", "broadcast", False),
    ("::", "unspecified", False),
    ("::1", "loopback", True),
    ("fc00::1", "unique-local", True),
    ("fd12:3456::1", "unique-local", True),
    ("fd00:ec2::254", "metadata", False),
    ("fe80::1", "link-local", False),
    ("fec0::1", "site-local", False),
    ("ff02::1", "multicast", False),
    ("::ffff:127.0.0.1", "loopback (IPv4 in IPv6)", True),
    ("::ffff:169.254.169.254", "metadata (IPv4 in IPv6)", False),
    ("::127.0.0.1", "loopback (IPv4 in IPv6)", True),
    ("64:ff9b::7f00:1", "loopback (IPv4 in IPv6)", True),
    ("64:ff9b::a00:1", "private (IPv4 in IPv6)", True),
    ("64:ff9b:1::1", "NAT64", False),
    ("2002:7f00:1::", "loopback (IPv4 in IPv6)", True),
    ("2001::1", "Teredo", False),
    ("2001:db8::1", "documentation", False),
    ("100::1", "discard", False),
]


@pytest.mark.parametrize(
    ("address", "reason", "private"), [pytest.param(*case, id=case[0]) for case in REFUSED_ADDRESSES]
)
def test_special_addresses_are_classified(address: str, reason: str, private: bool) -> None:
    found = classify_address(ipaddress.ip_address(address))
    assert found is not None
    assert reason in found.reason
    assert found.private is private


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"],
)
def test_public_addresses_pass(address: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("address", "reason", "private"), [pytest.param(*case, id=case[0]) for case in REFUSED_ADDRESSES]
)
def test_allow_private_opens_only_the_private_ranges(address: str, reason: str, private: bool) -> None:
    addresses = [ipaddress.ip_address(address)]
    if private:
        check_addresses("upstream.lan", addresses, OutboundPolicy(allow_private=True))
    else:
        with pytest.raises(OutboundRefused, match=re.escape(reason)):
            check_addresses("upstream.lan", addresses, OutboundPolicy(allow_private=True))


@pytest.mark.parametrize(
    ("allow", "host", "address", "allowed"),
    [
        pytest.param(
            ("ollama.lan",), "OLLAMA.lan.", "10.0.0.5", True, id="host-name-entry-trusts-its-answers"
        ),
        pytest.param(("ollama.lan",), "other.lan", "10.0.0.5", False, id="host-name-entry-is-exact"),
        pytest.param(("10.0.0.0/24",), "x.lan", "10.0.0.5", True, id="cidr-entry-covers-its-addresses"),
        pytest.param(("10.0.0.0/24",), "x.lan", "10.0.1.5", False, id="cidr-entry-stops-at-its-edge"),
        pytest.param(
            ("127.0.0.1",), "x.lan", "::ffff:127.0.0.1", True, id="ipv4-entry-covers-its-mapped-form"
        ),
        pytest.param(("169.254.169.254",), "x", "169.254.169.254", True, id="metadata-opens-only-by-name"),
    ],
)
def test_allow_list_entries(allow: tuple[str, ...], host: str, address: str, allowed: bool) -> None:
    policy = OutboundPolicy(allow_hosts=allow)
    addresses = [ipaddress.ip_address(address)]
    if allowed:
        check_addresses(host, addresses, policy)
    else:
        with pytest.raises(OutboundRefused):
            check_addresses(host, addresses, policy)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"allow_hosts": ("http://ollama.lan",)}, id="a-url-in-the-allow-list"),
        pytest.param({"allow_hosts": ("*.example.com",)}, id="a-wildcard"),
        pytest.param({"allow_hosts": ("ollama.lan:11434",)}, id="a-host-with-port"),
        pytest.param({"allow_hosts": ("",)}, id="an-empty-entry"),
        pytest.param({"total_timeout_seconds": 0}, id="zero-timeout"),
        pytest.param({"total_timeout_seconds": float("inf")}, id="infinite-timeout"),
        pytest.param({"total_timeout_seconds": float("nan")}, id="nan-timeout"),
        pytest.param({"max_response_bytes": 0}, id="zero-byte-cap"),
        pytest.param({"max_response_bytes": True}, id="boolean-byte-cap"),
    ],
)
def test_bad_policies_are_refused_at_start_up(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="outbound"):
        OutboundPolicy(**kwargs)


def test_a_single_string_allow_list_is_one_entry() -> None:
    policy = OutboundPolicy(allow_hosts="localhost")  # type: ignore[arg-type]
    assert policy.allow_hosts == ("localhost",)
    assert policy.host_allowed("LOCALHOST")


def test_public_names_are_exported() -> None:
    assert sorted(outbound.__all__) == sorted(
        name for name in dir(outbound) if not name.startswith("_") and name not in {"annotations"}
    )
