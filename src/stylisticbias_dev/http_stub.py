"""A throw-away HTTP server on 127.0.0.1 for fault tests (slow, silent or trickling servers).

``with http_stub(get=..., post=...) as url:`` serves each ``GET``/``POST`` with the given
function (it receives the request handler and the :class:`threading.Event` that is set when the
block ends, so a handler that waits or trickles stops then); a method without a function is
answered ``404``. The server, its threads and any waiting handler end with the block.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Callable, Iterator
from typing import Any

Handler = Callable[[http.server.BaseHTTPRequestHandler, threading.Event], None]


def answer(h: http.server.BaseHTTPRequestHandler, body: bytes, status: int = 200) -> None:
    """Send a complete response with ``body``."""
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


@contextlib.contextmanager
def http_stub(*, get: Handler | None = None, post: Handler | None = None) -> Iterator[str]:
    """Serve ``get``/``post`` on a free loopback port; yields ``http://127.0.0.1:<port>``."""
    stop = threading.Event()

    class _Handler(http.server.BaseHTTPRequestHandler):
        def _dispatch(self, fn: Handler | None) -> None:
            if fn is None:
                answer(self, b"{}", 404)
                return
            with contextlib.suppress(OSError):  # the client gave up: nothing to report
                fn(self, stop)

        def do_GET(self) -> None:
            self._dispatch(get)

        def do_POST(self) -> None:
            self._dispatch(post)

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        stop.set()
        srv.shutdown()
        srv.server_close()
