# packd — build, run and test. `make run` and `make test` work on a fresh Debian/Ubuntu machine
# with Swift installed: the system libraries packd links against are installed when missing.

SWIFT        ?= swift
PACKD_LISTEN ?= 127.0.0.1:8080
PACKD_DB     ?= ./packd.sqlite
SYSTEM_PACKAGES := libuv1-dev libcurl4-openssl-dev libsqlite3-dev libhttp-parser-dev zlib1g-dev libpq-dev postgresql
BENCH_PACKAGES  := nginx wrk curl
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Installs those of the Debian packages $(1) that are missing (apt-get, with sudo when not root).
define install-missing
@missing=""; for p in $(1); do \
  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
done; \
if [ -n "$$missing" ]; then \
  echo "installing:$$missing"; \
  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
fi
endef

.PHONY: deps bench-deps build release run test check-openapi bench bench-server soak verify verify-render clean

## Installs the system libraries that are missing (apt-get, with sudo when not root).
deps:
	$(call install-missing,$(SYSTEM_PACKAGES))

bench-deps: deps
	$(call install-missing,$(BENCH_PACKAGES))

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## Builds a release binary and starts packd on $(PACKD_LISTEN) with $(PACKD_DB).
run: release
	$$($(SWIFT) build -c release --show-bin-path)/packd serve --listen $(PACKD_LISTEN) --database $(PACKD_DB)

## The test command CI runs: system libraries, the OpenAPI document's validity, every test, then
## the responses the API tests recorded checked against openapi.yaml.
test: deps check-openapi
	@python3 -c "import openapi_schema_validator, yaml" 2>/dev/null || python3 -m pip install -q openapi-schema-validator pyyaml
	rm -f .build/responses.jsonl
	PACKD_RECORD_RESPONSES=$(CURDIR)/.build/responses.jsonl $(SWIFT) test
	python3 scripts/check-responses.py openapi.yaml .build/responses.jsonl

## openapi.yaml must be valid OpenAPI 3.1 (openapi-spec-validator from PyPI, installed if missing).
check-openapi:
	@python3 -c "import openapi_spec_validator" 2>/dev/null || python3 -m pip install -q openapi-spec-validator
	python3 -c "import yaml, openapi_spec_validator as v; d = yaml.safe_load(open('openapi.yaml')); assert d['openapi'].startswith('3.1'), 'not OpenAPI 3.1'; v.validate(d); print('openapi.yaml: valid OpenAPI', d['openapi'])"

## Benchmarks against baselines measured in the same run (see Sources/packd-bench).
BENCHMARKS ?= server serve-tiles api geo store export fetch download download-fixture
bench: bench-deps
	$(SWIFT) build -c release
	@bin=$$($(SWIFT) build -c release --show-bin-path); \
	for b in $(BENCHMARKS); do echo "== packd-bench $$b"; "$$bin/packd-bench" $$b || exit 1; done

bench-server: bench-deps
	$(SWIFT) build -c release
	$$($(SWIFT) build -c release --show-bin-path)/packd-bench server

## Checks with other people's readers: GDAL's ogrinfo on an MBTiles export, the pmtiles Python
## package on a PMTiles export (each installed when missing; a missing tool fails, never skips).
verify: deps
	scripts/verify-exports.sh

## A pack rendered offline by real clients: MapLibre Native (PyPI mapli) draws the same pictures
## from packd's style.json with the fixture upstream stopped as from the live upstream, and
## MapLibre GL JS (PyPI maplibre) in headless Chromium loads it with no failed request. Installs
## nginx, chromium and the Python packages when missing; a missing tool fails, never skips.
RENDER_PACKAGES := nginx chromium curl
verify-render: deps
	$(call install-missing,$(RENDER_PACKAGES))
	@python3 -c "import mapli, maplibre, PIL" 2>/dev/null || python3 -m pip install -q mapli maplibre pillow
	$(SWIFT) build
	EGL_PLATFORM=surfaceless scripts/verify-render.sh

## Long end-to-end runs that do not belong in `make test`.
soak: deps
	PACKD_SOAK=1 $(SWIFT) test

clean:
	rm -rf .build
