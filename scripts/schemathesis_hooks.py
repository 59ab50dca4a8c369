"""schemathesis hooks for `make verify-api` (loaded through SCHEMATHESIS_HOOKS).

- POST /v1/imports takes `application/vnd.sqlite3`, bytes like `application/octet-stream`, for
  which schemathesis has a serializer but none for the SQLite media type.
- POST /v1/packs in the stateful phase: each valid `Idempotency-Key` is made unique. Generated
  keys repeat ("0"), and a repeated key replays the first creation by design — also when that
  pack has since been deleted, as Stripe replays — which stateful testing would read as
  "created, then not found". Replays are proven by the Swift tests and make verify-clients; the
  other phases send keys as generated (changing a case's headers there would also undo the
  coverage phase's requests without Authorization).
- DELETE /v1/webhooks/{id} is not sent for the endpoint verify-api.sh made ($VERIFY_API_WEBHOOK,
  id 1) before the stateful phase: the coverage phase tries ids 1 and 2, and the stateful phase
  reaches that endpoint's deliveries from GET /v1/webhooks. Other endpoints are deleted as generated.
"""
import itertools
import os

import schemathesis

schemathesis.serializer.alias("application/vnd.sqlite3", "application/octet-stream")

_sent = itertools.count(1)


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.label != "POST /v1/packs" or not case.headers:
        return
    if case.meta is None or case.meta.phase.name.value != "stateful":
        return
    key = case.headers.get("Idempotency-Key")
    if isinstance(key, str) and 1 <= len(key) <= 255:
        suffix = f"~{next(_sent)}"
        case.headers["Idempotency-Key"] = key[: 255 - len(suffix)] + suffix


_fixture_webhook = os.environ.get("VERIFY_API_WEBHOOK")


@schemathesis.hook
def filter_case(context, case):
    if _fixture_webhook is None or case.operation.label != "DELETE /v1/webhooks/{id}":
        return True
    # Not in the stateful phase, where the walk may delete it as any endpoint it has seen: a step
    # rejected there throws its whole scenario away, and enough of them end the phase early
    # (Hypothesis stops after too many invalid examples).
    if case.meta is not None and case.meta.phase.name.value == "stateful":
        return True
    try:
        # As packd reads the path: "01" names endpoint 1 too.
        return int(str((case.path_parameters or {}).get("id"))) != int(_fixture_webhook)
    except ValueError:
        return True
