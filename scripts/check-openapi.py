#!/usr/bin/env python3
"""Checks openapi.yaml: valid OpenAPI 3.1 (openapi-spec-validator), and every example in it valid
against the schema it illustrates (JSON Schema 2020-12 as OpenAPI 3.1 uses it, formats checked):

- `example` / `examples` of a media type (request bodies and responses) against its `schema`;
- `example` / `examples` of a parameter against its `schema`;
- `examples` (a list, JSON Schema's own keyword) inside any schema, against that schema.

A media type of `text/event-stream` describes one event in its `schema` (what schemathesis and
OpenAPI 3.2's `itemSchema` read); its examples are event streams, each event checked with its
`contentSchema` asserted (see openapi_document.py). Prints what it checked; exits 1 on the first list of problems.

usage: scripts/check-openapi.py [openapi.yaml]
"""
import sys

import openapi_spec_validator

from openapi_document import errors_of, event_stream_problems, follow, load


def named_examples(node):
    """(name, value) of an object's `example` and `examples` (the OpenAPI map, not JSON Schema's list)."""
    if "example" in node:
        yield "example", node["example"]
    for name, example in (node.get("examples") or {}).items():
        if isinstance(example, dict) and "value" in example:
            yield name, example["value"]


def walk_schema(schema, where, report):
    """JSON Schema `examples` lists inside a schema (and the schemas below it)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return
        if isinstance(schema.get("examples"), list):
            for index, value in enumerate(schema["examples"]):
                report(f"{where}/examples/{index}", schema, value)
        for key, child in schema.items():
            if key in ("examples", "example", "const", "enum", "default"):
                continue
            walk_schema(child, f"{where}/{key}", report)
    elif isinstance(schema, list):
        for index, child in enumerate(schema):
            walk_schema(child, f"{where}/{index}", report)


def main(argv):
    path = argv[1] if len(argv) > 1 else "openapi.yaml"
    spec = load(path)
    if not str(spec.get("openapi", "")).startswith("3.1"):
        print(f"{path}: not OpenAPI 3.1 ({spec.get('openapi')!r})")
        return 1
    openapi_spec_validator.validate(spec)
    print(f"{path}: valid OpenAPI {spec['openapi']}")

    problems, checked = [], 0

    def report(where, schema, value):
        nonlocal checked
        checked += 1
        problems.extend(f"{where}: {error}" for error in errors_of(spec, schema, value))

    for template, item in spec["paths"].items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or method == "parameters":
                continue
            at = f"{method.upper()} {template}"
            for parameter in list(item.get("parameters", [])) + list(operation.get("parameters", [])):
                parameter = follow(spec, parameter)
                for name, value in named_examples(parameter):
                    report(f"{at} parameter {parameter['name']} {name}", parameter["schema"], value)
            bodies = [("request", follow(spec, operation["requestBody"]))] if "requestBody" in operation else []
            bodies += [(f"response {status}", follow(spec, response)) for status, response in operation.get("responses", {}).items()]
            for label, body in bodies:
                for media, media_object in (body.get("content") or {}).items():
                    for name, value in named_examples(media_object):
                        where = f"{at} {label} {media} {name}"
                        if media.startswith("text/event-stream"):
                            checked += 1
                            problems.extend(event_stream_problems(spec, media_object["schema"], value, where))
                        else:
                            report(where, media_object.get("schema", {}), value)
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        walk_schema(schema, f"#/components/schemas/{name}", report)

    for problem in problems:
        print(problem)
    print(f"{checked} examples checked against their schemas: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
