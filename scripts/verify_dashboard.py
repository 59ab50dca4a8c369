#!/usr/bin/python3
"""The dashboard driven in headless Chromium by Selenium (Debian's chromium, chromium-driver and
python3-selenium; run with /usr/bin/python3 so Debian's selenium is found).

usage:
  verify_dashboard.py main URL STYLE_URL UPSTREAM_PID_FILE SHOTS_DIR
      packd without keys and with MapLibre GL JS: `/` redirects to the page; a validation error
      shows at its field; the estimate shows; a pack created through the form (its rectangle
      drawn on the map, its start area clicked on it) says its start area is ready (the
      start_area_ready event) and reaches 100 % from server-sent events; a second pack (only the
      glyphs its labels need) is suspended and resumed, then deleted after a confirmation
      (cancelled once); with the upstream stopped the
      first pack's preview draws from packd's offline style.json (canvas pixels read back); the
      webhooks panel shows an endpoint, pings it, lists its delivery and retries it.
  verify_dashboard.py keyed URL READ_KEY SHOTS_DIR
      packd with API keys and without MapLibre GL JS: the page asks for a key (a wrong one is
      refused), keeps it in sessionStorage only, lists and listens with it, and says maps are off.

  verify_dashboard.py cluster URL_A URL_B STYLE_URL SHOTS_DIR
      two packd nodes on one PostgreSQL, without keys: the Cluster panel (hidden on a SQLite
      file) lists both nodes; while they share a pack it shows each holding units, the held
      units adding up to the leased ones and the pack's units by state; once the pack is
      complete, no pack and no unit under way.

  verify_dashboard.py throttled URL SHOTS_DIR
      packd without keys against an upstream started by this script that answers the first tile
      429 with `Retry-After: 4`: the pack says "Upstream asked us to slow down" with the host
      while paused, the note goes once the download runs again, and the figures show the
      transfers in flight.

Any browser console error fails the run, except the HTTP errors a step provokes on purpose (the
422 of the invalid zooms, the 401 that tells the page to ask for a key), each matched exactly.
Screenshots go to SHOTS_DIR. Prints one line per step; exits non-zero on the first failure.
"""
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


class Failed(Exception):
    pass


def browser():
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--use-angle=swiftshader",
                     "--enable-unsafe-swiftshader", "--window-size=1400,1500", "--disable-gpu-sandbox",
                     "--no-first-run", "--disable-extensions", "--disable-background-networking"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    return driver


class Run:
    def __init__(self, driver, shots):
        self.driver = driver
        self.shots = shots
        self.started = time.monotonic()
        self.allowed = []  # (pattern, reason): console errors a step provoked on purpose
        self.seen_allowed = set()

    def step(self, text):
        print(f"[{time.monotonic() - self.started:6.1f} s] {text}", flush=True)

    def shot(self, name, what):
        path = os.path.join(self.shots, name)
        self.driver.save_screenshot(path)
        self.step(f"screenshot {path}: {what}")

    def wait(self, condition, seconds, what):
        try:
            return WebDriverWait(self.driver, seconds, poll_frequency=0.1).until(lambda _: condition())
        except TimeoutException:
            self.shot("failure.png", f"the page when waiting for: {what}")
            raise Failed(f"timed out after {seconds} s waiting for {what}")

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def find(self, selector, within=None):
        return (within or self.driver).find_element(By.CSS_SELECTOR, selector)

    def finds(self, selector, within=None):
        return (within or self.driver).find_elements(By.CSS_SELECTOR, selector)

    def visible(self, selector):
        return [element for element in self.finds(selector) if element.is_displayed()]

    def type(self, selector, text):
        element = self.find(selector)
        element.clear()
        element.send_keys(text)

    def allow(self, pattern, reason):
        self.allowed.append((re.compile(pattern), reason))

    def check_console(self):
        """Fails on any SEVERE console entry that no step provoked on purpose."""
        unexpected = []
        for entry in self.driver.get_log("browser"):
            if entry["level"] != "SEVERE":
                continue
            for pattern, reason in self.allowed:
                if pattern.search(entry["message"]):
                    self.seen_allowed.add(reason)
                    break
            else:
                unexpected.append(entry["message"])
        if unexpected:
            raise Failed("browser console errors:\n  " + "\n  ".join(unexpected))

    def pack_item(self, name):
        """The list item of the pack called `name`, looked up in one step (the list changes live)."""
        return self.js("""return [...document.querySelectorAll('#packs > li.pack')]
                           .find((li) => li.querySelector('.pack-name').textContent === arguments[0]) || null""", name)

    def pack_state(self, name):
        return self.js("""const li = [...document.querySelectorAll('#packs > li.pack')]
                           .find((li) => li.querySelector('.pack-name').textContent === arguments[0]);
                         return li ? li.dataset.state : null""", name)


