#!/usr/bin/env python3
"""Checks the documentation site that scripts/docs.sh builds, in a real browser (headless Chromium).

    scripts/check_docs_site.py [build/docs/html]

One Chromium, driven over its DevTools pipe (--remote-debugging-pipe: the protocol's JSON
messages, each ended by a NUL byte, on file descriptors 3 and 4), loads every HTML page of the site
in turn, after its scripts have run (Doxygen's menus are written by JavaScript). For each page it
checks that
  - the page loads: no navigation error, its load event within PAGE_TIMEOUT_S, no uncaught
    JavaScript exception;
  - every local href and src of the rendered DOM names a file of the site (not outside it), and a
    `#fragment` into an HTML page names an id (or <a name>) of that page as Chromium rendered it;
and, for each guide (docs/guide/*.md) with fenced code blocks, that its page has at least as many
Doxygen code fragments (div.fragment) as the Markdown has blocks. Last, it writes a 1280x900
screenshot of the landing page to build/docs/landing.png (beside html/) and prints its path.

External links (http, https, mailto) are counted, not followed: the check runs offline.
It prints a summary (pages, links checked, failures, seconds) and exits 1 on any failure, 2 if the
browser cannot be driven. It writes only the screenshot and a temporary Chromium profile (a
mkdtemp directory it removes); the Chromium it starts leads its own process group, which it ends
by that id (Browser.close first, then SIGKILL to the group if the browser outlives it).
"""
import base64
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE_TIMEOUT_S = 30
SCREENSHOT_SIZE = (1280, 900)
MAX_LISTED_FAILURES = 60

# What the page looked like once loaded: every href/src resolved by the browser, every id, the
# number of code fragments.
PAGE_FACTS_JS = """(() => {
  const refs = [];
  for (const e of document.querySelectorAll('[href], [src]')) {
    for (const attr of ['href', 'src']) {
      const raw = e.getAttribute(attr);
      if (raw === null) continue;
      let url = raw;
      try { url = new URL(raw, document.baseURI).href; } catch (_) {}
      refs.push([raw, url]);
    }
  }
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id)
      .concat([...document.querySelectorAll('a[name]')].map(e => e.name));
  return {title: document.title, refs: refs, ids: ids,
          fragments: document.querySelectorAll('div.fragment').length};
})()"""


class BrowserError(Exception):
    pass


