"""A server restarted under a client that holds a session."""

import asyncio
import os
import shutil
import tempfile
import unittest

from sessionstore_agents import Client, StoreSession

from .server import Server


class RestartTest(unittest.TestCase):
    def test_session_resumes_after_the_server_restarts(self):
        """A StoreSession keeps writing across restarts of the server on
        the same socket: stopped (its handles end and their leases are
        released) and killed with SIGKILL (the leases are left to be
        recovered as stale). Its next write resumes the session, since
        nobody wrote it meanwhile, and nothing acknowledged is lost."""
        home = tempfile.mkdtemp(prefix="pyrestart")
        store, sock = os.path.join(home, "st"), os.path.join(home, "s.sock")
        srv = Server(store=store, socket=sock)
        try:
            session = StoreSession("restarted", Client(socket=sock, timeout=30), heartbeat=False)
            want = [{"role": "user", "content": "before"}]
            asyncio.run(session.add_items(want))
            for how in ("stop", "kill"):
                if how == "stop":
                    srv.proc.terminate()
                    self.assertEqual(srv.proc.wait(timeout=30), 0, "a stopped server exits 0")
                else:
                    srv.proc.kill()
                    self.assertEqual(srv.proc.wait(timeout=30), -9)
                srv.proc.stdout.close()
                srv.proc.stderr.close()
                srv = Server(store=store, socket=sock, warmup=False)
                item = {"role": "user", "content": f"after the {how}"}
                asyncio.run(session.add_items([item]))
                want.append(item)
                self.assertEqual(asyncio.run(session.get_items()), want)
            asyncio.run(session.close())
            lease = srv.sessions("lease", "restarted")
            self.assertEqual(lease.returncode, 0, lease.stderr)
            self.assertIn(b"free", lease.stdout, "close released the lease the new server's handle held")
        finally:
            srv.stop()
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