def wait_live(run):
    run.wait(lambda: run.find("#live").get_attribute("data-state") == "live", 30, "the event stream to be live")


def main(url, style_url, upstream_pid_file, shots):
    driver = browser()
    run = Run(driver, shots)
    try:
        driver.get(url)
        if not driver.current_url.endswith("/dashboard/"):
            raise Failed(f"GET / did not lead to /dashboard/ but to {driver.current_url}")
        run.step(f"GET / redirected to {driver.current_url}")
        wait_live(run)
        run.wait(lambda: run.find("#region-map").get_attribute("data-state") == "ready", 30, "the region map to load")
        run.step("the event stream is live and the region map is loaded")
        if run.find("#cluster").is_displayed():
            raise Failed("the Cluster panel shows on a SQLite file")

        # The rectangle is drawn on the map: a drag on the canvas fills the bounds fields.
        run.type("#style-url", style_url)
        run.find("#draw").click()
        canvas = run.find("#region-map canvas")
        ActionChains(driver).move_to_element_with_offset(canvas, -60, -40).click_and_hold() \
            .move_by_offset(40, 20).move_by_offset(60, 40).release().perform()
        drawn = [float(run.find(f"#{side}").get_attribute("value")) for side in ["west", "south", "east", "north"]]
        if not (drawn[0] < drawn[2] and drawn[1] < drawn[3]):
            raise Failed(f"drawing did not fill the bounds: {drawn}")
        run.step(f"drew the rectangle {drawn} on the map")
        # A fixed region from here on, so the download's size does not depend on the drag.
        for side, value in zip(["west", "south", "east", "north"], ["-20", "25", "40", "65"]):
            run.type(f"#{side}", value)

        # The start area is a click on the map; the pack downloads only the glyphs its labels need.
        run.find("#pick-start").click()
        ActionChains(driver).move_to_element_with_offset(canvas, 20, -10).click().perform()
        center = [run.find(f"#start-{axis}").get_attribute("value") for axis in ["longitude", "latitude"]]
        if not all(value.strip() for value in center):
            raise Failed(f"clicking the map did not fill the start area: {center}")
        run.step(f"clicked the start area {center} on the map")
        # A fixed start area inside the region, so the download does not depend on the click.
        run.type("#start-longitude", "10")
        run.type("#start-latitude", "47.5")
        run.type("#start-radius", "50000")

        # A validation error first, shown at the field the problem's pointer names.
        run.allow(r"/v1/estimates - Failed to load resource: the server responded with a status of 422",
                  "422 from POST /v1/estimates for min_zoom above max_zoom")
        run.type("#min-zoom", "6")
        run.type("#max-zoom", "2")
        error = run.wait(lambda: (run.visible('.field-error[data-pointer="/region/min_zoom"]') or [None])[0], 20,
                         "the min_zoom error at its field")
        if "above max_zoom" not in error.text:
            raise Failed(f"unexpected field error text: {error.text!r}")
        if run.find("#min-zoom").get_attribute("aria-invalid") != "true" or run.find("#create-button").is_enabled():
            raise Failed("the invalid field is not marked, or Create is enabled")
        run.shot("01-validation-error.png", "min zoom 6 above max zoom 2: the error under Min zoom, Create disabled")

        run.type("#min-zoom", "0")
        run.type("#max-zoom", "4")
        run.type("#name", "verify-dashboard")
        run.wait(lambda: run.find("#estimate").get_attribute("data-state") == "ready", 20, "the estimate")
        estimate = run.find("#estimate").text
        if "tiles" not in estimate or not run.find("#create-button").is_enabled():
            raise Failed(f"no estimate before Create: {estimate!r}")
        if run.visible(".field-error"):
            raise Failed("a field error is still shown after fixing the zooms")
        run.shot("02-estimate.png", "the estimate (tiles per zoom and source) before pressing Create")
        run.step("estimate: " + estimate.splitlines()[0])

        # Create; the bar moves with progress events and reaches 100 %.
        run.find("#create-button").click()
        item = run.wait(lambda: run.pack_item("verify-dashboard"), 20, "the new pack in the list")
        # The start_area_ready event reaches the page (watched while the bar moves).
        percents = set()
        ready_text = None
        screenshot_taken = False
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            item = run.pack_item("verify-dashboard")
            percent = int(item.get_attribute("data-percent") or 0)
            percents.add(percent)
            if ready_text is None and "ready" in item.find_element(By.CSS_SELECTOR, ".update").text:
                ready_text = item.find_element(By.CSS_SELECTOR, ".update").text
                run.step(f"start_area_ready shown at {percent} %: {ready_text}")
            if 20 <= percent <= 90 and not screenshot_taken:
                run.shot("03-downloading.png", f"the first pack downloading at {percent} %, rate and ETA from progress events")
                screenshot_taken = True
            if item.get_attribute("data-state") == "complete" and percent == 100:
                break
            if item.get_attribute("data-state") == "failed":
                raise Failed("the pack failed: " + item.text)
            time.sleep(0.05)
        else:
            raise Failed(f"the pack did not complete: {item.text}")
        if ready_text is None:
            run.wait(lambda: "ready" in run.pack_item("verify-dashboard").find_element(By.CSS_SELECTOR, ".update").text, 20,
                     "the start area shown ready")
            run.step("start_area_ready shown: " + run.pack_item("verify-dashboard").find_element(By.CSS_SELECTOR, ".update").text)
        bar = run.find(".bar", item)
        if bar.get_attribute("value") != bar.get_attribute("max"):
            raise Failed(f"bar at {bar.get_attribute('value')} of {bar.get_attribute('max')}")
        # Progress came from the stream: many values seen, while the page fetched the pack
        # documents only on state changes (no polling).
        requests = run.js("""return performance.getEntriesByType('resource').map((e) => e.name)
                             .filter((n) => /\\/v1\\/packs(\\/\\d+)?(\\?|$)/.test(n)).length""")
        in_between = sorted(p for p in percents if 0 < p < 100)
        if len(in_between) < 3 or requests > 12:
            raise Failed(f"progress did not come from events: values {sorted(percents)}, {requests} pack requests")
        run.step(f"the bar reached 100 % through {len(in_between)} intermediate values {in_between[:12]}… "
                 f"with {requests} pack document requests in all")
        run.shot("04-complete.png", "the first pack complete: 100 %, exports offered, its region outlined on the map")

        # Exports are linked in the three formats (archives per tile source) and answer.
        run.wait(lambda: len(run.finds(".exports a[data-format]", item)) == 5, 10, "the export links")
        for link in run.finds(".exports a[data-format]", item):
            status = run.js("return fetch(arguments[0], {method: 'HEAD'}).then((r) => r.status)", link.get_attribute("href"))
            if status != 200:
                raise Failed(f"export link {link.text} answered {status}")
        run.step("export links answer 200: " + ", ".join(link.text for link in run.finds(".exports a[data-format]", item)))
        run.find('button[data-action="check-update"]', item).click()
        run.wait(lambda: "upstream is unchanged" in run.find(".action-result", item).text, 30, "check-update's answer")
        run.step("check-update: " + run.find(".action-result", item).text)

        # Suspend and resume a second, larger pack while it downloads; delete it after a confirmation.
        run.type("#name", "suspend-me")
        run.type("#west", "-180")
        run.type("#south", "-85")
        run.type("#east", "180")
        run.type("#north", "85")
        run.type("#max-zoom", "6")
        # This one downloads only the glyphs its labels need (the checkbox reaches the region).
        run.find("#region-glyphs").click()
        run.wait(lambda: run.find("#estimate").get_attribute("data-state") == "ready"
                 and run.find("#create-button").is_enabled(), 20, "the second estimate")
        run.find("#create-button").click()
        run.wait(lambda: run.pack_state("suspend-me") in ("active", "queued"), 20, "the second pack downloading")
        glyphs = run.js("""return fetch('/v1/packs').then((r) => r.json())
                           .then((list) => list.packs.filter((p) => p.name === 'suspend-me').map((p) => p.region.glyphs))""")
        if glyphs != ["region"]:
            raise Failed(f"the only-needed-glyphs checkbox did not reach the region: {glyphs}")
        run.step("only the needed glyphs: the second pack's region says glyphs: region")
        second = run.pack_item("suspend-me")
        run.find('button[data-action="suspend"]', second).click()
        run.wait(lambda: run.pack_state("suspend-me") == "inactive", 20, "the second pack suspended")
        second = run.pack_item("suspend-me")
        if run.find('button[data-action="suspend"]', second).is_displayed() or not run.find('button[data-action="resume"]', second).is_displayed():
            raise Failed("a suspended pack must offer Resume, not Suspend")
        run.shot("05-suspended.png", "the second pack suspended part-way: Resume offered")
        run.find('button[data-action="resume"]', second).click()
        run.wait(lambda: run.pack_state("suspend-me") in ("queued", "active", "complete"), 20, "the second pack resumed")
        run.step(f"suspended, then resumed: {run.pack_state('suspend-me')}")

        second = run.pack_item("suspend-me")
        run.find('button[data-action="delete"]', second).click()
        run.wait(lambda: run.find("#confirm-dialog").get_attribute("open") is not None, 10, "the delete confirmation")
        run.shot("06-confirm-delete.png", "the confirmation asked before deleting")
        run.find('#confirm-dialog button[value="cancel"]').click()
        run.wait(lambda: run.find("#confirm-dialog").get_attribute("open") is None
                 and run.find('button[data-action="delete"]', run.pack_item("suspend-me")).is_enabled(), 10,
                 "the cancelled confirmation to close")
        if run.pack_item("suspend-me") is None:
            raise Failed("cancelling the confirmation deleted the pack")
        run.find('button[data-action="delete"]', run.pack_item("suspend-me")).click()
        run.wait(lambda: run.find("#confirm-dialog").get_attribute("open") is not None, 10, "the delete confirmation")
        run.find("#confirm-button").click()
        run.wait(lambda: run.pack_item("suspend-me") is None, 20, "the deleted pack to leave the list")
        run.step("delete: cancelled once (pack kept), confirmed once (pack gone)")

        # A pack whose tiles fail (HTTP 500, retried): its error and the failed resources are shown.
        run.find('input[name="source-kind"][value="tiles"]').click()
        run.type("#tiles", style_url.replace("/style.json", "/status/500?z={z}&x={x}&y={y}"))
        run.type("#max-zoom", "1")
        run.type("#name", "failing")
        run.wait(lambda: run.find("#estimate").get_attribute("data-state") == "ready"
                 and run.find("#create-button").is_enabled(), 20, "the tile template's estimate")
        run.find("#create-button").click()
        run.wait(lambda: run.pack_state("failing") == "failed", 90, "the failing pack to fail")
        failing = run.pack_item("failing")
        error_text = run.find(".pack-error", failing).text
        if "resources_failed" not in error_text:
            raise Failed(f"the pack's error is not shown: {error_text!r}")
        run.find(".failures summary", failing).click()
        run.wait(lambda: any("HTTP 500" in entry.text for entry in run.finds(".failure-list li", run.pack_item("failing"))),
                 20, "the failed resources list")
        run.step(f"failed pack shows: {error_text!r}; failed resources: "
                 f"{run.finds('.failure-list li', run.pack_item('failing'))[0].text!r}")
        run.shot("07-failed.png", "a pack whose tiles the upstream fails (500): its error and the failed resources")

        # Preview the complete pack with the upstream stopped: packd's offline style.json only.
        with open(upstream_pid_file) as handle:
            os.kill(int(handle.read().strip()), signal.SIGTERM)
        run.step("stopped the upstream")
        run.find('button[data-action="preview"]', run.pack_item("verify-dashboard")).click()
        run.wait(lambda: run.find("#preview-map").get_attribute("data-state") in ("drawn", "failed"), 120, "the preview to draw")
        if run.find("#preview-map").get_attribute("data-state") != "drawn":
            raise Failed("the preview failed: " + run.find("#preview-status").text)
        colours = run.js("""
            const canvas = document.querySelector('#preview-map canvas');
            const copy = document.createElement('canvas');
            copy.width = canvas.width; copy.height = canvas.height;
            const context = copy.getContext('2d');
            context.drawImage(canvas, 0, 0);
            const pixels = context.getImageData(0, 0, copy.width, copy.height).data;
            const counts = new Map();
            for (let i = 0; i < pixels.length; i += 4 * 7) {
              const key = (pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2];
              counts.set(key, (counts.get(key) || 0) + 1);
            }
            const samples = pixels.length / 28;
            const top = Math.max(...counts.values());
            return {colours: counts.size, dominant: top / samples, width: copy.width, height: copy.height};""")
        if colours["colours"] < 50 or colours["dominant"] > 0.9:
            raise Failed(f"the preview looks blank: {colours}")
        run.step(f"preview drew {colours['width']}x{colours['height']} px with {colours['colours']} colours "
                 f"(most common {colours['dominant']:.0%} of the samples)")
        run.shot("08-preview.png", "the complete pack rendered by MapLibre GL JS from packd's offline style.json, upstream stopped")
        run.find("#preview-close").click()

        webhooks(run, url)

        run.check_console()
        expected = {"422 from POST /v1/estimates for min_zoom above max_zoom"}
        if run.seen_allowed != expected:
            raise Failed(f"the provoked console errors were not seen as expected: {run.seen_allowed}")
        run.step("no console errors besides the provoked 422")
    finally:
        driver.quit()