class Browser:
    """A headless Chromium and one tab, driven over the DevTools pipe."""

    def __init__(self, chromium, profile_dir):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def put_pipes_on_3_and_4():  # runs in the child, before close_fds keeps 3 and 4 only
            high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)  # out of the way of 3 and 4
            high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        w, h = SCREENSHOT_SIZE
        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                f"--user-data-dir={profile_dir}", f"--window-size={w},{h}", "--hide-scrollbars",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--mute-audio", "about:blank"]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, pass_fds=(3, 4),
                                        preexec_fn=put_pipes_on_3_and_4, start_new_session=True)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events = []
        self._session = None

    def send(self, method, params=None, session=True):
        """Sends a command and returns its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self._session:
            message["sessionId"] = self._session
        try:
            os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        except OSError as e:
            raise BrowserError(f"{method}: cannot write to Chromium ({e})") from e
        deadline = time.monotonic() + PAGE_TIMEOUT_S
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self._events.append(reply)

    def wait_for_event(self, method):
        deadline = time.monotonic() + PAGE_TIMEOUT_S
        while True:
            for i, event in enumerate(self._events):
                if event["method"] == method:
                    return self._events.pop(i)
            self._events.append(self._receive(deadline))

    def take_events(self, method):
        taken = [e for e in self._events if e["method"] == method]
        self._events = [e for e in self._events if e["method"] != method]
        return taken

    def _receive(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise BrowserError(f"no answer from Chromium within {PAGE_TIMEOUT_S} s")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed its pipe (exit status {self.process.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open_tab(self):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self._session = attached["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        w, h = SCREENSHOT_SIZE
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False})

    def load(self, url):
        """Loads url; returns (facts, problems) where problems lists why it did not load cleanly."""
        self.take_events("Page.loadEventFired")
        self.take_events("Runtime.exceptionThrown")
        navigation = self.send("Page.navigate", {"url": url})
        if navigation.get("errorText"):
            return None, [f"navigation failed: {navigation['errorText']}"]
        self.wait_for_event("Page.loadEventFired")
        facts = self.send("Runtime.evaluate", {"expression": PAGE_FACTS_JS, "returnByValue": True})
        problems = [
            "JavaScript exception: " + e["params"]["exceptionDetails"].get("exception", {}).get(
                "description", e["params"]["exceptionDetails"].get("text", "?")).splitlines()[0]
            for e in self.take_events("Runtime.exceptionThrown")
        ]
        return facts["result"]["value"], problems

    def screenshot(self, url, path):
        self.load(url)
        png = self.send("Page.captureScreenshot", {"format": "png"})
        with open(path, "wb") as f:
            f.write(base64.b64decode(png["data"]))

    def close(self):
        """Asks Chromium to quit, then ends its process group (its id is Chromium's PID)."""
        try:
            self._session = None
            os.write(self._to_browser, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # helpers (renderers) that outlived it
        except ProcessLookupError:
            pass
        if self.process.poll() is None:
            self.process.wait(timeout=10)
        os.close(self._to_browser)
        os.close(self._from_browser)


def html_pages(site):
    pages = []
    for root, _, files in os.walk(site):
        pages += [os.path.join(root, f) for f in files if f.endswith(".html")]
    return sorted(pages)


def check_links(site, page, facts, ids_of_page):
    """Returns (links checked, external links, failures) for one page's rendered references."""
    checked, external, failures = 0, 0, []
    for raw, url in facts["refs"]:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme in ("http", "https", "mailto"):
            external += 1
            continue
        if parsed.scheme != "file":  # javascript:, data:, about:
            continue
        checked += 1
        target = os.path.normpath(urllib.parse.unquote(parsed.path))
        where = f"{os.path.relpath(page, site)}: {raw!r}"
        if os.path.commonpath([site, target]) != site:
            failures.append(f"{where} points outside the site ({target})")
        elif not os.path.isfile(target):
            failures.append(f"{where}: no such file {os.path.relpath(target, site)}")
        elif parsed.fragment and target.endswith(".html"):
            fragment = urllib.parse.unquote(parsed.fragment)
            if target in ids_of_page and fragment not in ids_of_page[target]:
                failures.append(f"{where}: no id {fragment!r} in {os.path.relpath(target, site)}")
    return checked, external, failures


def guide_code_blocks():
    """The guides with fenced code blocks: {their page's file name: number of blocks}."""
    counts = {}
    guide_dir = os.path.join(REPO, "docs", "guide")
    for name in sorted(os.listdir(guide_dir)):
        if not name.endswith(".md"):
            continue
        with open(os.path.join(guide_dir, name), encoding="utf-8") as f:
            fences = sum(1 for line in f if re.match(r"\s*(```|~~~)", line))
        if fences:
            # Doxygen names a page after its path under docs/ (STRIP_FROM_PATH in docs/Doxyfile).
            page = "md_" + re.sub(r"[^A-Za-z0-9]", "_", "guide/" + name[:-3]) + ".html"
            counts[page] = fences // 2
    return counts


def check_code_blocks(site, facts_of_page):
    failures = []
    for page, blocks in guide_code_blocks().items():
        facts = facts_of_page.get(os.path.join(site, page))
        if facts is None:
            failures.append(f"{page}: the guide's page is missing or did not load")
        elif facts["fragments"] < blocks:
            failures.append(f"{page}: {facts['fragments']} code fragment(s) (div.fragment) in the "
                            f"rendered page, the Markdown has {blocks} code block(s)")
    return failures


def load_every_page(chromium, site, pages, screenshot):
    """Loads each page in one Chromium, then screenshots the landing page.
    Returns ({page: its facts}, failures); raises BrowserError when Chromium cannot be driven."""
    facts_of_page, failures = {}, []
    profile = tempfile.mkdtemp(prefix="check_docs_site.")
    browser = None
    try:
        browser = Browser(chromium, profile)
        browser.open_tab()
        for page in pages:
            facts, problems = browser.load("file://" + urllib.parse.quote(page))
            failures += [f"{os.path.relpath(page, site)}: {p}" for p in problems]
            if facts is not None:
                facts_of_page[page] = facts
        browser.screenshot("file://" + urllib.parse.quote(os.path.join(site, "index.html")), screenshot)
    finally:
        if browser:
            browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    return facts_of_page, failures


def check_every_link(site, facts_of_page):
    """Returns (local links checked, external links, failures) over every loaded page."""
    ids_of_page = {page: set(facts["ids"]) for page, facts in facts_of_page.items()}
    links, external, failures = 0, 0, []
    for page, facts in facts_of_page.items():
        checked, outside, page_failures = check_links(site, page, facts, ids_of_page)
        links, external = links + checked, external + outside
        failures += page_failures
    return links, external, failures


def main():
    site = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build/docs/html"))
    if not os.path.isfile(os.path.join(site, "index.html")):
        print(f"check_docs_site: no {site}/index.html; run scripts/docs.sh first", file=sys.stderr)
        return 2
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("check_docs_site: chromium is missing; run scripts/setup.sh", file=sys.stderr)
        return 2
    screenshot = os.path.join(os.path.dirname(site), "landing.png")
    pages = html_pages(site)

    start = time.monotonic()
    try:
        facts_of_page, failures = load_every_page(chromium, site, pages, screenshot)
    except BrowserError as e:
        print(f"check_docs_site: {e}", file=sys.stderr)
        return 2
    load_s = time.monotonic() - start
    links, external, link_failures = check_every_link(site, facts_of_page)
    failures += link_failures + check_code_blocks(site, facts_of_page)

    for failure in failures[:MAX_LISTED_FAILURES]:
        print(f"check_docs_site: FAIL {failure}", file=sys.stderr)
    if len(failures) > MAX_LISTED_FAILURES:
        print(f"check_docs_site: ... and {len(failures) - MAX_LISTED_FAILURES} more", file=sys.stderr)
    print(f"check_docs_site: {len(facts_of_page)}/{len(pages)} pages loaded in Chromium in "
          f"{load_s:.1f} s, {links} local links checked ({external} external not followed), "
          f"{len(guide_code_blocks())} guides' code blocks checked, {len(failures)} failure(s)")
    print(f"check_docs_site: landing page screenshot: {screenshot}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
