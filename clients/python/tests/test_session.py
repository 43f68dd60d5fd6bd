import asyncio
import json
import os
import subprocess
import sys
import unittest

from sessionstore_agents import Client, ConflictError, ServerError, StoreSession

from .server import Server

HERE = os.path.dirname(os.path.abspath(__file__))

# Items of every shape the Agents SDK adds, and JSON that trips careless
# codecs.
ITEMS = [
    {"role": "user", "content": "Where is the zebra?"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "auto"}]},
    {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "stripes"}], "encrypted_content": "gAAAA"},
    {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{\"animal\":\"zebra\"}", "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "savanna"},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "In the savanna.", "annotations": [], "logprobs": None}]},
    {"type": "x_future", "big": 12345678901234567890123, "f": 1.5e300, "neg": -0.25, "u": "é\u2028😀", "esc": "a\"b\\c\n</script>", "empty": {}, "none": [], "nil": None, "deep": [[[{"a": [1, {"b": True}]}]]]},
]


def run(coro):
    return asyncio.run(coro)


class StoreSessionTest(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.client = Client(socket=self.server.socket)

    def tearDown(self):
        code, err = self.server.stop()
        self.assertEqual(code, 0, err)

    def test_items_round_trip_exactly(self):
        async def go():
            async with StoreSession("conv-1", self.client) as s:
                self.assertEqual(await s.get_items(), [])
                await s.add_items(ITEMS[:3])
                await s.add_items(ITEMS[3:])
                self.assertEqual(await s.get_items(), ITEMS)
                self.assertEqual(await s.get_items(limit=2), ITEMS[-2:])
                self.assertEqual(await s.get_items(limit=0), [])
                # Their text is searchable.
                for word in ("zebra", "savanna", "stripes"):
                    hits = self.client.search(word)["hits"]
                    self.assertTrue(hits, word)
                    self.assertEqual(hits[0]["id"], "conv-1")
        run(go())

    def test_pop_and_clear(self):
        async def go():
            async with StoreSession(None, self.client) as s:
                await s.add_items(ITEMS[:2])
                self.assertIsNotNone(s.session_id)
                self.assertEqual(await s.pop_item(), ITEMS[1])
                self.assertEqual(await s.get_items(), ITEMS[:1])
                await s.clear_session()
                self.assertEqual(await s.get_items(), [])
                self.assertIsNone(await s.pop_item())
        run(go())

    def test_one_writer_at_a_time(self):
        async def go():
            a = StoreSession("shared", self.client)
            await a.add_items([ITEMS[0]])
            b = StoreSession("shared", self.client)
            with self.assertRaises(ServerError) as cm:
                await b.add_items([ITEMS[1]])
            self.assertEqual(cm.exception.status, 409)
            self.assertEqual(cm.exception.code, "lease_held")
            self.assertEqual(cm.exception.lease["holder"]["label"].split(" ")[0], "python-agents")
            # The CLI is refused too, naming the holder.
            r = self.server.sessions("append", "shared", stdin=b'{"role":"user","parts":[{"type":"text","text":"x"}]}\n')
            self.assertEqual(r.returncode, 1)
            self.assertIn(b"held by python-agents", r.stderr)
            await a.close()
            await b.add_items([ITEMS[1]])
            self.assertEqual(await a.get_items(), ITEMS[:2])
            await b.close()
        run(go())

    def test_a_handle_ended_resumes_unless_someone_wrote(self):
        async def go():
            s = StoreSession("resumable", self.client, heartbeat=False)
            await s.add_items([ITEMS[0]])
            self.client.release(s._handle)  # as the server does to a silent client
            await s.add_items([ITEMS[1]])  # resumes: nobody wrote meanwhile
            self.client.release(s._handle)
            r = self.server.sessions("append", "resumable", stdin=b'{"role":"user","parts":[{"type":"text","text":"meanwhile"}]}\n')
            self.assertEqual(r.returncode, 0, r.stderr)
            with self.assertRaises(ConflictError):
                await s.add_items([ITEMS[2]])
            self.assertEqual(len(await s.get_items()), 3)
            await s.close()
        run(go())

    def test_hostile_input_is_refused(self):
        h = self.client.create("h")["handle"]
        for body, code in [
            ({"handle": h, "items": ["not an object"]}, "invalid"),
            ({"handle": h, "items": [], "extra": 1}, "malformed"),
            ({"items": []}, "no_handle"),
        ]:
            with self.assertRaises(ServerError) as cm:
                self.client.request("POST", "/v1/sessions/h/items", body)
            self.assertEqual(cm.exception.code, code)
            self.assertEqual(cm.exception.status // 100, 4)
        with self.assertRaises(ServerError) as cm:
            self.client.items("../etc")
        self.assertEqual(cm.exception.code, "invalid_id")
        self.assertEqual(self.client.get("h")["revision"], 1)

    def test_watch_labels_and_list(self):
        h = self.client.create("w", labels={"team": "zoo"})["handle"]
        changes = self.client.watch(ids=["w"], timeout=30)
        self.assertEqual(next(changes)["id"], "w")
        self.client.add_items("w", h, [ITEMS[0]])
        while next(changes)["summary"]["revision"] != 2:
            pass
        changes.close()
        self.client.set_labels("w", h, set={"x": "1"}, remove=["team"])
        listed = self.client.list(labels={"x": "1"})["items"]
        self.assertEqual([s["id"] for s in listed], ["w"])
        self.assertEqual(self.client.lease("w")["state"], "held")
        self.client.delete("w", h)
        with self.assertRaises(ServerError) as cm:
            self.client.get("w")
        self.assertEqual(cm.exception.status, 404)

    def test_a_second_process_reads_a_thousand_items_back(self):
        items = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} ✓", "n": i} for i in range(1000)]

        async def go():
            async with StoreSession("thousand", self.client) as s:
                for it in items:
                    await s.add_items([it])
        run(go())
        reader = subprocess.run(
            [sys.executable, "-c", "import json,sys; from sessionstore_agents import Client; print(json.dumps(Client(socket=sys.argv[1]).items('thousand')['items']))", self.server.socket],
            capture_output=True, cwd=os.path.dirname(HERE), check=True,
        )
        self.assertEqual(json.loads(reader.stdout), items)


if __name__ == "__main__":
    unittest.main()
