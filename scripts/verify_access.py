#!/usr/bin/env python3
"""Reference libraries against packd's Access module (make verify-access).

    verify_access.py vectors DIR   regenerate the committed test vectors (Tests/AccessTests/Vectors)
    verify_access.py serve DIR     an identity provider on 127.0.0.1: fresh keys, tokens in DIR/minted.json,
                                   its discovery document and JWKS served until killed
    verify_access.py check DIR     check what packd wrote in DIR/packd.json with the reference libraries

Tokens are minted by PyJWT and jwcrypto (RS256, ES256, EdDSA) and by hand for the attacks no
library will make (an HMAC token keyed with the RSA public key). What packd signs, seals and links
is checked by jwcrypto and `cryptography` (Ed25519, AES-GCM) and by the standard library's hmac:
none of it by packd's own code.
"""
import base64
import hashlib
import hmac
import http.server
import json
import os
import secrets
import sys
import threading
import time
import zlib

import jwt as pyjwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from jwcrypto import jwk as jwcrypto_jwk
from jwcrypto import jws as jwcrypto_jws
from jwcrypto import jwt as jwcrypto_jwt

AUDIENCE = "packd-api"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# -- device links: the whole of what an edge needs to check one (see DeviceLinkSigner.swift) ------

def link_signature(secret: bytes, method: str, path: str, query: dict) -> str:
    signed = "&".join(f"{name}={query[name]}" for name in ("expires", "format", "since") if name in query)
    text = "\n".join(["packd-link-v1", "GET" if method == "HEAD" else method, path, signed])
    return b64url(hmac.new(secret, text.encode(), hashlib.sha256).digest())


def link_is_valid(secret: bytes, method: str, path: str, query: dict, now: int) -> bool:
    expected = link_signature(secret, method, path, query)
    return hmac.compare_digest(expected, query.get("sig", "")) and now <= int(query["expires"])


# -- API keys -----------------------------------------------------------------------------------

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def base62(value: int, width: int) -> str:
    digits = ""
    for _ in range(width):
        value, digit = divmod(value, 62)
        digits = BASE62[digit] + digits
    assert value == 0
    return digits


def api_key_checksum_ok(key: str) -> bool:
    return key.startswith("packd_") and len(key) == 44 and base62(zlib.crc32(key[:38].encode()), 6) == key[38:]


def make_api_key() -> str:
    body = "packd_" + "".join(secrets.choice(BASE62) for _ in range(32))
    return body + base62(zlib.crc32(body.encode()), 6)


# -- sealed secrets -----------------------------------------------------------------------------

def secrets_key_id(key: bytes) -> str:
    return b64url(hashlib.sha256(b"packd-secrets-key-id:" + key).digest())[:8]


def seal(key: bytes, context: str, plaintext: bytes) -> str:
    kid, nonce = secrets_key_id(key), os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, plaintext, f"packd-secret-v1:{kid}:{context}".encode())
    return f"v1:{kid}:{b64url(nonce)}:{b64url(sealed)}"


def open_sealed(key: bytes, context: str, text: str) -> bytes:
    version, kid, nonce, sealed = text.split(":")
    assert version == "v1" and kid == secrets_key_id(key), text
    return AESGCM(key).decrypt(b64url_decode(nonce), b64url_decode(sealed), f"packd-secret-v1:{kid}:{context}".encode())


# -- manifest signatures --------------------------------------------------------------------------

def ed25519_thumbprint(public_raw: bytes) -> str:
    key = jwcrypto_jwk.JWK(kty="OKP", crv="Ed25519", x=b64url(public_raw))
    return key.thumbprint()


