#!/usr/bin/env bash
# make verify-webhooks: a receiver built on the Standard Webhooks reference library (PyPI
# standardwebhooks, in .build/venv) verifies every delivery of a live `packd serve` (with the
# Natural Earth fixture upstream), before and after a secret rotation. See verify_webhooks.py.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/live-packd.sh
python3 -c "import standardwebhooks" 2>/dev/null || live_fail "standardwebhooks is missing: run this through make verify-webhooks (.build/venv)"
live_packd_start
python3 scripts/verify_webhooks.py "$PACKD_URL" "$PACKD_KEY_FILE" "$STYLE_URL"
