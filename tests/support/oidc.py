"""A loopback OpenID Connect provider for tests: discovery document, JWKS, signed tokens.

Keys are generated here (RSA, EC P-256, Ed25519); the provider counts JWKS requests and
can be taken down (it then answers 503) to test the cache.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Literal

import jwt
from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

KeyKind = Literal["RSA", "EC", "Ed25519"]
ALGORITHM_OF: dict[KeyKind, str] = {"RSA": "RS256", "EC": "ES256", "Ed25519": "EdDSA"}
AUDIENCE = "tenant-service"
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


@dataclass
class SigningKey:
    kid: str
    kind: KeyKind
    private: PrivateKey

    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        jwk: dict[str, Any]
        if self.kind == "RSA":
            jwk = RSAAlgorithm.to_jwk(public, as_dict=True)  # type: ignore[arg-type]
        elif self.kind == "EC":
            jwk = ECAlgorithm.to_jwk(public, as_dict=True)  # type: ignore[arg-type]
        else:
            jwk = OKPAlgorithm.to_jwk(public, as_dict=True)  # type: ignore[arg-type]
        return {**jwk, "kid": self.kid, "use": "sig"}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def generate(kind: KeyKind, kid: str) -> SigningKey:
    private: PrivateKey
    if kind == "RSA":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    elif kind == "EC":
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        private = ed25519.Ed25519PrivateKey.generate()
    return SigningKey(kid, kind, private)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_with(secret: bytes, header: dict[str, Any], claims: dict[str, Any]) -> str:
    """An HS256 token signed with any bytes (PyJWT refuses a PEM as an HMAC secret)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(signature)}"


class Provider:
    def __init__(self) -> None:
        self.keys: dict[str, SigningKey] = {}
        self.published: list[str] = []
        self.jwks_hits = 0
        self.discovery_hits = 0
        self.down = False
        self.server: TestServer | None = None

    @property
    def issuer(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("")).rstrip("/")

    @property
    def jwks_url(self) -> str:
        return self.issuer + "/jwks"

    async def start(self) -> Provider:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_get("/jwks", self._jwks)
        self.server = TestServer(app, host="127.0.0.1", port=0)
        await self.server.start_server()
        return self

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    def add(self, kind: KeyKind, kid: str, *, publish: bool = True) -> SigningKey:
        key = generate(kind, kid)
        self.keys[kid] = key
        if publish:
            self.published.append(kid)
        return key

    def claims(self, **claims: Any) -> dict[str, Any]:
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": "alice",
            "iat": now,
            "exp": now + 600,
            **claims,
        }
        return {k: v for k, v in body.items() if v is not None}

    def token(self, kid: str, *, alg: str | None = None, **claims: Any) -> str:
        key = self.keys[kid]
        return jwt.encode(
            self.claims(**claims),
            key.private,
            algorithm=alg or ALGORITHM_OF[key.kind],
            headers={"kid": kid},
        )

    async def _discovery(self, request: web.Request) -> web.Response:
        self.discovery_hits += 1
        if self.down:
            return web.Response(status=503)
        return web.json_response(
            {
                "issuer": self.issuer,
                "jwks_uri": self.jwks_url,
                "id_token_signing_alg_values_supported": ["RS256", "ES256", "EdDSA"],
            }
        )

    async def _jwks(self, request: web.Request) -> web.Response:
        self.jwks_hits += 1
        if self.down:
            return web.Response(status=503)
        return web.json_response({"keys": [self.keys[kid].jwk() for kid in self.published]})


class FakeClock:
    """Stands in for time.monotonic in the JWKS cache, so tests move time on at will."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