def verify_detached(jws_text: str, body: bytes, jwks: dict) -> bool:
    """jwcrypto verifies the compact JWS with the payload put back (RFC 7515 appendix F)."""
    header_part, empty, signature_part = jws_text.split(".")
    assert empty == ""
    header = json.loads(b64url_decode(header_part))
    key = next(k for k in jwks["keys"] if k["kid"] == header["kid"])
    token = jwcrypto_jws.JWS()
    token.deserialize(f"{header_part}.{b64url(body)}.{signature_part}")
    try:
        token.verify(jwcrypto_jwk.JWK(**key), alg="EdDSA")
    except jwcrypto_jws.InvalidJWSSignature:
        return False
    # The same with `cryptography` alone: Ed25519 over BASE64URL(header) '.' BASE64URL(body).
    public = ed25519.Ed25519PublicKey.from_public_bytes(b64url_decode(key["x"]))
    public.verify(b64url_decode(signature_part), f"{header_part}.{b64url(body)}".encode())
    return True


# -- tokens -------------------------------------------------------------------------------------

class Issuer:
    def __init__(self, issuer: str):
        self.issuer = issuer
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.ed = ed25519.Ed25519PrivateKey.generate()
        self.rsa_enc = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.rsa_short = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        self.kids = {}
        keys = []
        for name, key, extra in [("rsa", self.rsa, {"alg": "RS256", "use": "sig"}), ("ec", self.ec, {"alg": "ES256"}),
                                 ("ed", self.ed, {"use": "sig"}), ("rsa-enc", self.rsa_enc, {"use": "enc", "alg": "RSA-OAEP"}),
                                 ("rsa-short", self.rsa_short, {"use": "sig"})]:
            public = jwcrypto_jwk.JWK.from_pyca(key.public_key())
            self.kids[name] = public.thumbprint()
            keys.append(dict(public.export_public(as_dict=True), kid=self.kids[name], **extra))
        keys.append({"kty": "oct", "kid": "symmetric", "k": b64url(os.urandom(32))})
        self.jwks = {"keys": keys}
        self.rsa_public_pem = self.rsa.public_key().public_bytes(serialization.Encoding.PEM,
                                                                 serialization.PublicFormat.SubjectPublicKeyInfo)

    def discovery(self) -> dict:
        return {"issuer": self.issuer, "jwks_uri": self.issuer + "/protocol/openid-connect/certs",
                "id_token_signing_alg_values_supported": ["RS256", "ES256", "EdDSA"]}

    def claims(self, now: int, **changes) -> dict:
        claims = {"iss": self.issuer, "aud": AUDIENCE, "sub": "user-7f3a", "iat": now - 10, "nbf": now - 10,
                  "exp": now + 600, "packd_tenant": "acme", "packd_role": "write"}
        for name, value in changes.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        return claims

    def pyjwt(self, alg: str, key_name: str, claims: dict, headers=None) -> str:
        key = {"rsa": self.rsa, "ec": self.ec, "ed": self.ed, "rsa-enc": self.rsa_enc}[key_name]
        return pyjwt.encode(claims, key, algorithm=alg, headers=dict({"kid": self.kids[key_name]}, **(headers or {})))

    def jwcrypto(self, alg: str, key_name: str, claims: dict) -> str:
        key = jwcrypto_jwk.JWK.from_pyca({"rsa": self.rsa, "ec": self.ec, "ed": self.ed}[key_name])
        token = jwcrypto_jwt.JWT(header={"alg": alg, "kid": self.kids[key_name]}, claims=claims)
        token.make_signed_token(key)
        return token.serialize()

    def hand_made(self, header: dict, claims: dict, sign) -> str:
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        return f"{signing_input}.{b64url(sign(signing_input.encode()))}"

    def cases(self, now: int) -> list:
        c = self.claims
        rsa_kid = self.kids["rsa"]
        cases = [
            ("RS256 by PyJWT", self.pyjwt("RS256", "rsa", c(now)), "ok", "acme", "write"),
            ("ES256 by PyJWT", self.pyjwt("ES256", "ec", c(now)), "ok", "acme", "write"),
            ("EdDSA by PyJWT", self.pyjwt("EdDSA", "ed", c(now)), "ok", "acme", "write"),
            ("RS256 by jwcrypto", self.jwcrypto("RS256", "rsa", c(now, packd_tenant="fleet-eu-2")), "ok", "fleet-eu-2", "write"),
            ("ES256 by jwcrypto", self.jwcrypto("ES256", "ec", c(now, packd_role="admin")), "ok", "acme", "admin"),
            ("EdDSA by jwcrypto", self.jwcrypto("EdDSA", "ed", c(now, packd_role="read")), "ok", "acme", "read"),
            ("aud as an array", self.jwcrypto("RS256", "rsa", c(now, aud=["other", AUDIENCE])), "ok", "acme", "write"),
            ("operator without a tenant", self.pyjwt("EdDSA", "ed", c(now, packd_tenant=None, packd_role="operator")),
             "ok", "default", "operator"),
            ("roles as an array, highest counts", self.pyjwt("ES256", "ec", c(now, packd_role=["viewer", "admin", "read"])),
             "ok", "acme", "admin"),
            ("expired within the skew", self.pyjwt("RS256", "rsa", c(now, exp=now - 30)), "ok", "acme", "write"),
            ("nbf within the skew", self.pyjwt("RS256", "rsa", c(now, nbf=now + 30)), "ok", "acme", "write"),
            # The classic attacks.
            ("alg none (PyJWT)", pyjwt.encode(c(now), None, algorithm="none", headers={"kid": rsa_kid}), "algorithm", None, None),
            ("alg none, capitalised", self.hand_made({"alg": "None", "kid": rsa_kid}, c(now), lambda _: b""), "algorithm", None, None),
            ("HS256 keyed with the RSA public key (PEM)",
             self.hand_made({"alg": "HS256", "kid": rsa_kid, "typ": "JWT"}, c(now),
                            lambda m: hmac.new(self.rsa_public_pem, m, hashlib.sha256).digest()), "algorithm", None, None),
            ("HS512 keyed with the RSA modulus",
             self.hand_made({"alg": "HS512", "kid": rsa_kid}, c(now),
                            lambda m: hmac.new(b64url_decode(self.jwks["keys"][0]["n"]), m, hashlib.sha512).digest()),
             "algorithm", None, None),
            ("PS256", self.pyjwt("PS256", "rsa", c(now)), "algorithm", None, None),
            ("RS384", self.pyjwt("RS384", "rsa", c(now)), "algorithm", None, None),
            ("wrong audience", self.pyjwt("RS256", "rsa", c(now, aud="someone-else")), "audience", None, None),
            ("wrong issuer", self.pyjwt("RS256", "rsa", c(now, iss=self.issuer + "-evil")), "issuer", None, None),
            ("expired", self.pyjwt("ES256", "ec", c(now, exp=now - 61)), "expired", None, None),
            ("not yet valid", self.pyjwt("EdDSA", "ed", c(now, nbf=now + 120)), "not_yet_valid", None, None),
            ("issued in the future", self.pyjwt("RS256", "rsa", c(now, iat=now + 120)), "issued_in_the_future", None, None),
            ("no exp", self.pyjwt("RS256", "rsa", c(now, exp=None)), "missing_claim", None, None),
            ("no tenant", self.pyjwt("RS256", "rsa", c(now, packd_tenant=None)), "missing_claim", None, None),
            ("a tenant that is not a slug", self.pyjwt("RS256", "rsa", c(now, packd_tenant="Acme Inc")), "invalid_claim", None, None),
            ("an unknown role", self.pyjwt("RS256", "rsa", c(now, packd_role="superuser")), "invalid_claim", None, None),
            ("an unknown kid", self.pyjwt("RS256", "rsa", c(now), headers={"kid": "not-a-key-of-the-issuer"}), "unknown_key", None, None),
            ("a key of another use (enc)", self.pyjwt("RS256", "rsa-enc", c(now)), "unknown_key", None, None),
            ("RS256 naming the EC key", self.pyjwt("RS256", "rsa", c(now), headers={"kid": self.kids["ec"]}), "key_mismatch", None, None),
            ("critical header extension", self.pyjwt("RS256", "rsa", c(now), headers={"crit": ["exp"]}), "malformed", None, None),
            ("critical header extension as a string", self.hand_made({"alg": "EdDSA", "kid": self.kids["ed"], "crit": "exp"}, c(now),
                                                                     lambda m: self.ed.sign(m)), "malformed", None, None),
        ]
        good = self.pyjwt("EdDSA", "ed", c(now))
        header, payload, signature = good.split(".")
        flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
        forged_payload = b64url(json.dumps(c(now, packd_role="admin")).encode())
        cases += [
            ("signature altered", f"{header}.{payload}.{flipped}", "signature", None, None),
            ("claims altered (role raised)", f"{header}.{forged_payload}.{signature}", "signature", None, None),
            ("not a JWT", "packd_notajwt", "malformed", None, None),
        ]
        return [{"name": name, "token": token, "expect": expect, "tenant": tenant, "role": role, "sub": "user-7f3a"}
                for name, token, expect, tenant, role in cases]


