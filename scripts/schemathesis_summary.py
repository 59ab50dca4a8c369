#!/usr/bin/env python3
"""What schemathesis reached (`make verify-api`): reads its VCR cassettes and prints, for every
operation of openapi.yaml, the cases sent per phase and the statuses answered; exits 1 when an
operation was never called, or (with --stateful) when an operation on a pack (`{id}`, the
targets of the document's links) was never called in the stateful phase.

usage: scripts/schemathesis_summary.py openapi.yaml CASSETTE... [--stateful]
"""
import collections
import re
import sys
from urllib.parse import urlsplit

from openapi_document import load, match_operation

METHODS = ("get", "put", "post", "delete", "patch")


def interactions(path):
    """(phase, method, uri, status) of each interaction, read line by line (cassettes are large)."""
    phase = method = uri = None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("- id: "):
                phase = method = uri = None
            elif line.startswith("  phase:"):
                phase = "?"
            elif phase == "?" and line.startswith("    name: "):
                phase = line.split("'")[1]
            elif line.startswith("    uri: '"):
                uri = line[len("    uri: '"):].rstrip("\n")[:-1]
            elif line.startswith("    method: '"):
                method = line.split("'")[1]
            elif (match := re.match(r"^      code: '(\d+)'", line)) and method:
                yield phase, method, uri, int(match.group(1))


def main(argv):
    stateful_required = "--stateful" in argv
    paths = [arg for arg in argv[1:] if arg != "--stateful"]
    spec = load(paths[0])
    documented = [(m.upper(), t) for t, item in spec["paths"].items() for m in item if m in METHODS]
    phases = collections.defaultdict(collections.Counter)
    statuses = collections.defaultdict(collections.Counter)
    total = 0
    for cassette in paths[1:]:
        for phase, method, uri, status in interactions(cassette):
            template, operation = match_operation(spec, method, urlsplit(uri).path)
            if operation is None:
                continue
            total += 1
            label = (method if method != "HEAD" else "GET", template)
            phases[label][phase] += 1
            statuses[label][status] += 1
    missing, unstateful = [], []
    for label in documented:
        seen = phases.get(label)
        shown = " ".join(f"{name}:{count}" for name, count in sorted((seen or {}).items()))
        answered = " ".join(f"{code}x{count}" for code, count in sorted(statuses.get(label, {}).items()))
        print(f"{label[0]:6} {label[1]:48} {shown or '-'}  [{answered}]")
        if not seen:
            missing.append(label)
        elif not seen.get("stateful") and "{id}" in label[1]:
            unstateful.append(label)
    print(f"{total} documented requests over {len(documented)} operations; "
          f"{len(documented) - len(missing)} reached; of the {sum('{id}' in t for _, t in documented)} on a pack, "
          f"{sum('{id}' in t for _, t in documented) - len(unstateful) - sum('{id}' in t for _, t in missing)} in the stateful phase")
    for label in missing:
        print(f"never called: {label[0]} {label[1]}")
    if stateful_required:
        for label in unstateful:
            print(f"never called in the stateful phase: {label[0]} {label[1]}")
    return 1 if missing or (stateful_required and unstateful) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
