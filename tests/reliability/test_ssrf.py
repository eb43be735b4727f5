"""D. SSRF: only configured upstreams are contacted, destinations are checked after resolution,
redirects are never followed and rebinding cannot switch the target.

Every test runs under an ``OutboundRecorder``: it records each outbound TCP connect of the process and
refuses any that is not a test upstream on loopback, so a failure here never sends a packet to a
metadata or private address. Nothing else is mocked but DNS (a stub resolver, for names).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest

from ai_search_server.app import create_app
from ai_search_server.mcp import MCP_PATH
from ai_search_server.outbound import (
    GuardedClient,
    IPAddress,
    OutboundError,
    OutboundPolicy,
    OutboundRefused,
    check_addresses,
)
from ai_search_server.store.base import Store
from tests.server._outbound_servers import LoopbackServer
from tests.server.conftest import BASE_URL, Workspace

from ._fakes import OutboundRecorder, RawUpstream
from .conftest import Figure, reliability_settings

MCP_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}
HOSTILE_VALUES = [
    "../../../admin",
    "..%2f..%2fadmin",
    "%2e%2e/%2e%2e/x",
    "http://169.254.169.254/latest/meta-data/",
    "//evil.example/x",
    "@evil.example",
    "#fragment",
    "a\r\nHost: evil.example\r\nX-Injected: 1",
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_FLUSHALL",
    "127.0.0.1:22",
    "[::ffff:169.254.169.254]",
    "\u202e\u0000nul",
]


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[OutboundRecorder]:
    with OutboundRecorder().installed(monkeypatch) as installed:
        yield installed


@pytest.fixture
def upstreams() -> Iterator[tuple[RawUpstream, RawUpstream]]:
    """(pipeline, llm): one raw upstream each; the LLM answers an OpenAI-shaped completion."""
    with RawUpstream() as pipeline, RawUpstream() as llm:
        llm.answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok [1]"}}]}
        yield pipeline, llm


def remote_settings(pipeline_url: str, llm_url: str, **extra: Any) -> Any:
    return reliability_settings(
        pipeline_base_url=pipeline_url,
        pipeline_id="p1",
        pipeline_api_key="k",
        pipeline_api_key_secret="s",
        llm_base_url=f"{llm_url}/v1",
        llm_model="m",
        outbound_allow_hosts=["127.0.0.1"],
        mcp_expose_extended_api=True,
        **extra,
    )


def asgi(app: Any) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL)


def _tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


# -- D1 ---------------------------------------------------------------------------------------------


@pytest.mark.requirement("D1")
@pytest.mark.anyio
async def test_hostile_text_in_any_field_reaches_only_the_configured_upstreams(
    store: Store,
    workspace: Workspace,
    recorder: OutboundRecorder,
    upstreams: tuple[RawUpstream, RawUpstream],
    figure: Figure,
) -> None:
    pipeline, llm = upstreams
    recorder.allow(pipeline.url)
    recorder.allow(llm.url)
    pipeline.answer = {"results": [{"metadata": {"msg_id": workspace.messages["ops-3"].id}}]}
    app = create_app(remote_settings(pipeline.url, llm.url), store, limiter=None)
    alice = workspace["alice"]
    ops = workspace.rooms["ops"].id
    sent = 0
    async with asgi(app) as http:
        for value in HOSTILE_VALUES:
            await http.post(
                "/api/v1/chat.postMessage",
                json={"roomId": ops, "text": f"see {value}"},
                headers=alice.headers,
            )
            for params in (
                {"query": value},
                {"q": f"in:#{value} from:@{value} {value}"},
                {
                    "query": "deploy",
                    "rid": value,
                    "rids": f"{value},{ops}",
                    "roomNames": value,
                    "fromUsernames": value,
                },
                {"query": "deploy", "startDate": value[:40]},
            ):
                await http.get("/api/v1/ai.search", params=params, headers=alice.headers)
                sent += 1
            for body in (
                {"query": value, "messages": [{"_id": workspace.messages["ops-3"].id}]},
                {"query": "x", "messages": [{"_id": value[:60]}]},
            ):
                await http.post("/api/v1/ai.search.answer", json=body, headers=alice.headers)
                sent += 1
            for call in (
                _tool("get_ai_search_by_query", query=value, rid=value),
                _tool("get_ai_search_by_q", q=f"in:#{value} {value}"),
                _tool(
                    "post_ai_search_answer", query=value, messages=[{"_id": workspace.messages["ops-3"].id}]
                ),
                _tool("get_chat_getMessage", msgId=value),
                _tool("get_users_info_by_username", username=value),
            ):
                await http.post(MCP_PATH, json=call, headers={**alice.pat_headers, **MCP_HEADERS})
                sent += 1
    paths = {r.path for r in pipeline.requests} | {r.path for r in llm.requests}
    escapes = paths - {"/pipelines/p1/search", "/v1/chat/completions"}
    injected = [r for r in pipeline.requests + llm.requests if any("injected" in k for k in r.headers)]
    figure(
        tried=sent,
        failed=len(recorder.off_list) + len(escapes) + len(injected),
        hostile_values=len(HOSTILE_VALUES),
        upstream_requests=len(pipeline.requests) + len(llm.requests),
        outbound_off_allow_list=len(recorder.off_list),
        path_escapes=sorted(escapes),
        header_injections=len(injected),
    )
    assert pipeline.requests and llm.requests, "the upstreams were exercised"
    assert recorder.off_list == []
    assert escapes == set()
    assert injected == []


# (An empty entry is dropped by the settings parser, so it is not among them.)
BAD_POLICIES = [
    "*",
    "http://ollama.lan",
    "ollama.lan:11434",
    "a b",
    "-x",
    "10.0.0.0/33",
    "user@host",
    "*.lan",
]
BAD_URLS = [
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_x",
    "http://169.254.169.254/latest",
    "http://[fd00:ec2::254]/v1",
    "http://user:pw@127.0.0.1:1/v1",
    "http://2130706433:1/v1",
    "not a url",
]


@pytest.mark.requirement("D1")
@pytest.mark.anyio
async def test_bad_outbound_configuration_is_refused_and_contacts_nothing(
    store: Store, workspace: Workspace, recorder: OutboundRecorder, figure: Figure
) -> None:
    refused_at_start = 0
    for entry in BAD_POLICIES:
        try:
            create_app(reliability_settings(outbound_allow_hosts=[entry]), store)
        except ValueError:
            refused_at_start += 1
    refused_at_use = 0
    alice = workspace["alice"]
    for url in BAD_URLS:
        try:
            app = create_app(
                reliability_settings(
                    llm_base_url=url,
                    llm_model="m",
                    pipeline_base_url=url,
                    pipeline_id="p",
                    pipeline_api_key="k",
                    pipeline_api_key_secret="s",
                ),
                store,
                limiter=None,
            )
        except ValueError:  # refused at start-up already: nothing can ever call it
            refused_at_use += 1
            continue
        async with asgi(app) as http:
            answer = await http.post(
                "/api/v1/ai.search.answer",
                json={"query": "x", "messages": [{"_id": workspace.messages["ops-3"].id}]},
                headers=alice.headers,
            )
            search = await http.get("/api/v1/ai.search", params={"query": "deploy"}, headers=alice.headers)
        retrieval = search.json()["meta"]["retrieval"]
        if answer.status_code == 502 and retrieval["degraded"] and search.json()["intelligent"] == []:
            refused_at_use += 1
    figure(
        tried=len(BAD_POLICIES) + len(BAD_URLS),
        failed=len(BAD_POLICIES) - refused_at_start + len(BAD_URLS) - refused_at_use + len(recorder.connects),
        bad_policies_refused_at_start=f"{refused_at_start}/{len(BAD_POLICIES)}",
        bad_urls_refused_at_start_or_first_use=f"{refused_at_use}/{len(BAD_URLS)}",
        connects=len(recorder.connects),
    )
    assert refused_at_start == len(BAD_POLICIES)
    assert refused_at_use == len(BAD_URLS)
    assert recorder.connects == []


@pytest.mark.requirement("D1")
@pytest.mark.parametrize("url", BAD_URLS)
def test_start_up_refuses_an_upstream_url_that_can_never_be_used(store: Store, url: str) -> None:
    with pytest.raises(ValueError):
        create_app(reliability_settings(llm_base_url=url, llm_model="m"), store)


# -- D2 ---------------------------------------------------------------------------------------------

# (host as written in a URL, what it denotes). Literals are parsed by the client, names go to DNS.
LITERALS = [
    "127.0.0.1", "127.0.0.1.", "2130706433", "0x7f000001", "0x7f.1", "127.1", "0177.0.0.1", "017700000001",
    "0", "0.0.0.0", "0.1.2.3", "[::1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
    "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[::ffff:169.254.169.254]", "[64:ff9b::a9fe:a9fe]",
    "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "100.100.100.200", "169.254.169.254",
    "169.254.0.1", "192.0.0.8", "192.0.2.1", "198.18.0.1", "198.51.100.1", "203.0.113.1", "224.0.0.1",
    "240.0.0.1", "255.255.255.255", "[fd00:ec2::254]", "[fc00::1]", "[fe80::1]", "[fec0::1]", "[ff02::1]",
    "[2001:db8::1]", "[2001::1]", "[100::1]", "[64:ff9b:1::1]",
]  # fmt: skip
# Addresses a name may resolve to (DNS answers), each refused whatever the name.
RESOLVED = [
    "127.0.0.1", "10.1.2.3", "169.254.169.254", "100.64.0.1", "::1", "::ffff:127.0.0.1", "fd00:ec2::254",
    "fe80::1", "fc00::1", "64:ff9b::7f00:1", "0.0.0.0", "224.0.0.251", "192.168.0.1", "2002:a9fe:a9fe::",
]  # fmt: skip
PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


class StubResolver:
    """DNS seam: answers each name with the addresses of ``answers[name]``; records every question."""

    def __init__(self, answers: Mapping[str, Sequence[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.calls.append(host)
        return [ipaddress.ip_address(a) for a in self.answers[host]]


@pytest.mark.requirement("D2")
@pytest.mark.anyio
async def test_every_non_global_destination_is_refused_after_resolution(
    recorder: OutboundRecorder, figure: Figure
) -> None:
    names = {f"name{n}.example": [address] for n, address in enumerate(RESOLVED)}
    names["mixed.example"] = ["8.8.8.8", "127.0.0.1"]  # one bad answer among good ones refuses the host
    resolver = StubResolver(names)
    let_through: list[str] = []
    async with GuardedClient(OutboundPolicy(), resolve=resolver) as client:
        for host in [*LITERALS, *names]:
            try:
                await client.request_json("GET", f"http://{host}:8080/x")
            except OutboundRefused:
                continue
            except OutboundError:
                pass
            let_through.append(host)
    public_refused = []
    for address in PUBLIC:  # the control: public answers pass the same check
        try:
            check_addresses("public.example", [ipaddress.ip_address(address)], OutboundPolicy())
        except OutboundRefused:
            public_refused.append(address)
    post_resolution = sorted(set(resolver.calls)) == sorted(names)
    figure(
        tried=len(LITERALS) + len(names) + len(PUBLIC),
        failed=len(let_through) + len(public_refused) + len(recorder.connects),
        allowed_but_non_global=len(let_through),
        public_refused=len(public_refused),
        names_checked_after_resolution=f"{len(set(resolver.calls))}/{len(names)}",
        connects=len(recorder.connects),
    )
    assert let_through == []
    assert recorder.connects == []
    assert public_refused == []
    assert post_resolution


# -- D3 ---------------------------------------------------------------------------------------------

# Redirect targets an upstream may name; none may be contacted.
REDIRECTS = [
    "http://169.254.169.254/latest/meta-data/",
    "http://127.0.0.1:1/admin",
    "http://[::ffff:a9fe:a9fe]/",
    "file:///etc/passwd",
    "/relative/on/the/same/upstream",
]


@pytest.mark.requirement("D3")
@pytest.mark.anyio
async def test_redirects_are_never_followed_by_search_nor_answers(
    store: Store,
    workspace: Workspace,
    recorder: OutboundRecorder,
    upstreams: tuple[RawUpstream, RawUpstream],
    figure: Figure,
) -> None:
    pipeline, llm = upstreams
    recorder.allow(pipeline.url)
    recorder.allow(llm.url)
    pipeline.behaviour = llm.behaviour = "redirect"
    app = create_app(remote_settings(pipeline.url, llm.url), store, limiter=None)
    alice = workspace["alice"]
    outcomes = []
    async with asgi(app) as http:
        for location in REDIRECTS:
            pipeline.location = llm.location = location
            search = await http.get("/api/v1/ai.search", params={"query": "deploy"}, headers=alice.headers)
            answer = await http.post(
                "/api/v1/ai.search.answer",
                json={"query": "x", "messages": [{"_id": workspace.messages["ops-3"].id}]},
                headers=alice.headers,
            )
            outcomes.append(
                (search.status_code, search.json()["meta"]["retrieval"]["degraded"], answer.status_code)
            )
    followed = len(recorder.off_list) + sum(
        r.path.startswith("/relative") for r in pipeline.requests + llm.requests
    )
    wrong = [o for o in outcomes if o != (200, True, 502)]
    figure(
        tried=len(REDIRECTS) * 2,
        failed=followed + len(wrong),
        redirects_followed=followed,
        outcomes=sorted(set(map(str, outcomes))),
    )
    assert followed == 0
    assert wrong == []


@pytest.fixture
def rebinding_pair() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    """Two servers on one port: the checked address 127.0.0.2 and the trap 127.0.0.1."""
    for _attempt in range(5):
        checked = LoopbackServer("127.0.0.2").start()
        try:
            trap = LoopbackServer("127.0.0.1", checked.port).start()
        except OSError:
            checked.stop()
            continue
        yield checked, trap
        trap.stop()
        checked.stop()
        return
    pytest.fail("could not bind the same port on 127.0.0.2 and 127.0.0.1")


class RebindingResolver:
    """Answers the allowed address on odd questions and the trap on even ones."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.calls += 1
        return [ipaddress.ip_address("127.0.0.2" if self.calls % 2 else "127.0.0.1")]


REBINDS = 20


@pytest.mark.requirement("D3")
@pytest.mark.anyio
async def test_rebinding_never_reaches_the_second_answer(
    rebinding_pair: tuple[LoopbackServer, LoopbackServer], figure: Figure
) -> None:
    checked, trap = rebinding_pair
    resolver = RebindingResolver()
    refused = answered = 0
    async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.2",)), resolve=resolver) as client:
        for _ in range(REBINDS):
            try:
                response = await client.request_json("GET", checked.url("/json", host="rebind.example"))
            except OutboundRefused:
                refused += 1
            else:
                answered += 1
                assert json.loads(response.body)["headers"]["host"] == f"rebind.example:{checked.port}"
    figure(
        tried=REBINDS,
        failed=trap.connections + trap.requests,
        resolutions=resolver.calls,
        answered_by_the_checked_address=answered,
        refused_rebinds=refused,
        connections_to_the_second_answer=trap.connections,
    )
    assert trap.connections == 0
    assert (answered, refused) == (REBINDS // 2, REBINDS // 2)
    assert resolver.calls == REBINDS, "one resolution per connection: nothing is cached past its check"
