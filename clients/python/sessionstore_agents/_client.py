"""The HTTP client: one method per endpoint of API.md."""

import http.client
import json
import os
import socket as _socket
import urllib.parse


class ServerError(Exception):
    """An error the server answered: its HTTP status, its code (API.md
    lists them), its message, and for lease errors the lease as it is."""

    def __init__(self, status, code, message, lease=None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.lease = lease


class ConflictError(ServerError):
    """The session changed under a handle that ended: another writer
    wrote between this client's handle ending and its resuming."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("sessions", timeout=timeout)
        self._path = path

    def connect(self):
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except BaseException:
            s.close()
            raise
        self.sock = s


class Client:
    """A client of one server. Safe to share between threads: each
    request opens its own connection (cheap on a unix socket)."""

    def __init__(self, socket=None, url=None, token=None, timeout=60.0):
        if socket is None and url is None:
            socket = os.environ.get("SESSIONSTORE_SOCKET")
            if socket is None:
                url = os.environ.get("SESSIONSTORE_URL")
                token = token or os.environ.get("SESSIONSTORE_TOKEN")
        if socket is None and url is None:
            raise ValueError("no server: pass socket= or url=, or set $SESSIONSTORE_SOCKET")
        self._socket = socket
        self._timeout = timeout
        self._token = token
        if url is not None:
            u = urllib.parse.urlsplit(url)
            if u.scheme != "http" or not u.hostname:
                raise ValueError(f"url {url!r}: http://HOST:PORT expected")
            self._host, self._port = u.hostname, u.port or 80

    def _connection(self, timeout=None):
        t = self._timeout if timeout is None else timeout
        if self._socket is not None:
            return _UnixConnection(self._socket, t)
        return http.client.HTTPConnection(self._host, self._port, timeout=t)

    def _open(self, method, path, body=None, query=None, timeout=None):
        if query:
            pairs = []
            for k, v in query.items():
                if v is None:
                    continue
                for one in (v if isinstance(v, (list, tuple)) else [v]):
                    pairs.append((k, str(one)))
            if pairs:
                path += "?" + urllib.parse.urlencode(pairs)
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        conn = self._connection(timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            return conn, conn.getresponse()
        except BaseException:
            conn.close()
            raise

    def request(self, method, path, body=None, query=None):
        """Sends one request and returns its JSON answer, or raises
        ServerError."""
        conn, resp = self._open(method, path, body, query)
        try:
            raw = resp.read()
        finally:
            conn.close()
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            raise ServerError(resp.status, "malformed_answer", raw[:200].decode("utf-8", "replace"))
        if resp.status >= 400:
            raise ServerError(resp.status, answer.get("code", ""), answer.get("error", ""), answer.get("lease"))
        return answer

    @staticmethod
    def _id(session_id):
        return urllib.parse.quote(session_id, safe="")

    # Sessions and handles.
    def health(self):
        return self.request("GET", "/v1/health")

    def create(self, session_id=None, title=None, labels=None, holder=None, project=None):
        body = {}
        if session_id:
            body["id"] = session_id
        if title:
            body["title"] = title
        if labels:
            body["labels"] = labels
        if holder:
            body["holder"] = holder
        if project:
            body["workspace"] = {"project": project}
        return self.request("POST", "/v1/sessions", body)

    def resume(self, session_id, holder=None, wait_ms=0):
        body = {"wait_ms": wait_ms}
        if holder:
            body["holder"] = holder
        return self.request("POST", f"/v1/sessions/{self._id(session_id)}/handles", body)

    def heartbeat(self, handle):
        return self.request("POST", f"/v1/handles/{urllib.parse.quote(handle, safe='')}/heartbeat")

    def release(self, handle):
        return self.request("DELETE", f"/v1/handles/{urllib.parse.quote(handle, safe='')}")

    def delete(self, session_id, handle):
        return self.request("DELETE", f"/v1/sessions/{self._id(session_id)}", {"handle": handle})

    # Writes: each names its handle.
    def add_messages(self, session_id, handle, messages, revision=None):
        return self._write(session_id, "messages", handle, revision, messages=messages)

    def add_items(self, session_id, handle, items, revision=None):
        return self._write(session_id, "items", handle, revision, items=items)

    def pop(self, session_id, handle, revision=None):
        return self._write(session_id, "pop", handle, revision)

    def clear(self, session_id, handle, revision=None):
        return self._write(session_id, "clear", handle, revision)

    def set_labels(self, session_id, handle, set=None, remove=None, revision=None):
        return self._write(session_id, "labels", handle, revision, set=set or {}, remove=remove or [])

    def _write(self, session_id, what, handle, revision, **fields):
        body = {"handle": handle, **fields}
        if revision:
            body["revision"] = revision
        return self.request("POST", f"/v1/sessions/{self._id(session_id)}/{what}", body)

    # Reads: no handle.
    def get(self, session_id):
        return self.request("GET", f"/v1/sessions/{self._id(session_id)}")

    def messages(self, session_id, last=None):
        return self.request("GET", f"/v1/sessions/{self._id(session_id)}/messages", query={"last": last})

    def items(self, session_id, limit=None):
        return self.request("GET", f"/v1/sessions/{self._id(session_id)}/items", query={"limit": limit})

    def lease(self, session_id):
        return self.request("GET", f"/v1/sessions/{self._id(session_id)}/lease")

    def list(self, state=None, kind=None, labels=None, project=None, order=None, limit=None, cursor=None):
        q = {"state": state, "kind": kind, "project": project, "order": order, "limit": limit, "cursor": cursor}
        if labels:
            q["label"] = [f"{k}={v}" for k, v in labels.items()]
        return self.request("GET", "/v1/sessions", query=q)

    def search(self, text, labels=None, project=None, limit=None, no_tools=False):
        q = {"q": text, "project": project, "limit": limit, "no_tools": "1" if no_tools else None}
        if labels:
            q["label"] = [f"{k}={v}" for k, v in labels.items()]
        return self.request("GET", "/v1/search", query=q)

    def watch(self, ids=None, timeout=None):
        """Yields the store's changes (dicts) as they come, until the
        caller stops iterating or the server ends the stream."""
        conn, resp = self._open("GET", "/v1/watch", query={"id": ids}, timeout=timeout)
        try:
            if resp.status >= 400:
                answer = json.loads(resp.read() or b"{}")
                raise ServerError(resp.status, answer.get("code", ""), answer.get("error", ""))
            data = []
            for line in resp:
                line = line.rstrip(b"\r\n")
                if line.startswith(b"data: "):
                    data.append(line[6:])
                elif not line and data:
                    yield json.loads(b"\n".join(data))
                    data = []
        finally:
            conn.close()