def webhooks(run, url):
    """The webhooks panel: an endpoint (to a closed loopback port: its deliveries fail and wait)
    shown on request, pinged, its deliveries listed, one retried."""
    api = url.split("/dashboard/")[0].rstrip("/")
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    closed_port = receiver.server_address[1]
    receiver.server_close()
    request = urllib.request.Request(api + "/v1/webhooks", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"url": f"http://127.0.0.1:{closed_port}/hook", "events": ["*"],
                                                      "description": "verify-dashboard"}).encode())
    with urllib.request.urlopen(request, timeout=30) as answer:
        endpoint = json.loads(answer.read())
    run.find("#webhooks-show").click()
    item = f'#webhooks li[data-webhook="{endpoint["id"]}"]'
    run.wait(lambda: run.visible(item), 20, "the webhook in the panel")
    run.find(item + ' button[data-action="ping"]').click()
    run.wait(lambda: "Ping queued" in run.find(item + " .action-result").text, 20, "the ping queued")
    run.wait(lambda: len(run.finds(item + " table.deliveries tr[data-delivery]")) >= 1, 30, "the ping's delivery listed")
    run.find(item + ' button[data-action="retry"]').click()
    run.wait(lambda: "due again" in run.find(item + " .action-result").text, 20, "the retry accepted")
    run.shot("08b-webhooks.png", "the webhooks panel: an endpoint, its ping delivery (failing: nothing listens) and a retry")
    run.step("webhooks panel: endpoint shown, pinged, its delivery listed and retried")


