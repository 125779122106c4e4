"""A headless Chromium driven over the Chrome DevTools Protocol (CDP), for the dashboard tests.

No npm and no WebDriver: Chromium is started with ``--remote-debugging-port=0``, and one page is
driven over its websocket with the ``websockets`` package.  Console errors, uncaught exceptions
and failed loads are collected in :attr:`Browser.errors`.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--window-size=1280,1000",
]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, executable: str, timeout: float = 60.0):
        self.executable = executable
        self.timeout = timeout
        self.errors: list[str] = []
        self._ids = itertools.count(1)

    def __enter__(self) -> Browser:
        from websockets.sync.client import connect

        self._profile = tempfile.mkdtemp(prefix="wallcast-chromium-")
        self._proc = subprocess.Popen(
            [
                self.executable,
                *FLAGS,
                f"--user-data-dir={self._profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        port = self._devtools_port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        page = next(t for t in targets if t["type"] == "page")
        self._ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._ws.close()
        finally:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            shutil.rmtree(self._profile, ignore_errors=True)

    def _devtools_port(self) -> int:
        deadline = time.monotonic() + self.timeout
        active = Path(self._profile) / "DevToolsActivePort"
        while time.monotonic() < deadline:
            if active.exists():
                first = active.read_text().split("\n", 1)[0].strip()
                if first.isdigit():
                    return int(first)
            if self._proc.poll() is not None:
                raise RuntimeError(f"chromium exited: {self._proc.stderr.read()[-2000:]}")
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    # -- protocol

    def _event(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
            self.errors.append("console: " + " ".join(map(str, args)))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text")
            self.errors.append(f"exception: {text}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            self.errors.append(f"network: {params.get('errorText')}")

    def send(self, method: str, **params: Any) -> dict:
        call_id = next(self._ids)
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no answer to {method}")
            message = json.loads(self._ws.recv(timeout=remaining))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def pump(self, seconds: float) -> None:
        """Read events for a while (console messages arrive asynchronously)."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                self._event(json.loads(self._ws.recv(timeout=remaining)))
            except TimeoutError:
                return

    # -- page

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def goto(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def wait_for(self, expression: str, timeout: float | None = None) -> Any:
        deadline = time.monotonic() + (timeout or self.timeout)
        guarded = f"(() => {{ try {{ return ({expression}); }} catch (e) {{ return false; }} }})()"
        while time.monotonic() < deadline:
            value = self.evaluate(guarded)
            if value:
                return value
            self.pump(0.2)
        raise TimeoutError(f"timed out waiting for {expression}; errors: {self.errors}")

    def screenshot(self, path: Path, width: int = 1280) -> Path:
        """A PNG of the whole page."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.pump(0.5)  # let Plotly's responsive charts settle at the new size
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data["data"]))
        self.send("Emulation.clearDeviceMetricsOverride")
        return path


def screenshot_dir(default: Path) -> Path:
    """Where screenshots go: ``WALLCAST_SCREENSHOTS`` if set (to look at them), else ``default``."""
    chosen = os.environ.get("WALLCAST_SCREENSHOTS")
    return Path(chosen) if chosen else default


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)
