#!/usr/bin/env python3
"""Clients generated from openapi.yaml drive a live packd (`make verify-clients`).

scripts/verify-clients.sh generates, into a temporary folder, the package `packd_client` with
openapi-python-client and `models.py` (pydantic v2) with datamodel-codegen, starts packd and the
fixture upstream, and runs this with both on PYTHONPATH. Each step asserts what the API promises
and validates the raw JSON against openapi.yaml too, so a model and the document cannot disagree
silently. Prints one line per step; any failed assertion ends the run with exit 1.

usage: verify_clients.py PACKD_URL KEY_FILE UPSTREAM_URL STYLE_URL OPENAPI_YAML
"""
import base64
import json
import sys
import time

import httpx

import models
from openapi_document import errors_of, load, parse_event_stream
from packd_client import AuthenticatedClient, Client
from packd_client.api.estimates import create_estimate
from packd_client.api.imports import import_database
from packd_client.api.operations import get_health, get_open_api_document
from packd_client.api.packs import (create_pack, delete_pack, export_pack, get_pack, list_pack_errors, list_packs,
                                    update_pack)
from packd_client.api.storage import get_storage
from packd_client.models import (EstimateRequest, Pack, PackCreate, PackList, PackState, PackUpdate, Problem,
                                 StyleBoundsRegion, TilesBoundsRegion)
from packd_client.types import File

EVENT_WAIT_SECONDS = 180


class Check:
    def __init__(self, spec):
        self.spec = spec
        self.steps = 0

    def step(self, text):
        self.steps += 1
        print(f"  ok {self.steps:2}: {text}", flush=True)

    def conforms(self, response, schema_name):
        """The raw body validates against the document's schema, whatever the generated model made of it."""
        errors = errors_of(self.spec, {"$ref": f"#/components/schemas/{schema_name}"}, json.loads(response.content))
        assert not errors, f"{schema_name} body breaks openapi.yaml: {errors}"


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def wait_for_state(http, spec, pack_id, wanted):
    """Follows the pack's event stream until its state is one of `wanted`; every event validated."""
    event_schema = {"$ref": "#/components/schemas/Event"}
    deadline = time.monotonic() + EVENT_WAIT_SECONDS
    seen = 0
    with http.stream("GET", f"/v1/packs/{pack_id}/events", timeout=httpx.Timeout(10, read=30)) as stream:
        expect(stream.status_code == 200, f"events of pack {pack_id}: {stream.status_code}")
        expect(stream.headers["content-type"].startswith("text/event-stream"), stream.headers["content-type"])
        block = []
        for line in stream.iter_lines():
            expect(time.monotonic() < deadline, f"pack {pack_id} did not reach {wanted} in {EVENT_WAIT_SECONDS} s")
            if line:
                block.append(line)
                continue
            for event in parse_event_stream("\n".join(block) + "\n\n"):
                seen += 1
                errors = errors_of(spec, event_schema, event)
                expect(not errors, f"event breaks openapi.yaml's Event: {event} {errors}")
                data = json.loads(event["data"])
                if event["event"] in ("state", "progress") and data["state"] in wanted:
                    return data["state"], seen
            block = []
    raise AssertionError(f"the event stream of pack {pack_id} ended before {wanted}")


