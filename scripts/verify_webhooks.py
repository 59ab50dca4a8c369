"""A webhook receiver built on the Standard Webhooks reference library (PyPI `standardwebhooks`)
checks every delivery of a live `packd serve` (scripts/verify-webhooks.sh starts it with the
Natural Earth fixture upstream): pings, a pack completed and removed, and a secret rotation,
after which each delivery must verify with the new secret AND with the old one (both signatures
are sent during the 24 h overlap). A delivery that does not verify, a missing one, or a body that
is not what the API promised fails the run."""

import json
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

PACKD, KEY, STYLE = sys.argv[1], open(sys.argv[2]).read().strip(), sys.argv[3]
received = []
lock = threading.Lock()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            received.append({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, "path": self.path})
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def api(method, path, body=None, expect=(200,)):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(PACKD + path, data=data, method=method,
                                     headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    if status not in expect:
        sys.exit(f"FAIL: {method} {path} answered {status}: {text[:500]!r}")
    return json.loads(text) if text else None


def wait_for(predicate, what, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        with lock:
            found = [r for r in received if predicate(r)]
        if found:
            return found
        time.sleep(0.05)
    sys.exit(f"FAIL: no delivery {what} within {seconds} s")


def typed(kind):
    return lambda r: json.loads(r["body"]).get("type") == kind


def verify(delivery, secrets):
    for secret in secrets:
        try:
            Webhook(secret).verify(delivery["body"], delivery["headers"])
        except WebhookVerificationError as error:
            sys.exit(f"FAIL: delivery {delivery['headers'].get('webhook-id')} does not verify with a secret: {error}")


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
hook_url = f"http://127.0.0.1:{server.server_address[1]}/hooks/packd?source=verify"

endpoint = api("POST", "/v1/webhooks", {"url": hook_url, "events": ["*"], "description": "make verify-webhooks"}, expect=(201,))
first_secret = endpoint["secret"]
assert first_secret.startswith("whsec_"), endpoint
assert "secret" not in api("GET", f"/v1/webhooks/{endpoint['id']}"), "the secret is shown once"
refused = api("POST", "/v1/webhooks", {"url": "http://169.254.169.254/latest", "events": ["*"]}, expect=(422,))
assert refused["errors"][0]["pointer"] == "/url", refused

api("POST", f"/v1/webhooks/{endpoint['id']}/ping", expect=(202,))
ping = wait_for(typed("webhook.ping"), "of webhook.ping")[0]
verify(ping, [first_secret])
tampered = dict(ping, body=ping["body"].replace(b"webhook_id", b"webhook_ID"))
try:
    Webhook(first_secret).verify(tampered["body"], tampered["headers"])
    sys.exit("FAIL: a tampered body verified: the receiver proves nothing")
except WebhookVerificationError:
    pass

pack = api("POST", "/v1/packs", {"region": {"style_url": STYLE, "bounds": [-10, 35, 20, 60], "min_zoom": 0, "max_zoom": 2},
                                 "name": "verify-webhooks"}, expect=(201,))
completed = wait_for(lambda r: typed("pack.completed")(r) and json.loads(r["body"])["data"]["id"] == pack["id"], "of pack.completed")[0]
verify(completed, [first_secret])
document = json.loads(completed["body"])
assert document["data"]["state"] == "complete" and document["data"]["progress"]["completed_resources"] > 0, document
assert document["timestamp"].endswith("Z"), document

rotated = api("POST", f"/v1/webhooks/{endpoint['id']}/secret")
second_secret = rotated["secret"]
assert second_secret != first_secret and rotated["previous_secret_expires_at"], rotated
api("POST", f"/v1/webhooks/{endpoint['id']}/ping", expect=(202,))
api("DELETE", f"/v1/packs/{pack['id']}", expect=(204,))
removed = wait_for(typed("pack.removed"), "of pack.removed")[0]
pings = wait_for(lambda r: typed("webhook.ping")(r) and r is not ping, "of the second ping")
for delivery in [removed] + pings:
    # During the overlap both signatures go out: each secret alone verifies the delivery.
    verify(delivery, [second_secret, first_secret])
    if len(delivery["headers"]["webhook-signature"].split(" ")) != 2:
        sys.exit("FAIL: a delivery after the rotation does not carry two signatures")

with lock:
    everything = list(received)
ids = {}
for delivery in everything:
    ids.setdefault(delivery["headers"]["webhook-id"], []).append(delivery)
deliveries = api("GET", f"/v1/webhooks/{endpoint['id']}/deliveries")["deliveries"]
delivered = {d["event_id"] for d in deliveries if d["state"] == "delivered"}
missing = delivered - set(ids)
if missing:
    sys.exit(f"FAIL: packd lists deliveries the receiver never got: {sorted(missing)}")
print(f"verify-webhooks: {len(everything)} deliveries ({len(ids)} webhook-ids: "
      + ", ".join(sorted({json.loads(d['body'])['type'] for d in everything}))
      + ") verified by standardwebhooks, before and after a secret rotation (old and new secrets both verify)")
