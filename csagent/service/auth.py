"""Who is calling: a pluggable authenticator maps a bearer token to an :class:`Identity`.

The service never takes a customer's or agent's id from a request body: it comes from the
authenticator. The demo one (:class:`TokenFileAuthenticator`) reads a JSON file of tokens::

    {"tokens": {"<token>": {"subject": "u1001", "role": "customer", "name": "张伟"}, ...}}

A shop plugs in its own (session cookies, JWTs, an SSO) with ``--authenticator module:factory``:
``factory()`` returns any object with ``authenticate(token: str) -> Identity | None``.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from csagent.errors import UsageError

logger = logging.getLogger(__name__)

Role = Literal["customer", "agent"]
ROLES: tuple[Role, ...] = ("customer", "agent")
DEMO_AUTH_FILE = Path(__file__).with_name("demo_auth.json")


@dataclass(frozen=True)
class Identity:
    """An authenticated caller: a customer (``subject`` = user id) or a human agent."""

    subject: str
    role: Role
    name: str = ""


class Authenticator(Protocol):
    """Maps a bearer token to an identity (None: not authenticated)."""

    def authenticate(self, token: str) -> Identity | None:
        """Return the token's identity, or None."""
        ...


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenFileAuthenticator:
    """Bearer tokens listed in a JSON file (the demo authenticator).

    Tokens are kept as SHA-256 digests and compared in constant time.
    """

    def __init__(self, path: Path = DEMO_AUTH_FILE) -> None:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read the auth file {path}: {exc}") from exc
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, dict) or not tokens:
            raise UsageError(f"auth file {path}: expected {{\"tokens\": {{token: identity}}}}")
        self._identities: list[tuple[bytes, Identity]] = []
        for token, entry in tokens.items():
            role = entry.get("role") if isinstance(entry, dict) else None
            subject = entry.get("subject") if isinstance(entry, dict) else None
            if role not in ROLES or not isinstance(subject, str) or not subject.strip():
                raise UsageError(f"auth file {path}: token entries need a subject and a role "
                                 f"({' or '.join(ROLES)})")
            identity = Identity(subject=subject.strip(), role=role,
                                name=str(entry.get("name") or ""))
            self._identities.append((_digest(str(token)), identity))

    def authenticate(self, token: str) -> Identity | None:
        """Return the identity whose token matches, or None."""
        probe = _digest(token)
        found = None
        for digest, identity in self._identities:  # constant time per entry, no early exit
            if hmac.compare_digest(digest, probe):
                found = identity
        return found


def load_authenticator(spec: str | None, auth_file: Path | None) -> Authenticator:
    """Return the authenticator named by ``spec`` (``module:factory``), else the token file's."""
    if spec:
        module_name, _, attr = spec.partition(":")
        try:
            factory: Any = getattr(importlib.import_module(module_name), attr or "authenticator")
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"cannot load authenticator {spec!r}: {exc}") from exc
        return factory()
    return TokenFileAuthenticator(auth_file or DEMO_AUTH_FILE)
