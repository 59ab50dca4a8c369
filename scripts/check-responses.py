#!/usr/bin/env python3
"""Checks responses recorded by the Swift tests against openapi.yaml.

The API tests write one JSON object a line (method, target, status, headers, body) to the file
named by PACKD_RECORD_RESPONSES. For each, this finds the operation (method + path template),
and fails when the status is not documented for it (and no `default` covers it), when the
Content-Type is not one the response documents, or when a JSON body does not validate against
the documented schema (JSON Schema 2020-12 as OpenAPI 3.1 uses it, formats checked). A recorded
`text/event-stream` body is checked event by event against its `schema`, which describes one
event (`data` against its `contentSchema`); ids must increase.

usage: scripts/check-responses.py [openapi.yaml] recorded.jsonl
"""
import json
import sys
from urllib.parse import urlsplit

from openapi_document import errors_of, event_stream_problems, follow, load, match_operation


def check(spec, record):
    method, target, status = record["method"], record["target"], record["status"]
    path = urlsplit(target).path
    template, operation = match_operation(spec, method, path)
    if operation is None:
        # 404/405 for undocumented paths are the router's; nothing else may answer there.
        return [] if status in (404, 405) else [f"no operation for {method} {path}"]
    responses = operation.get("responses", {})
    response = responses.get(str(status)) or responses.get("default")
    if response is None:
        return [f"{method} {template}: status {status} is not documented"]
    response = follow(spec, response)
    content = response.get("content")
    body = record.get("body", "")
    if not content or status in (204, 304) or method == "HEAD":
        return [f"{method} {template} {status}: unexpected body"] if body and status in (204, 304) else []
    full = (record["headers"].get("content-type") or "").lower()
    media = full.split(";")[0].strip()
    documented = {key.split(";")[0].strip().lower(): key for key in content}
    if media not in documented and "*/*" not in content:
        return [f"{method} {template} {status}: Content-Type {media!r} not in {sorted(content)}"]
    media_object = (content.get(documented[media]) or {}) if media in documented else {}
    schema = media_object.get("schema")
    if media == "text/event-stream" and schema is not None:
        # The schema describes one event (`{id, event, data}`, see openapi.yaml's EventStream).
        return event_stream_problems(spec, schema, body, f"{method} {target} {status}")
    # A `*/*` body (a stored resource) is opaque bytes: only documented JSON types are parsed.
    if schema is None or not media.endswith("json") or not body:
        return []
    try:
        instance = json.loads(body)
    except ValueError:
        return [f"{method} {template} {status}: body is not JSON"]
    return [f"{method} {target} {status}: {error}" for error in errors_of(spec, schema, instance)]


def main(argv):
    if len(argv) == 2:
        spec_path, records_path = "openapi.yaml", argv[1]
    elif len(argv) == 3:
        spec_path, records_path = argv[1], argv[2]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    spec = load(spec_path)
    failures, count = [], 0
    with open(records_path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                count += 1
                failures += check(spec, json.loads(line))
    for failure in failures:
        print(failure)
    print(f"{count} responses checked against {spec_path}: {len(failures)} problems")
    if count == 0:
        print("no responses were recorded; run the tests with PACKD_RECORD_RESPONSES set", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
