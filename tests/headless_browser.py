"""Open a page in headless Chromium and read back what a person would see: the console's errors
and warnings, uncaught exceptions, failed loads, a value the page's DOM computes and a
screenshot — through the DevTools protocol (a websocket to the page's target), never by sleeping.

Chromium is started with ``--remote-debugging-port=0`` (it picks a free port and prints the
address), a fresh ``--user-data-dir`` and every background network feature off; it runs in its own
process group and is killed (that group) when the context exits."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from websockets.sync.client import connect

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--mute-audio"]


def chromium() -> Optional[str]:
    """The Chromium binary (the Debian package's, or one on PATH), or None."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One page target over the DevTools protocol: ``call`` sends a command and waits for its
    answer; every event that arrives meanwhile is kept in ``events``."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events: list = []

    def call(self, method: str, timeout: float = 60.0, **params) -> dict:
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, event: str, timeout: float = 60.0) -> dict:
        for msg in self.events:
            if msg.get("method") == event:
                return msg
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            self.events.append(msg)
            if msg.get("method") == event:
                return msg

    def drain(self, seconds: float) -> None:
        """Collect events for ``seconds`` more (late console messages after the load event)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self.events.append(json.loads(self.ws.recv(timeout=left)))
            except TimeoutError:
                return

    def problems(self) -> list:
        """Console errors and warnings, uncaught exceptions and log entries of level error or
        warning, as text."""
        out = []
        for msg in self.events:
            m, p = msg.get("method"), msg.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('text', '')} {d.get('exception', {}).get('description', '')}".strip())
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                e = p["entry"]
                out.append(f"log.{e['level']} ({e.get('source')}): {e.get('text')} {e.get('url', '')}".strip())
            elif m == "Network.loadingFailed":
                out.append(f"load failed: {p.get('errorText')} ({p.get('type')})")
        return out

    def evaluate(self, expression: str):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluate: {res['exceptionDetails'].get('text')}")
        return res["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"])
        path.write_bytes(data)
        return data


@contextmanager
def open_page(url: str, user_data_dir: Path, *, width: int = 1200, height: int = 900) -> Iterator[Page]:
    """A headless Chromium showing ``url``, with the console, log and network domains enabled
    *before* navigation (so nothing the page does while loading is missed); yields after the load
    event and a short drain."""
    exe = chromium()
    if exe is None:
        raise RuntimeError("no Chromium: apt-get install -y chromium")
    proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={user_data_dir}", "--remote-debugging-port=0",
                             f"--window-size={width},{height}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None:
            line = proc.stderr.readline()
            if not line:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Chromium did not start (exit {proc.poll()})")
                continue
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                port = int(m.group(1))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            targets = [t for t in json.load(r) if t.get("type") == "page"]
        with connect(targets[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30) as ws:
            page = Page(ws)
            for domain in ("Page", "Runtime", "Log", "Network"):
                page.call(f"{domain}.enable")
            page.call("Page.navigate", url=url)
            page.wait_for("Page.loadEventFired")
            page.drain(0.5)
            yield page
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # pragma: no cover - it already exited
            pass
        proc.wait(timeout=30)
        proc.stderr.close()
