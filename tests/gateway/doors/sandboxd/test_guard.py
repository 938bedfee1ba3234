"""sandboxd behind the gateway's key: with ``AIO_API_KEY`` set, REST and gRPC calls without it are
refused (401, ``UNAUTHENTICATED``) and run nothing; with it in a header or in the call's metadata
they are served; ``/v1/health`` stays public for the probes. Without a key, a rebound page's
``Host`` and a foreign ``Origin`` are refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from k8s_agent_sandbox.commands._process_stubs import process_pb2 as pb
from k8s_agent_sandbox.commands._process_stubs import process_pb2_grpc

from .conftest import Sandboxd, sandboxd_gateway

KEY = "sandboxd-test-key"
BEARER = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandboxd]:
    root = tmp_path_factory.mktemp("keyed") / "workspace"
    with sandboxd_gateway(root, AIO_API_KEY=KEY) as served:
        yield served


@pytest.fixture(scope="module")
def keyless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandboxd]:
    with sandboxd_gateway(tmp_path_factory.mktemp("keyless") / "workspace") as served:
        yield served


def test_rest_needs_the_key(keyed: Sandboxd) -> None:
    refused = httpx.put(f"{keyed.rest}/v1/files/x.txt", content=b"x")
    assert (refused.status_code, refused.json()["code"]) == (401, "UNAUTHENTICATED")
    assert not (keyed.root / "x.txt").exists()
    assert httpx.get(f"{keyed.rest}/v1/metadata").status_code == 401
    assert httpx.get(f"{keyed.rest}/v1/files/x.txt", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.put(f"{keyed.rest}/v1/files/x.txt", content=b"x", headers=BEARER).status_code == 204
    assert httpx.get(f"{keyed.rest}/v1/files/x.txt", headers={"X-API-Key": KEY}).content == b"x"


def test_health_is_public(keyed: Sandboxd) -> None:
    assert httpx.get(f"{keyed.rest}/v1/health").json()["status"] == "ok"


def test_the_sdk_without_the_key_is_refused(keyed: Sandboxd) -> None:
    with pytest.raises(RuntimeError, match="UNAUTHENTICATED"):
        keyed.commands.run("touch ran")
    assert not (keyed.root / "ran").exists()


def _stub(target: str) -> Any:
    return process_pb2_grpc.ProcessServiceStub(grpc.insecure_channel(target))


def test_grpc_needs_the_key(keyed: Sandboxd) -> None:
    stub = _stub(keyed.grpc_target)
    request = pb.ExecuteRequest(config=pb.ProcessConfig(command=["touch", "ran-too"]))
    for metadata in ((), (("authorization", "Bearer wrong"),)):
        with pytest.raises(grpc.RpcError) as refused:
            stub.Execute(request, metadata=metadata)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as refused_stream:
        next(stub.Start(pb.StartRequest(config=request.config)))
    assert refused_stream.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert not (keyed.root / "ran-too").exists()
    answer = stub.Execute(
        pb.ExecuteRequest(config=pb.ProcessConfig(command=["echo", "ok"])),
        metadata=(("authorization", f"Bearer {KEY}"),),
    )
    assert answer.stdout == b"ok\n"
    stream = stub.Start(
        pb.StartRequest(config=pb.ProcessConfig(command=["echo", "ok"])), metadata=(("x-api-key", KEY),)
    )
    assert [event.WhichOneof("event") for event in stream] == ["init", "stdout", "exit"]


def test_a_foreign_host_is_refused_without_a_key(keyless: Sandboxd) -> None:
    answer = httpx.get(f"{keyless.rest}/v1/files/.", headers={"Host": "evil.example:8092"})
    assert answer.status_code == 421
    assert httpx.get(f"{keyless.rest}/v1/files/.").status_code == 200


def test_a_foreign_origin_is_refused(keyless: Sandboxd, tmp_path: Path) -> None:
    answer = httpx.put(f"{keyless.rest}/v1/files/o.txt", content=b"x", headers={"Origin": "http://evil.example"})
    assert answer.status_code == 403
    assert not (keyless.root / "o.txt").exists()