def main(argv):
    server, key_file, upstream, style_url, spec_path = argv[1:6]
    spec = load(spec_path)
    check = Check(spec)
    with open(key_file, encoding="utf-8") as handle:
        key = handle.read().strip()
    client = AuthenticatedClient(base_url=server, token=key, timeout=httpx.Timeout(30))
    anonymous = Client(base_url=server, timeout=httpx.Timeout(30))
    http = client.get_httpx_client()

    print("openapi-python-client's packd_client:")
    health = get_health.sync(client=anonymous)
    expect(health is not None and health.status.value == "ok", f"healthz: {health}")
    document = get_open_api_document.sync_detailed(client=anonymous)
    expect(document.status_code == 200 and document.parsed.startswith("openapi: 3.1"), "GET /openapi.yaml")
    check.step("healthz and /openapi.yaml without a key")

    refused = list_packs.sync_detailed(client=anonymous)
    expect(refused.status_code == 401 and isinstance(refused.parsed, Problem), f"no key: {refused.status_code}")
    expect(refused.parsed.type_ == "urn:packd:problem:unauthorized", refused.parsed.type_)
    check.step("a request without a key is 401, parsed as Problem")

    raster = f"{upstream}/raster/{{z}}/{{x}}/{{y}}.png"
    estimate = create_estimate.sync_detailed(client=client, body=EstimateRequest(
        region=TilesBoundsRegion(tiles=[raster], bounds=[-10.0, 35.0, 20.0, 60.0], min_zoom=0, max_zoom=3)))
    expect(estimate.status_code == 200, f"estimate: {estimate.status_code} {estimate.content[:300]!r}")
    check.conforms(estimate, "Estimate")
    parsed = estimate.parsed
    expect(len(parsed.sources) == 1 and parsed.sources[0].source == "tiles", f"sources: {parsed.sources}")
    per_zoom = [zoom.tiles for zoom in parsed.sources[0].zooms]
    expect([zoom.zoom for zoom in parsed.sources[0].zooms] == [0, 1, 2, 3], "zooms 0-3")
    expect(parsed.tiles == sum(per_zoom) and per_zoom[0] == 1, f"tiles {parsed.tiles} per zoom {per_zoom}")
    expect(parsed.exact and parsed.within_tile_limit, "exact and within the limit")
    check.step(f"estimate of a tiles region: {parsed.tiles} tiles over zooms 0-3 ({per_zoom})")

    failing = create_estimate.sync_detailed(client=client, body=EstimateRequest(
        region=StyleBoundsRegion(style_url=f"{upstream}/status/500", bounds=[0.0, 0.0, 1.0, 1.0], max_zoom=2)))
    expect(failing.status_code == 502 and isinstance(failing.parsed, Problem), f"upstream 500: {failing.status_code}")
    expect(failing.parsed.type_ == "urn:packd:problem:upstream-failed" and failing.parsed.upstream_status == 500,
           f"upstream 500: {failing.parsed.to_dict()}")
    expect(failing.parsed.url == f"{upstream}/status/500", f"url: {failing.parsed.url}")
    check.conforms(failing, "Problem")
    refused_host = create_estimate.sync_detailed(client=client, body=EstimateRequest(
        region=StyleBoundsRegion(style_url="http://127.0.0.2:9/style.json", bounds=[0.0, 0.0, 1.0, 1.0], max_zoom=2)))
    expect(refused_host.status_code == 422 and refused_host.parsed.type_ == "urn:packd:problem:host-not-allowed",
           f"127.0.0.2: {refused_host.status_code} {refused_host.content[:300]!r}")
    check.step("estimate: upstream 500 is 502 upstream-failed (url, upstream_status); a refused host 422")

    context = base64.b64encode(b'{"trip": 1}').decode()
    created = create_pack.sync_detailed(client=client, idempotency_key="verify-clients-1", body=PackCreate(
        region=StyleBoundsRegion(style_url=style_url, bounds=[-10.0, 35.0, 20.0, 60.0], min_zoom=0, max_zoom=3),
        name="verify clients style", context=context))
    expect(created.status_code == 201 and isinstance(created.parsed, Pack), f"create: {created.status_code} {created.content[:300]!r}")
    check.conforms(created, "Pack")
    pack = created.parsed
    expect(created.headers["location"] == f"/v1/packs/{pack.id}", created.headers.get("location"))
    expect(isinstance(pack.region, StyleBoundsRegion) and pack.region.style_url == style_url, f"region: {pack.region}")
    expect(pack.context == context and pack.name == "verify clients style", "context and name as posted")
    expect(pack.state in (PackState.QUEUED, PackState.ACTIVE, PackState.COMPLETE), f"state {pack.state}")
    replay = create_pack.sync_detailed(client=client, idempotency_key="verify-clients-1", body=PackCreate(
        region=StyleBoundsRegion(style_url=style_url, bounds=[-10.0, 35.0, 20.0, 60.0], min_zoom=0, max_zoom=3),
        name="verify clients style", context=context))
    expect(replay.status_code == 201 and replay.parsed.id == pack.id, "an idempotent retry returns the first pack")
    expect(replay.headers.get("idempotent-replayed") == "true", "Idempotent-Replayed: true")
    check.step(f"create pack {pack.id} (style region, StyleBoundsRegion back), replayed by Idempotency-Key")

    state, events = wait_for_state(http, spec, pack.id, {"complete", "failed"})
    expect(state == "complete", f"pack {pack.id} ended {state}: {get_pack.sync(pack.id, client=client)}")
    check.step(f"pack {pack.id} complete, followed on its event stream ({events} events, each valid)")

    read = get_pack.sync_detailed(pack.id, client=client)
    expect(read.status_code == 200, f"get: {read.status_code}")
    check.conforms(read, "Pack")
    done = read.parsed
    progress = done.progress
    expect(done.state == PackState.COMPLETE and progress.expected_is_precise, f"{done.state} {progress}")
    expect(progress.completed_resources == progress.expected_resources > progress.completed_tiles > 0,
           f"progress {progress.to_dict()}")
    expect(done.completed_at is not None and done.error is None, "completed_at set, no error")
    not_modified = http.get(f"/v1/packs/{pack.id}", headers={"If-None-Match": read.headers["etag"]})
    expect(not_modified.status_code == 304, f"If-None-Match: {not_modified.status_code}")
    check.step(f"read back: {progress.completed_resources} resources, {progress.completed_tiles} tiles; ETag gives 304")

    def failing_pack(status, name):
        template = f"{upstream}/status/{status}?tile={{z}}/{{x}}/{{y}}"
        made = create_pack.sync_detailed(client=client, body=PackCreate(
            region=TilesBoundsRegion(tiles=[template], bounds=[0.0, 0.0, 1.0, 1.0], min_zoom=0, max_zoom=0), name=name))
        expect(made.status_code == 201, f"create {status} pack: {made.status_code} {made.content[:300]!r}")
        state, _ = wait_for_state(http, spec, made.parsed.id, {"complete", "failed"})
        expect(state == "failed", f"a {status} upstream left pack {made.parsed.id} {state}")
        return get_pack.sync(made.parsed.id, client=client)

    refused_pack = failing_pack(403, "verify clients forbidden")
    error = refused_pack.error
    expect(error.code.value == "upstream_unauthorized" and error.status == 403 and error.url.startswith(f"{upstream}/status/403"),
           f"403 upstream: {error.to_dict()}")
    check.step(f"a 403 upstream fails pack {refused_pack.id}: upstream_unauthorized, status 403, its url")
    broken_pack = failing_pack(500, "verify clients broken")
    expect(broken_pack.error.code.value == "resources_failed" and broken_pack.progress.failed_resources == 1,
           f"500 upstream: {broken_pack.error.to_dict()} {broken_pack.progress.to_dict()}")
    errors = list_pack_errors.sync_detailed(broken_pack.id, client=client)
    check.conforms(errors, "ResourceErrorList")
    listed_error = errors.parsed.errors[0] if errors.parsed.errors else None
    expect(errors.parsed.total == 1 and listed_error.status == 500 and listed_error.attempts > 1,
           f"errors: {errors.parsed.to_dict()}")
    check.step(f"a 500 upstream fails pack {broken_pack.id} (resources_failed); its errors list the 500 after {listed_error.attempts} attempts")

    invalid = create_pack.sync_detailed(client=client, body=PackCreate(
        region=TilesBoundsRegion(tiles=[raster], bounds=[0.0, 0.0, 1.0, 1.0], min_zoom=6, max_zoom=2)))
    expect(invalid.status_code == 422 and isinstance(invalid.parsed, Problem), f"min > max: {invalid.status_code}")
    check.conforms(invalid, "Problem")
    pointers = [item.pointer for item in invalid.parsed.errors]
    expect(any(pointer.startswith("/region/") and "zoom" in pointer for pointer in pointers), f"pointers {pointers}")
    missing = get_pack.sync_detailed(987654321, client=client)
    expect(missing.status_code == 404 and missing.parsed.type_ == "urn:packd:problem:not-found", "unknown id")
    check.step(f"min_zoom > max_zoom is 422 at {pointers}; an unknown id is 404")

    renamed = update_pack.sync_detailed(pack.id, client=client, body=PackUpdate(name="verify clients renamed"))
    expect(renamed.status_code == 200 and renamed.parsed.name == "verify clients renamed", "rename")
    expect(renamed.parsed.context == context, "the context stays")
    listed = list_packs.sync_detailed(client=client, q="RENAMED", state=PackState.COMPLETE)
    check.conforms(listed, "PackList")
    expect([p.id for p in listed.parsed.packs] == [pack.id] and listed.parsed.next_ is None, f"q: {listed.parsed}")
    first = list_packs.sync(client=client, limit=1)
    expect(len(first.packs) == 1 and first.packs[0].id == pack.id and first.next_, f"limit=1: {first}")
    rest = list_packs.sync(client=client, after=first.packs[0].id)
    expect([p.id for p in rest.packs] == [refused_pack.id, broken_pack.id], f"after: {[p.id for p in rest.packs]}")
    check.step("PATCH name; list by q and state; limit=1 pages on with after")

    exported = export_pack.sync_detailed(pack.id, client=client)
    expect(exported.status_code == 200 and isinstance(exported.parsed, File), f"export: {exported.status_code}")
    database = exported.parsed.payload.read()
    expect(database.startswith(b"SQLite format 3\0"), "the export is a SQLite database")
    expect(delete_pack.sync_detailed(pack.id, client=client).status_code == 204, "delete")
    expect(get_pack.sync_detailed(pack.id, client=client).status_code == 404, "gone after delete")
    imported = import_database.sync_detailed(client=client, body=File(payload=database, mime_type="application/vnd.sqlite3"))
    expect(imported.status_code == 200, f"import: {imported.status_code} {imported.content[:300]!r}")
    check.conforms(imported, "ImportResult")
    added = imported.parsed.added
    expect(len(added) == 1 and added[0].state == PackState.INACTIVE and added[0].context == context,
           f"added: {[a.to_dict() for a in added]}")
    expect(added[0].region.to_dict() == renamed.parsed.region.to_dict(),
           f"the region changed on its way through export and import: {added[0].region.to_dict()} != {renamed.parsed.region.to_dict()}")
    expect(added[0].progress.completed_tiles == progress.completed_tiles, f"tiles {added[0].progress.completed_tiles} != {progress.completed_tiles}")
    check.step(f"export ({len(database)} bytes), delete (then 404), import: pack {added[0].id}, same region, context and tiles")

    storage = get_storage.sync_detailed(client=client)
    check.conforms(storage, "Storage")
    expect(storage.parsed.packs == 3 and storage.parsed.bytes_ > 0, f"storage {storage.parsed.to_dict()}")
    check.step(f"storage: {storage.parsed.packs} packs, {storage.parsed.bytes_} bytes")

    print("datamodel-codegen's pydantic models:")
    body = models.PackCreate(
        region=models.Region(models.TilesBoundsRegion(
            tiles=[raster], bounds=(-10, 35, 20, 60), min_zoom=0, max_zoom=2,
            scheme=models.TileScheme.xyz, tile_size=models.TileSize(256))),
        name="verify clients pydantic", start=False)
    sent = http.post("/v1/packs", content=body.model_dump_json(exclude_none=True), headers={"Content-Type": "application/json"})
    expect(sent.status_code == 201, f"pydantic PackCreate: {sent.status_code} {sent.text[:300]}")
    created_model = models.Pack.model_validate_json(sent.content)
    expect(created_model.state == models.PackState.inactive and created_model.name.root == "verify clients pydantic",
           f"{created_model.state} {created_model.name}")
    # Pack.region is a PackRegion: one of Region's shapes, or an imported style region.
    region = created_model.region.root
    if isinstance(region, models.Region):
        region = region.root
    expect(isinstance(region, models.TilesBoundsRegion) and region.tile_size.root == 256,
           f"normalised region: {region!r}")
    check.step(f"a pydantic PackCreate posted; the Pack answer parses (inactive, region {type(region).__name__})")
    page = models.PackList.model_validate_json(http.get("/v1/packs").content)
    expect(len(page.packs) == 4 and page.next is None, f"{len(page.packs)} packs")
    estimate_model = models.Estimate.model_validate_json(estimate.content)
    expect(estimate_model.tiles.root == parsed.tiles, "Estimate parses")
    problem = models.Problem.model_validate_json(failing.content)
    expect(problem.upstream_status == 500 and str(problem.type) == "urn:packd:problem:upstream-failed", f"{problem}")
    storage_model = models.Storage.model_validate_json(storage.content)
    expect(storage_model.packs.root == 3, "Storage parses")
    check.step("PackList, Estimate, Problem and Storage answers parse into the pydantic models")

    print(f"verify-clients: OK ({check.steps} steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
