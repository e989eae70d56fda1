"""Drive headless Chromium over the DevTools protocol (websocket-client, no browser package).

:func:`open_page` loads a file, waits for its load event and for ``ready`` (a JS expression)
to be true, and returns a :class:`Page` that evaluates JS and records every console error,
uncaught exception, log error (CSP violations) and network request the page made.
Without a Chromium on PATH (``apt-get install -y chromium``) :func:`open_page` raises
:class:`NoBrowser`; the tests skip on it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
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
        import base64

        self._send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        return base64.b64decode(self._send("Page.captureScreenshot", format="png")["data"])

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
def open_page(path: Path, ready: str = "true", timeout: float = 60.0) -> Iterator[Page]:
    """Load ``path`` in a fresh headless Chromium profile; ``load_s`` = seconds from navigation
    to ``ready`` being true."""
    exe = browser()
    if exe is None:
        raise NoBrowser("no Chromium on PATH (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
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
            t0 = time.monotonic()
            page._send("Page.navigate", url=path.resolve().as_uri())
            page.wait("document.readyState === 'complete'", timeout)
            page.wait(ready, timeout)
            page.load_s = time.monotonic() - t0
            yield page
            ws.close()
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
