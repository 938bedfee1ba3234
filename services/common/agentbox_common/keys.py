"""Keys as the services hold them: the key itself, or only its SHA-256 digest (``sha256:<hex>``).

A service that holds only the digest can check a key it is given but cannot hand the key out: in a pod
where the sandbox user is the service's own user (Kubernetes, non-root), anything the service can read
the sandbox can read too, so the pod gets the digest and the claimant the key (deploy/kubernetes/)."""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path

from .settings import ConfigError

DIGEST_PREFIX = "sha256:"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
#: A key file is one short line; anything longer is not a key file.
MAX_KEY_FILE_BYTES = 4096


def is_digest(stored: str) -> bool:
    return bool(_DIGEST.match(stored))


def digest_of(key: str) -> str:
    """The stored form of ``key`` for a service that should hold only its digest."""
    return DIGEST_PREFIX + hashlib.sha256(key.encode()).hexdigest()


def key_matches(presented: str, stored: str) -> bool:
    """Whether ``presented`` is the key ``stored`` holds (the key, or its digest); constant time."""
    if is_digest(stored):
        return hmac.compare_digest(digest_of(presented), stored)
    return hmac.compare_digest(presented.encode(), stored.encode())


def read_key_file(variable: str, path: Path) -> str:
    """The key (or ``sha256:<hex>`` digest) in the file ``variable`` names, surrounding whitespace removed.
    A missing, unreadable, empty or oversized file is a :class:`ConfigError`: a service told to use a
    key never starts without one."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{variable}: cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_KEY_FILE_BYTES:
        raise ConfigError(f"{variable}: {path} is larger than {MAX_KEY_FILE_BYTES} bytes; it must hold one key")
    try:
        key = raw.decode().strip()
    except UnicodeDecodeError:
        raise ConfigError(f"{variable}: {path} is not UTF-8 text") from None
    if not key or "\n" in key:
        raise ConfigError(f"{variable}: {path} must hold exactly one non-empty line (the key or sha256:<hex>)")
    return key