def write_json(path: str, value) -> None:
    with open(path, "w") as file:
        json.dump(value, file, indent=1, sort_keys=True)
        file.write("\n")


def vectors(directory: str) -> None:
    """The committed vectors `make test` checks with no Python: fixed clock, keys made once."""
    now = 1_767_225_600  # 2026-01-01T00:00:00Z
    issuer = Issuer("https://id.example.com/realms/packd")
    write_json(f"{directory}/tokens.json", {"now": now, "issuer": issuer.issuer, "audience": AUDIENCE,
                                            "jwks": issuer.jwks, "cases": issuer.cases(now)})

    seed = os.urandom(32)
    private = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
    public_raw = private.public_key().public_bytes_raw()
    kid = ed25519_thumbprint(public_raw)
    bodies = ['{"pack":42,"versions":[{"version":3,"url":"/v1/packs/42/versions/3/export?format=pmtiles"}],"name":"Zürich ✓"}', "", "[]"]
    manifests = []
    for body in bodies:
        header_part = b64url(json.dumps({"alg": "EdDSA", "kid": kid}, separators=(",", ":")).encode())
        signature = private.sign(f"{header_part}.{b64url(body.encode())}".encode())
        jws_text = f"{header_part}..{b64url(signature)}"
        jwks = {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": b64url(public_raw), "kid": kid, "use": "sig", "alg": "EdDSA"}]}
        assert verify_detached(jws_text, body.encode(), jwks)
        manifests.append({"body": body, "jws": jws_text})
    write_json(f"{directory}/manifests.json", {"seed": seed.hex(), "public": b64url(public_raw), "kid": kid, "manifests": manifests})

    secret = os.urandom(32)
    links = []
    for path, params, expires in [("/v1/packs/42/updates", {}, now + 3600),
                                  ("/v1/packs/42/versions/3/export", {"format": "pmtiles"}, now + 86_400),
                                  ("/v1/packs/42/versions/3/export", {"format": "mbtiles", "since": "2"}, now + 60),
                                  ("/v1/packs/7/style.json", {}, now)]:
        query = dict(params, expires=str(expires))
        sig = link_signature(secret, "GET", path, query)
        text = "&".join(f"{n}={query[n]}" for n in ("expires", "format", "since") if n in query) + "&sig=" + sig
        links.append({"path": path, "parameters": params, "expires": expires, "query": text})
    write_json(f"{directory}/device_links.json", {"secret": secret.hex(), "links": links})

    key, old_key = os.urandom(32), os.urandom(32)
    sealed = [{"context": context, "plaintext": plaintext.hex(), "sealed": seal(k, context, plaintext), "current": k == key}
              for k, context, plaintext in [(key, "webhook:17:secret", b"whsec_" + os.urandom(24)),
                                            (key, "tenant:acme:link-secret", os.urandom(32)),
                                            (old_key, "upstream:acme:rule:0", b"Bearer sk-upstream-credential"),
                                            (key, "empty", b"")]]
    write_json(f"{directory}/secrets.json", {"key": base64.b64encode(key).decode(), "key_id": secrets_key_id(key),
                                             "old_key": base64.b64encode(old_key).decode(), "old_key_id": secrets_key_id(old_key),
                                             "values": sealed})
    write_json(f"{directory}/api_keys.json", {"keys": [make_api_key() for _ in range(8)]})


def serve(directory: str) -> None:
    """A reference identity provider for the live run: its discovery document and JWKS on an
    ephemeral loopback port, tokens minted for that issuer, and `/stats` counting the JWKS fetches
    (what an unknown-kid flood must keep bounded)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    issuer = Issuer(f"http://127.0.0.1:{server.server_address[1]}/realms/packd")
    counts = {"discovery": 0, "jwks": 0}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            routes = {"/realms/packd/.well-known/openid-configuration": ("discovery", issuer.discovery()),
                      "/realms/packd/protocol/openid-connect/certs": ("jwks", issuer.jwks),
                      "/stats": (None, counts)}
            name, document = routes.get(self.path, (None, None))
            if document is None:
                self.send_error(404)
                return
            if name:
                with lock:
                    counts[name] += 1
            body = json.dumps(document).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    server.RequestHandlerClass = Handler
    now = int(time.time())
    write_json(f"{directory}/minted.json.tmp", {"now": now, "issuer": issuer.issuer, "audience": AUDIENCE,
                                                "jwks": issuer.jwks, "cases": issuer.cases(now)})
    os.rename(f"{directory}/minted.json.tmp", f"{directory}/minted.json")
    server.serve_forever()


def check(directory: str) -> None:
    with open(f"{directory}/packd.json") as file:
        written = json.load(file)
    failures = []

    def expect(condition: bool, what: str) -> None:
        print(("ok      " if condition else "FAILED  ") + what)
        if not condition:
            failures.append(what)

    for manifest in written["manifests"]:
        body = base64.b64decode(manifest["body"])
        expect(verify_detached(manifest["jws"], body, written["jwks"]), f"manifest of {len(body)} bytes verifies (jwcrypto, cryptography)")
        for index in sorted({0, len(body) // 2, len(body) - 1}):
            altered = bytearray(body)
            altered[index] ^= 0x01
            try:
                refused = not verify_detached(manifest["jws"], bytes(altered), written["jwks"])
            except Exception:
                refused = True
            expect(refused, f"manifest with byte {index} changed is refused")
    expect(all(k["kid"] == ed25519_thumbprint(b64url_decode(k["x"])) for k in written["jwks"]["keys"]),
           "every JWKS kid is the key's RFC 7638 thumbprint (jwcrypto)")
    expect(len(written["jwks"]["keys"]) == written["listed_keys"], "the JWKS lists the signing key and the retired one")

    secret = bytes.fromhex(written["link_secret"])
    for link in written["links"]:
        query = dict(pair.split("=", 1) for pair in link["query"].split("&"))
        expect(link_is_valid(secret, "GET", link["path"], query, written["now"]), f"device link {link['path']}?{link['query']} recomputed")
        expect(not link_is_valid(secret, "GET", link["path"].replace("42", "43"), query, written["now"]), "the same link for another pack fails")
        expect(not link_is_valid(secret, "GET", link["path"], query, int(query["expires"]) + 1), "the link after its expiry fails")

    key = base64.b64decode(written["secrets_key"])
    for value in written["sealed"]:
        plaintext = open_sealed(key, value["context"], value["sealed"])
        expect(plaintext == bytes.fromhex(value["plaintext"]), f"sealed {value['context']} opens with AESGCM")

    for api_key in written["api_keys"]:
        expect(api_key_checksum_ok(api_key), f"API key {api_key[:8]}… has a valid CRC-32 checksum")
    expect(len(set(written["api_keys"])) == len(written["api_keys"]), "API keys are all different")

    print(f"{len(failures) == 0 and 'all checks passed' or f'{len(failures)} checks failed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    command, directory = sys.argv[1], sys.argv[2]
    {"vectors": vectors, "serve": serve, "check": check}[command](directory)
