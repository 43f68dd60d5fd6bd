"""StoreSession: the OpenAI Agents SDK's Session protocol over the server."""

import asyncio
import threading

from ._client import Client, ConflictError, ServerError

# The codes of a handle that ended without the session changing hands for
# good: the client resumes, if nobody wrote meanwhile.
_ENDED = {"handle_expired", "handle_released", "unknown_handle"}


class StoreSession:
    """A session of the store in the shape of the Agents SDK's Session
    (session_id, get_items(limit=None), add_items, pop_item,
    clear_session; all async). Items round-trip exactly: what get_items
    returns equals what add_items stored, whatever the item.

    The first write takes the session's lease through a handle (creating
    the session when it does not exist) and holds it until close(): no
    other writer (a Go agent, another StoreSession, `sessions append`)
    writes the session meanwhile. A background thread heartbeats the
    handle; if the handle ends anyway (the process was suspended past the
    server's grace), the next write resumes the session, provided nobody
    wrote it in between (else ConflictError)."""

    def __init__(self, session_id=None, client=None, *, holder="python-agents", title=None, labels=None, heartbeat=True):
        self.client = client or Client()
        self.session_id = session_id
        self.session_settings = None
        self._holder = holder
        self._title = title
        self._labels = labels
        self._heartbeat = heartbeat
        self._handle = None
        self._revision = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = None

    # The Agents SDK's Session.
    async def get_items(self, limit=None):
        if self.session_id is None:
            return []
        return await asyncio.to_thread(self._get_items, limit)

    async def add_items(self, items):
        items = list(items)
        if items:
            await asyncio.to_thread(self._write, "add_items", items)

    async def pop_item(self):
        answer = await asyncio.to_thread(self._write, "pop")
        return answer.get("item")

    async def clear_session(self):
        await asyncio.to_thread(self._write, "clear")

    # Beyond the protocol.
    async def close(self):
        """Releases the session's lease (the session stays)."""
        await asyncio.to_thread(self.close_sync)

    def close_sync(self):
        with self._lock:
            self._stop.set()
            if self._handle is not None:
                handle, self._handle = self._handle, None
                try:
                    self.client.release(handle)
                except ServerError:
                    pass  # already ended: nothing held
        if self._beat is not None:
            self._beat.join()
            self._beat = None

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def _get_items(self, limit):
        try:
            return self.client.items(self.session_id, limit=limit)["items"]
        except ServerError as e:
            if e.code == "not_found":
                return []
            raise

    def _write(self, what, *args):
        with self._lock:
            self._ensure_handle()
            for attempt in (0, 1):
                try:
                    answer = getattr(self.client, what)(self.session_id, self._handle, *args)
                    self._revision = answer["revision"]
                    return answer
                except ServerError as e:
                    if attempt or e.code not in _ENDED:
                        raise
                    self._handle = None
                    self._ensure_handle(expect=self._revision)

    def _ensure_handle(self, expect=None):
        if self._handle is not None:
            return
        if self.session_id is None:
            answer = self.client.create(title=self._title, labels=self._labels, holder=self._holder)
        else:
            try:
                answer = self.client.resume(self.session_id, holder=self._holder)
            except ServerError as e:
                if e.code != "not_found":
                    raise
                answer = self.client.create(self.session_id, title=self._title, labels=self._labels, holder=self._holder)
        if expect is not None and answer["revision"] != expect:
            self.client.release(answer["handle"])
            raise ConflictError(409, "conflict", f"session {self.session_id} was written by another writer (revision {answer['revision']}, this client knew {expect})")
        self.session_id = answer["id"]
        self._handle = answer["handle"]
        self._revision = answer["revision"]
        if self._heartbeat and self._beat is None:
            self._stop.clear()
            every = max(answer.get("grace_ms", 30000) / 3000.0, 0.05)
            self._beat = threading.Thread(target=self._beats, args=(every,), daemon=True)
            self._beat.start()

    def _beats(self, every):
        while not self._stop.wait(every):
            handle = self._handle
            if handle is None:
                continue
            try:
                self.client.heartbeat(handle)
            except (ServerError, OSError):
                pass  # the next write finds out and resumes
