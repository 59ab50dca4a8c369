#!/usr/bin/env python3
"""Checks responses recorded by the Swift tests against openapi.yaml.

The API tests write one JSON object a line (method, target, status, headers, body) to the file
named by PACKD_RECORD_RESPONSES. For each, this finds the operation (method + path template),
and fails when the status is not documented for it (and no `default` covers it), when the
Content-Type is not one the response documents, or when a JSON body does not validate against
the documented schema (JSON Schema 2020-12 as OpenAPI 3.1 uses it, formats checked). A recorded
`text/event-stream` body is checked event by event against its `x-event-schema`.

usage: scripts/check-responses.py [openapi.yaml] recorded.jsonl
"""
import json
import sys
from urllib.parse import urlsplit

import yaml
from jsonschema import FormatChecker
from openapi_schema_validator import OAS31Validator


def load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def lookup(spec, ref):
    node = spec
    for part in ref.lstrip("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def follow(spec, node):
    for _ in range(16):
        if isinstance(node, dict) and set(node) == {"$ref"}:
            node = lookup(spec, node["$ref"])
        elif isinstance(node, dict) and "$ref" in node and "description" in node and len(node) == 2:
            node = lookup(spec, node["$ref"])
        else:
            return node
    return node


def match_operation(spec, method, path):
    """The path template and operation for a concrete path; literal segments beat parameters."""
    parts = [p for p in path.split("/") if p]
    best = None
    for template, item in spec["paths"].items():
        segments = [s for s in template.split("/") if s]
        if len(segments) != len(parts):
            continue
        score = 0
        for segment, part in zip(segments, parts):
            if segment.startswith("{") and segment.endswith("}"):
                continue
            if segment.startswith("{") and "}" in segment:
                # `{source}.json`, `{range}.pbf`: a parameter with a literal suffix.
                if not part.endswith(segment[segment.index("}") + 1:]):
                    break
                continue
            if segment != part:
                break
            score += 1
        else:
            if best is None or score > best[0]:
                best = (score, template, item)
    if best is None:
        return None, None
    item = best[2]
    operation = item.get(method.lower()) or (item.get("get") if method == "HEAD" else None)
    return best[1], operation


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
    if media == "text/event-stream" and "x-event-schema" in media_object:
        return check_events(spec, f"{method} {target} {status}", media_object["x-event-schema"], body)
    # A `*/*` body (a stored resource) is opaque bytes: only documented JSON types are parsed.
    schema = media_object.get("schema")
    if schema is None or not media.endswith("json") or not body:
        return []
    try:
        instance = json.loads(body)
    except ValueError:
        return [f"{method} {template} {status}: body is not JSON"]
    root = {"components": spec["components"], "allOf": [schema]}
    validator = OAS31Validator(root, format_checker=FormatChecker())
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{method} {target} {status}: {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors[:5]]


def check_events(spec, where, schema, body):
    """Each event of a recorded `text/event-stream` (comments skipped) as `{id, event, data}`
    against the stream's `x-event-schema`; ids must increase."""
    root = {"components": spec["components"], "allOf": [schema]}
    validator = OAS31Validator(root, format_checker=FormatChecker())
    problems, last_id = [], None
    for block in body.split("\n\n"):
        fields = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        if not fields:
            continue
        try:
            event = {"id": int(fields.get("id", "")), "event": fields.get("event"), "data": json.loads(fields.get("data", ""))}
        except ValueError:
            problems.append(f"{where}: event is not id/event/JSON data: {block[:200]!r}")
            continue
        if last_id is not None and event["id"] <= last_id:
            problems.append(f"{where}: event id {event['id']} after {last_id}")
        last_id = event["id"]
        for error in sorted(validator.iter_errors(event), key=lambda e: list(e.absolute_path))[:3]:
            problems.append(f"{where}: event {event['id']} {'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}")
    return problems


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
