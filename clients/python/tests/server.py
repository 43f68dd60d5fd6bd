"""Starts `sessions serve` on a fresh store for a test."""

import os
import shutil
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def sessions_binary():
    """$SESSIONS_BIN, else the command built once from this repository."""
    exe = os.environ.get("SESSIONS_BIN")
    if exe:
        return exe
    out = os.path.join(tempfile.gettempdir(), f"sessions-pytest-{os.getuid()}")
    subprocess.run(["go", "build", "-o", out, "./cmd/sessions"], cwd=ROOT, check=True)
    os.environ["SESSIONS_BIN"] = out
    return out


class Server:
    """A server of a store in a temporary directory."""

    def __init__(self, *args, store=None, socket=None, warmup=True):
        self.tmp = tempfile.mkdtemp(prefix="pysrv")
        self.store = store or os.path.join(self.tmp, "st")
        self.socket = socket or os.path.join(self.tmp, "s.sock")
        self.bin = sessions_binary()
        if warmup:  # creates the store, and a session in it
            subprocess.run([self.bin, "--dir", self.store, "new", "--id", "warmup"], check=True, capture_output=True)
        self.proc = subprocess.Popen(
            [self.bin, "--dir", self.store, "serve", "--socket", self.socket, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening on unix:"):
            self.proc.kill()
            raise RuntimeError(f"sessions serve: {line!r} {self.proc.stderr.read().decode()}")

    def sessions(self, *args, stdin=None):
        return subprocess.run([self.bin, "--dir", self.store, *args], input=stdin, capture_output=True)

    def stop(self):
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return self.proc.returncode, err.decode()
