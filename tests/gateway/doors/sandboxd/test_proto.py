"""The committed ProcessService modules are what ``scripts/gen-proto`` makes of ``process.proto`` now
(compared as text: importing them here would clash with the SDK's, see conftest)."""

from __future__ import annotations

from pathlib import Path

from grpc_tools import protoc

GATEWAY = Path(__file__).resolve().parents[4] / "services" / "gateway"
PROTO = "agentbox_gateway/doors/sandboxd/process.proto"


def test_generated_modules_are_current(tmp_path: Path) -> None:
    args = ["protoc", f"-I{GATEWAY}", f"-I{Path(protoc.__file__).parent / '_proto'}"]
    args += [f"--python_out={tmp_path}", f"--pyi_out={tmp_path}", f"--grpc_python_out={tmp_path}", PROTO]
    assert protoc.main(args) == 0
    for name in ("process_pb2.py", "process_pb2.pyi", "process_pb2_grpc.py"):
        made = (tmp_path / "agentbox_gateway/doors/sandboxd" / name).read_text()
        committed = (GATEWAY / "agentbox_gateway/doors/sandboxd" / name).read_text()
        assert made == committed, f"{name} is stale: run scripts/gen-proto"
