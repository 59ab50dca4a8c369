#!/usr/bin/env bash
# make verify-access: reference JOSE and crypto libraries against packd's Access module, both ways.
#  1. scripts/verify_access.py serve: an identity provider on 127.0.0.1 with fresh RSA, EC and
#     Ed25519 keys, tokens minted by PyJWT and jwcrypto (and the classic attacks, by hand);
#  2. AccessTests' ReferenceInteropTests authenticate each through OIDCAuthenticator (discovery,
#     JWKS, jwt-kit), flood it with unknown kids, and write what packd signs, links and seals;
#  3. scripts/verify_access.py check: jwcrypto and `cryptography` verify the manifest JWS (and
#     refuse it with a byte changed), hmac recomputes the device links, AESGCM opens the sealed
#     secrets, zlib checks the API keys' checksums.
set -euo pipefail
cd "$(dirname "$0")/.."
# Built first, so the identity provider serves while the tests run (they check the tokens at
# the clock they were minted for).
${SWIFT:-swift} build --build-tests
work=$(mktemp -d)
python3 scripts/verify_access.py serve "$work" &
issuer=$!
trap 'kill "$issuer" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 600); do [ -f "$work/minted.json" ] && break; sleep 0.1; done
[ -f "$work/minted.json" ] || { echo "verify-access: the identity provider did not start"; exit 1; }
PACKD_ACCESS_INTEROP_DIR="$work" ${SWIFT:-swift} test --skip-build --filter ReferenceInteropTests
python3 scripts/verify_access.py check "$work"
