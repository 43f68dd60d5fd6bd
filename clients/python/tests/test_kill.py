"""The server killed with SIGKILL while a Python client adds items."""

import asyncio
import http.client
import os
import random
import shutil
import tempfile
import threading
import unittest

from sessionstore_agents import Client, StoreSession

from .server import Server


class KillTest(unittest.TestCase):
    def test_sigkill_loses_no_acknowledged_item(self):
        """Round after round, a client adds items one at a time to one
        session while the server is killed with SIGKILL after a delay drawn
        from a seeded generator (landing before, inside or after a write's
        Append, or while the answer travels); a new server then serves the
        same store. Every item whose add_items returned is in the session,
        in order, and the only other item it may hold is the one in flight
        at the kill (stored, its answer lost)."""
        rounds = int(os.environ.get("SESSIONSTORE_KILL_ROUNDS", "100"))
        rng = random.Random(29)
        home = tempfile.mkdtemp(prefix="pykill")
        store = os.path.join(home, "st")
        acked, inflight, kills = [], None, 0
        try:
            for r in range(rounds + 1):
                srv = Server(store=store, warmup=r == 0)
                try:
                    client = Client(socket=srv.socket, timeout=30)
                    held = asyncio.run(StoreSession("killed", client, heartbeat=False).get_items())
                    if inflight is not None and held == acked + [inflight]:
                        acked.append(inflight)  # stored before the kill: now it is the store's
                    self.assertEqual(held, acked, f"round {r}: what the store holds after the kill")
                    if r == rounds:
                        break
                    s = StoreSession("killed", client, heartbeat=False)
                    first = {"role": "user", "content": f"round {r} first"}
                    asyncio.run(s.add_items([first]))  # every round adds at least one
                    acked.append(first)
                    killer = threading.Timer(rng.uniform(0, 0.04), srv.proc.kill)
                    killer.start()
                    n = 0
                    try:
                        while True:
                            inflight = {"role": "user", "content": f"round {r} item {n}"}
                            asyncio.run(s.add_items([inflight]))
                            acked.append(inflight)
                            inflight = None
                            n += 1
                    except (OSError, http.client.HTTPException):
                        pass  # the server is gone
                    killer.join()
                    self.assertEqual(srv.proc.wait(timeout=30), -9, f"round {r}: killed")
                    kills += 1
                finally:
                    srv.stop()
            self.assertEqual(kills, rounds)
            self.assertGreater(len(acked), rounds, "each round added an item before its kill")
        finally:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