def keyed(url, key, shots):
    driver = browser()
    run = Run(driver, shots)
    try:
        run.allow(r"/v1/storage - Failed to load resource: the server responded with a status of 401",
                  "401 from GET /v1/storage without or with a wrong key")
        driver.get(url)
        run.wait(lambda: run.find("#key-dialog").get_attribute("open") is not None, 20, "the API key dialog")
        run.shot("09-key-dialog.png", "packd has keys: the page asks for one")
        run.type("#api-key", "wrong-key-0123456789abcdef")
        run.find('#key-form button[type="submit"]').click()
        run.wait(lambda: run.find("#key-dialog").get_attribute("open") is not None and run.find("#key-error").is_displayed(),
                 20, "the wrong key refused")
        run.step("a wrong key is refused: " + run.find("#key-error").text)
        run.type("#api-key", key)
        run.find('#key-form button[type="submit"]').click()
        wait_live(run)
        stored = run.js("return [sessionStorage.getItem('packd.api-key'), localStorage.length, document.cookie]")
        if stored != [key, 0, ""]:
            raise Failed(f"the key must live in sessionStorage only: {stored}")
        run.wait(lambda: run.find("#storage [data-figure=packs]").is_displayed(), 10, "the storage figures")
        note = run.find("#map-note").text
        if "Maps are off" not in note or run.find("#region-map").is_displayed():
            raise Failed(f"without MapLibre GL JS the page must say maps are off: {note!r}")
        run.shot("10-keyed-no-maps.png", "signed in with a read key, live events via access_token, no map library installed")
        run.step("the key is kept in sessionStorage only; events are live with it; maps are off")
        run.check_console()
        if run.seen_allowed != {"401 from GET /v1/storage without or with a wrong key"}:
            raise Failed(f"expected the 401 that asks for a key: {run.seen_allowed}")
        run.step("no console errors besides the 401s that asked for the key")
    finally:
        driver.quit()


