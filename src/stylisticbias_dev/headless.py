"""Drive headless Chromium over the DevTools protocol (websocket-client, no browser package).

:func:`open_page` loads a file, waits for its load event and for ``ready`` (a JS expression)
to be true, and returns a :class:`Page` that evaluates JS and records every console error,
uncaught exception, log error (CSP violations) and network request the page made.
Without a Chromium on PATH (``apt-get install -y chromium``) :func:`open_page` raises
:class:`NoBrowser`; the tests skip on it. :func:`layout_problems` is the browser check of a
page's layout: at each width, no horizontal overflow and a first viewport that is not blank.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


class NoBrowser(RuntimeError):
    """No Chromium-like executable on PATH."""


def browser() -> str | None:
    """The first Chromium-like executable on PATH."""
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


@dataclass
class Page:
    """One loaded page and what it did."""

    ws: Any
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    load_s: float = 0.0
    _id: int = 0

    def screenshot(self, width: int = 1400, height: int = 2600) -> bytes:
        """A PNG of the page at ``width`` x ``height``."""
        self.viewport(width, height)
        return self.visible_png()

    def viewport(self, width: int, height: int) -> None:
        """Make the window ``width`` x ``height`` CSS pixels (scale 1, desktop)."""
        self._send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def visible_png(self) -> bytes:
        """A PNG of what the window shows now (the viewport at its scroll position)."""
        import base64

        return base64.b64decode(self._send("Page.captureScreenshot", format="png")["data"])

    def navigate(self, path: Path, ready: str = "true", fragment: str = "", timeout: float = 60.0):
        """Load ``path`` (``#fragment`` appended) afresh and wait for ``ready``."""
        self._send("Page.navigate", url="about:blank")
        self.wait("location.href === 'about:blank'", timeout)
        t0 = time.monotonic()
        self._send("Page.navigate", url=path.resolve().as_uri() + fragment)
        self.wait("document.readyState === 'complete' && location.protocol === 'file:'", timeout)
        self.wait(ready, timeout)
        self.load_s = time.monotonic() - t0

    def goto(self, url: str, ready: str = "true", timeout: float = 60.0) -> None:
        """Load ``url`` (any address: an ``http`` server's page too) and wait for ``ready``."""
        self._send("Page.navigate", url=url)
        self.wait(f"location.href.startsWith({json.dumps(url.split('#')[0])})", timeout)
        self.wait("document.readyState === 'complete'", timeout)
        self.wait(ready, timeout)

    def _send(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        my = self._id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def _event(self, msg: dict[str, Any]) -> str | None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console: " + " ".join(str(a.get("value")) for a in p["args"]))
        elif method == "Runtime.exceptionThrown":
            self.errors.append("exception: " + json.dumps(p["exceptionDetails"])[:500])
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            self.errors.append("log: " + p["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            self.requests.append(p["request"]["url"])
        return method

    def eval(self, expr: str) -> Any:
        """The value of a JS expression (promises awaited)."""
        res = self._send("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expr}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def wait(self, expr: str, timeout: float = 30.0) -> None:
        """Until ``expr`` is truthy."""
        end = time.monotonic() + timeout
        while not self.eval(expr):
            if time.monotonic() > end:
                raise TimeoutError(expr)
            time.sleep(0.02)


@contextlib.contextmanager
def open_page(
    path: Path,
    ready: str = "true",
    timeout: float = 60.0,
    size: tuple[int, int] | None = None,
    fragment: str = "",
) -> Iterator[Page]:
    """Load ``path`` (``#fragment`` appended) in a fresh headless Chromium profile, in a window
    of ``size`` (width, height) when given; ``load_s`` = seconds from navigation to ``ready``
    being true."""
    exe = browser()
    if exe is None:
        raise NoBrowser("no Chromium on PATH (apt-get install -y chromium)")
    # the profile is removed once every Chromium process of the session has exited (they are
    # one process group); a file a late child still writes cannot fail the caller
    with tempfile.TemporaryDirectory(prefix="chromium-", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [
                exe,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            end = time.monotonic() + timeout
            while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
                if time.monotonic() > end or proc.poll() is not None:
                    raise RuntimeError("Chromium did not start")
                time.sleep(0.05)
            port = port_file.read_text().split()[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as r:
                target = next(t for t in json.load(r) if t["type"] == "page")
            ws = websocket.create_connection(
                target["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True
            )
            page = Page(ws)
            for domain in ("Runtime", "Log", "Network", "Page"):
                page._send(f"{domain}.enable")
            if size is not None:
                page.viewport(*size)
            t0 = time.monotonic()
            page._send("Page.navigate", url=path.resolve().as_uri() + fragment)
            page.wait("document.readyState === 'complete'", timeout)
            page.wait(ready, timeout)
            page.load_s = time.monotonic() - t0
            yield page
            ws.close()
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate Chromium and every process it started (its renderers, crash handler)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    end = time.monotonic() + 5  # the group's other members exit after the main process
    while time.monotonic() < end:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


#: the widths a page must fit (a laptop, a desktop window)
WIDTHS: tuple[int, ...] = (1280, 1500)
#: a first viewport is blank when fewer of its pixels than this differ from its background
MIN_INK = 0.01


def ink(png: bytes) -> float:
    """The share of a screenshot's pixels that differ from its most common colour."""
    import io

    import numpy as np
    from PIL import Image

    px = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3).astype(np.int32)
    packed = (px[:, 0] << 16) | (px[:, 1] << 8) | px[:, 2]
    colours, counts = np.unique(packed, return_counts=True)
    bg = int(colours[counts.argmax()])
    background = np.array([bg >> 16, (bg >> 8) & 255, bg & 255])
    return float((np.abs(px - background).sum(axis=1) > 24).mean())


#: the images whose right edge lies past the window's (cut by a frame, or scrolled to)
_CUT_IMAGES = (
    "Array.from(document.images).filter(i => i.getBoundingClientRect().right > innerWidth + 1)"
    ".map(i => (i.getAttribute('src') || '?').split('/').pop().slice(0, 80)).slice(0, 3)"
)


def layout_problems(
    path: Path,
    ready: str = "true",
    fragments: tuple[str, ...] = ("",),
    widths: tuple[int, ...] = WIDTHS,
    height: int = 1100,
    shots: Path | None = None,
) -> list[str]:
    """What a reader would see wrong in ``path`` opened at each width x fragment: the page wider
    than the window (``scrollWidth > innerWidth``: a horizontal scroll bar, columns off-screen),
    an image reaching past the window's right edge (cut by its frame), or a blank first
    viewport (less than :data:`MIN_INK` of it drawn). ``[]`` when none; ``shots``: a folder for
    the first viewports' PNGs."""
    bad = []
    with open_page(path, ready, size=(widths[0], height)) as page:
        for width in widths:
            page.viewport(width, height)
            for frag in fragments:
                page.navigate(path, ready, frag)
                where = f"{path.name}{frag} at {width}x{height}"
                sw, iw = page.eval("[document.documentElement.scrollWidth, window.innerWidth]")
                if sw > iw:
                    bad.append(f"{where}: scrollWidth {sw} > innerWidth {iw}")
                if cut := page.eval(_CUT_IMAGES):
                    bad.append(f"{where}: image past the window's right edge: {', '.join(cut)}")
                png = page.visible_png()
                if shots is not None:
                    shots.mkdir(parents=True, exist_ok=True)
                    name = f"{path.stem}{frag.replace('#', '-')}-{width}.png"
                    (shots / name).write_bytes(png)
                if (share := ink(png)) < MIN_INK:
                    bad.append(f"{where}: blank first viewport ({share:.2%} drawn)")
        bad += page.errors
    return bad
