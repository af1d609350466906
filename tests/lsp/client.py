"""A minimal Language Server Protocol client for testing and timing `weft lsp` (Python 3 standard
library only). It starts the server, frames JSON-RPC messages with Content-Length headers, and keeps
the notifications that arrive while it waits for a response, so a test can wait for them later.

    client = Client([weft, "lsp"])
    client.initialize()
    client.open(uri, text)
    diagnostics = client.diagnostics(uri)          # the next publishDiagnostics for uri
    hover = client.request("textDocument/hover", {...})
    client.stop()                                    # shutdown, exit; returns the exit status
"""
import json
import os
import queue
import subprocess
import threading
import time


class LspError(Exception):
    def __init__(self, error):
        super().__init__("%s: %s" % (error.get("code"), error.get("message")))
        self.code = error.get("code")


def utf16_length(text):
    """The length of text in UTF-16 code units, as LSP positions count characters."""
    return len(text.encode("utf-16-le")) // 2


def position_of(text, needle, occurrence=0, delta=0):
    """The LSP position (line, UTF-16 character) of the occurrence-th `needle` in text, plus delta
    characters (within the line)."""
    offset = -1
    for _ in range(occurrence + 1):
        offset = text.index(needle, offset + 1)
    offset += delta
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return {"line": line, "character": utf16_length(text[line_start:offset])}


class Client:
    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.next_id = 1
        self.messages = queue.Queue()
        self.notifications = []
        self.stderr = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put(json.loads(stream.read(length).decode("utf-8")))

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def send(self, message):
        message = dict(message, jsonrpc="2.0")
        body = json.dumps(message).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _next(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no message from the server")
        try:
            message = self.messages.get(timeout=remaining)
        except queue.Empty:
            raise TimeoutError("no message from the server") from None
        if message is None:
            raise EOFError("the server closed its output; stderr:\n" + "".join(self.stderr))
        return message

    def request_async(self, method, params=None):
        """Sends a request; returns its id (read the response with response(id))."""
        request_id = self.next_id
        self.next_id += 1
        self.send({"id": request_id, "method": method, "params": params if params is not None else {}})
        return request_id

    def response(self, request_id, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise LspError(message["error"])
                return message.get("result")
            if "method" in message:
                self.notifications.append(message)

    def request(self, method, params=None, timeout=120):
        return self.response(self.request_async(method, params), timeout)

    def notify(self, method, params):
        self.send({"method": method, "params": params})

    def notification(self, method, predicate=lambda params: True, timeout=120):
        """The first notification `method` whose params satisfy predicate (kept ones first)."""
        for i, message in enumerate(self.notifications):
            if message["method"] == method and predicate(message["params"]):
                return self.notifications.pop(i)["params"]
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if message.get("method") == method and predicate(message["params"]):
                return message["params"]
            if "method" in message:
                self.notifications.append(message)

    def initialize(self, root_uri=None, options=None):
        params = {"processId": os.getpid(), "rootUri": root_uri, "capabilities": {}}
        if options is not None:
            params["initializationOptions"] = options
        result = self.request("initialize", params)
        self.notify("initialized", {})
        return result

    def open(self, uri, text, version=1):
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "weft", "version": version, "text": text}})

    def change(self, uri, text, version):
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def diagnostics(self, uri, version=None, timeout=120):
        """The diagnostics published for uri (at version, when given)."""
        return self.notification(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and (version is None or p.get("version") == version),
            timeout)["diagnostics"]

    def at(self, method, uri, position):
        return self.request(method, {"textDocument": {"uri": uri}, "position": position})

    def stop(self, timeout=60):
        """shutdown then exit; returns the server's exit status."""
        self.request("shutdown")
        self.notify("exit", None)
        try:
            return self.proc.wait(timeout)
        finally:
            self.proc.stdin.close()
