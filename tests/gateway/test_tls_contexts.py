"""The httpx clients' TLS contexts: loopback clients load no CA bundle (httpx would spend ~70 ms of
CPU per client on it) yet trust nothing over TLS; verifying clients share one context."""

from __future__ import annotations

import ssl
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentbox_common.http import plain_http_only, verified_tls
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings


def test_a_plain_http_client_trusts_no_certificate() -> None:
    context = plain_http_only()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.get_ca_certs() == []


def test_verifying_clients_share_one_context_that_trusts_the_bundle() -> None:
    assert verified_tls() is verified_tls()
    assert verified_tls().verify_mode == ssl.CERT_REQUIRED
    assert verified_tls().cert_store_stats()["x509_ca"] > 0


def test_building_the_gateway_loads_no_ca_bundle(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    loads: list[Any] = []
    original = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    (tmp_path / "skills").mkdir()
    build_app(replace(GatewaySettings.from_env({}), skills_path=tmp_path / "skills", browser_proxy_port=0))
    assert loads == []
