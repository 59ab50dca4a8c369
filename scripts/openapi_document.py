"""openapi.yaml as the checks read it: loading, `$ref` lookup, validators of its schemas and the
event streams it describes. Shared by check-openapi.py, check-responses.py and verify_clients.py.
"""
import json

import yaml
from jsonschema import FormatChecker, validators
from jsonschema.exceptions import best_match
from openapi_schema_validator import OAS31Validator


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load, refusing a key given twice in one mapping (YAML would keep the last silently:
    two schemas of one name became one, and a request body was described by a response's)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=_UniqueKeyLoader)


def lookup(spec, ref):
    node = spec
    for part in ref.lstrip("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def follow(spec, node):
    """The object a `$ref` (possibly with sibling `description`/`summary`) points to."""
    for _ in range(16):
        if isinstance(node, dict) and "$ref" in node and set(node) <= {"$ref", "description", "summary"}:
            node = lookup(spec, node["$ref"])
        else:
            return node
    return node


def _content_schema(validator, content_schema, instance, schema):
    """`contentSchema` asserted for JSON text (JSON Schema 2020-12 leaves it an annotation)."""
    if not isinstance(instance, str) or "json" not in schema.get("contentMediaType", ""):
        return
    try:
        parsed = json.loads(instance)
    except ValueError as error:
        yield validators.ValidationError(f"not JSON ({error}): {instance[:120]!r}")
        return
    yield from validator.descend(parsed, content_schema)


ContentAssertingValidator = validators.extend(OAS31Validator, {"contentSchema": _content_schema})


def validator_for(spec, schema):
    """A validator of `schema` (formats checked, `contentSchema` asserted) resolving `#/components/…` in spec."""
    root = {"components": spec.get("components", {}), "allOf": [schema]}
    return ContentAssertingValidator(root, format_checker=FormatChecker())


def errors_of(spec, schema, value, most=5):
    """At most `most` problems of `value` against `schema`, each `path: message`."""
    found = sorted(validator_for(spec, schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    # A `oneOf` miss says little by itself: name the problem in the branch that came closest.
    found = [best_match([error]) for error in found[:most]]
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}" for e in found]


def parse_event_stream(text):
    """The events of a `text/event-stream` body as `{id, event, data}` string fields (comments and
    blocks without `data` skipped; several `data` lines joined by newlines), as EventSource reads them."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields, data = {}, []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name in ("id", "event"):
                fields[name] = value
        if data:
            events.append({**fields, "data": "\n".join(data)})
    return events


def event_stream_problems(spec, schema, text, where):
    """Each event of `text` against the per-event `schema`; ids must increase."""
    problems, last_id = [], None
    for event in parse_event_stream(text):
        for error in errors_of(spec, schema, event, most=3):
            problems.append(f"{where}: event {event.get('id')} {event.get('event')}: {error}")
        if event.get("id", "").isdigit():
            if last_id is not None and int(event["id"]) <= last_id:
                problems.append(f"{where}: event id {event['id']} after {last_id}")
            last_id = int(event["id"])
    return problems


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
