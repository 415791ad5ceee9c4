"""A minimal Language Server Protocol client over a subprocess's stdio.

What an editor does, reduced to what tests and benchmarks need: start the server,
send requests and notifications framed with `Content-Length` headers, match
responses to requests by id, and collect the server's notifications (diagnostics,
messages) so that a caller can wait for one.

    with LspClient(["hlo-lsp"]) as client:
        client.initialize()
        client.open("file:///tmp/a.hlo", text)
        diagnostics = client.wait_notification("textDocument/publishDiagnostics")
        hover = client.request("textDocument/hover", {...})
"""
from __future__ import annotations

import json
import subprocess
import threading
import time
from typing import Any, Callable, Optional


class LspError(Exception):
    """An error response from the server."""

    def __init__(self, error: dict):
        super().__init__(error.get("message", "error"))
        self.code = error.get("code")
        self.message = error.get("message", "")


class LspClient:
    def __init__(self, command, env: Optional[dict] = None, cwd: Optional[str] = None):
        self.proc = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd)
        self._next_id = 0
        self._lock = threading.Condition()
        self._responses: dict[int, dict] = {}
        self.notifications: list[dict] = []
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._read_messages, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ---- context manager
    def __enter__(self) -> "LspClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- wire format
    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read_messages(self) -> None:
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    with self._lock:
                        self._lock.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(stream.read(length))
            self._dispatch(message)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace"))

    def _dispatch(self, message: dict) -> None:
        if "id" in message and "method" in message:  # a request from the server: accept it
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        with self._lock:
            if "id" in message:
                self._responses[message["id"]] = message
            else:
                message["received_at"] = time.perf_counter()
                self.notifications.append(message)
            self._lock.notify_all()

    # ---- requests and notifications
    def send_request(self, method: str, params: Any = None) -> int:
        """Send a request without waiting; returns its id (see response())."""
        with self._lock:
            self._next_id += 1
            msg_id = self._next_id
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def response(self, msg_id: int, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        with self._lock:
            while msg_id not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no response to request {msg_id}; server stderr:\n"
                                       + "".join(self.stderr_lines[-30:]))
                self._lock.wait(min(left, 0.5))
            message = self._responses.pop(msg_id)
        if "error" in message:
            raise LspError(message["error"])
        return message.get("result")

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        return self.response(self.send_request(method, params), timeout)

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_notification(self, method: str, predicate: Callable[[dict], bool] = lambda p: True,
                          timeout: float = 30.0, after: int = 0) -> dict:
        """The params of the first notification (from index `after`) with this method matching predicate."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for message in self.notifications[after:]:
                    if message.get("method") == method and predicate(message.get("params")):
                        return message["params"]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no {method} notification; server stderr:\n"
                                       + "".join(self.stderr_lines[-30:]))
                self._lock.wait(min(left, 0.5))

    # ---- the usual conversation
    def initialize(self, capabilities: Optional[dict] = None) -> dict:
        result = self.request("initialize", {"processId": None, "rootUri": None,
                                             "capabilities": capabilities or {}})
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "hlo",
                                                              "version": version, "text": text}})

    def change(self, uri: str, version: int, changes: list[dict]) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": changes})

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.request("shutdown", None, timeout=10)
                self.notify("exit", None)
                self.proc.wait(timeout=10)
            except (TimeoutError, subprocess.TimeoutExpired, OSError, ValueError, LspError):
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