class PausingUpstream(BaseHTTPRequestHandler):
    """A vector tile server whose first tile request is answered 429 `Retry-After: 4`; every
    other tile after 30 ms (so the download outlasts a look at it)."""
    lock = threading.Lock()
    paused = False

    def do_GET(self):
        base = f"http://127.0.0.1:{self.server.server_port}"
        if self.path == "/style.json":
            body = json.dumps({"version": 8, "sources": {"v": {"type": "vector", "url": base + "/tiles.json"}},
                               "layers": [{"id": "l", "type": "fill", "source": "v", "source-layer": "x"}]})
            return self.answer(200, body.encode())
        if self.path == "/tiles.json":
            body = json.dumps({"tilejson": "3.0.0", "tiles": [base + "/tiles/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 14})
            return self.answer(200, body.encode())
        if self.path.startswith("/tiles/"):
            with PausingUpstream.lock:
                first = not PausingUpstream.paused
                PausingUpstream.paused = True
            if first:
                return self.answer(429, b"", [("Retry-After", "4")])
            time.sleep(0.03)
            return self.answer(200, self.path.encode() * 8)
        self.answer(404, b"")

    def answer(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def throttled(url, shots):
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), PausingUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{upstream.server_port}"
    driver = browser()
    run = Run(driver, shots)
    try:
        driver.get(url + "dashboard/")
        wait_live(run)
        region = {"style_url": f"http://{host}/style.json", "bounds": [-20, -20, 20, 20], "min_zoom": 0, "max_zoom": 7}
        request = urllib.request.Request(url + "v1/packs", method="POST", headers={"Content-Type": "application/json"},
                                         data=json.dumps({"name": "throttled", "region": region}).encode())
        with urllib.request.urlopen(request, timeout=30) as response:
            if response.status != 201:
                raise Failed(f"creating the pack answered {response.status}")
        run.step(f"created a pack from {host}, whose first tile answers 429 Retry-After: 4")
        note = run.wait(lambda: (lambda li: li and run.find(".throttled", li).is_displayed() and run.find(".throttled", li))(
            run.pack_item("throttled")), 20, "the slow-down note")
        text = note.text
        if "Upstream asked us to slow down" not in text or host not in text or "Retry-After" not in text:
            raise Failed(f"unexpected slow-down note: {text!r}")
        run.shot("11-throttled.png", "a pack paused by its upstream's Retry-After: the note names the host")
        run.step("while paused: " + text)
        run.wait(lambda: not run.find(".throttled", run.pack_item("throttled")).is_displayed()
                 or run.pack_state("throttled") == "complete", 30, "the note to go when the pause is over")
        shown = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and run.pack_state("throttled") != "complete":
            shown.append(run.find(".figures", run.pack_item("throttled")).text)
            if run.find(".throttled", run.pack_item("throttled")).is_displayed() and run.pack_state("throttled") == "active":
                raise Failed("the slow-down note came back: " + run.find(".throttled", run.pack_item("throttled")).text)
            time.sleep(0.05)
        if run.pack_state("throttled") != "complete":
            raise Failed("the pack did not complete after the pause")
        flying = [text for text in shown if re.search(r"[1-9][0-9,]* in flight", text)]
        if not flying:
            raise Failed(f"the figures never showed transfers in flight: {shown[-3:]}")
        run.step("after the pause the note went; figures showed e.g. " + flying[len(flying) // 2])
        final = run.find(".figures", run.pack_item("throttled")).text
        if "in flight" in final or run.find(".throttled", run.pack_item("throttled")).is_displayed():
            raise Failed(f"a complete pack shows transfers or a slow-down: {final!r}")
        run.check_console()
        run.step("complete: no transfers shown, no slow-down note, no console errors")
    finally:
        driver.quit()
        upstream.shutdown()


def api(url, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def cluster(url_a, url_b, style_url, shots):
    driver = browser()
    run = Run(driver, shots)
    addresses = {re.sub(r"^https?://([^/]+)/?$", r"\1", u) for u in (url_a, url_b)}
    try:
        driver.get(url_a)
        wait_live(run)
        run.wait(lambda: run.find("#cluster").is_displayed(), 30, "the Cluster panel")
        listed = lambda: {cell.text for cell in run.finds('#cluster-nodes td[data-field="listen"]')}
        run.wait(lambda: listed() == addresses, 30, f"both nodes listed ({addresses})")
        run.step(f"the Cluster panel lists both nodes: {sorted(listed())}")
        pack = api(url_a, "POST", "v1/packs", {"name": "shared", "region": {
            "style_url": style_url, "bounds": [-20, 25, 40, 65], "min_zoom": 0, "max_zoom": 6}})
        seen = {}

        def both_working():
            # One read of the panel as it is now: every node's held units, the summary, the pack.
            view = run.js("""
                const held = [...document.querySelectorAll('#cluster-nodes td[data-field="units-held"]')]
                    .map((cell) => Number(cell.textContent.replace(/,/g, '')));
                return {held, summary: document.querySelector('#cluster-summary').textContent,
                        packs: [...document.querySelectorAll('#cluster-packs > li')].map((li) => li.textContent)};""")
            leased = int(re.search(r"([0-9,]+) leased", view["summary"]).group(1).replace(",", ""))
            if sum(view["held"]) != leased:
                raise Failed(f"the panel's held units {view['held']} do not add up to {leased} leased: {view}")
            seen.update(view)
            return len(view["held"]) == 2 and all(count >= 1 for count in view["held"]) and len(view["packs"]) == 1
        run.wait(both_working, 120, "both nodes holding units of the shared pack")
        if "shared" not in seen["packs"][0]:
            raise Failed(f"the pack is not named in the panel: {seen['packs']}")
        run.shot("cluster-working.png", "two nodes sharing a pack: each holding units, the pack's units by state")
        run.step(f"both nodes working: held {seen['held']}; {seen['summary']}; {seen['packs'][0]}")
        run.wait(lambda: api(url_b, "GET", f"v1/packs/{pack['id']}")["state"] == "complete", 240, "the pack to complete")
        run.wait(lambda: not run.finds("#cluster-packs > li") and " 0 leased" in run.find("#cluster-summary").text, 30,
                 "the panel to show nothing under way")
        run.shot("cluster-done.png", "the pack complete: no pack, no unit under way")
        run.check_console()
        run.step("complete: the panel shows nothing under way; no console errors")
    finally:
        driver.quit()


if __name__ == "__main__":
    try:
        if len(sys.argv) == 6 and sys.argv[1] == "main":
            main(*sys.argv[2:])
        elif len(sys.argv) == 5 and sys.argv[1] == "keyed":
            keyed(*sys.argv[2:])
        elif len(sys.argv) == 6 and sys.argv[1] == "cluster":
            cluster(*sys.argv[2:])
        elif len(sys.argv) == 4 and sys.argv[1] == "throttled":
            throttled(*sys.argv[2:])
        else:
            print(__doc__, file=sys.stderr)
            sys.exit(2)
    except Failed as failure:
        print(f"verify-dashboard: FAIL: {failure}", file=sys.stderr)
        sys.exit(1)
