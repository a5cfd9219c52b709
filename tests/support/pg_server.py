"""A throwaway local PostgreSQL server for tests and the benchmark.

It lives in a temporary folder, listens on a Unix socket only (no TCP port),
and is stopped and deleted afterwards. ``USSD_TEST_PG_URL`` points the tests
at an existing server instead. ``SharedPostgres`` is one such server for every
xdist worker of a run, behind a file lock: each test has a schema (or a
database) of its own on it, so one ``initdb`` serves the whole run.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    pass


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb) not found; install Debian's 'postgresql' package "
        "(make test does this when run as root)"
    )


class ThrowawayPostgres:
    def __init__(self, fsync: bool = False):
        self.fsync = fsync
        self.root: Path | None = None
        self.bindir: Path | None = None

    def _run(self, *cmd: str, timeout: float = 120) -> subprocess.CompletedProcess:
        if os.geteuid() == 0:  # the server refuses to run as root
            cmd = ("runuser", "-u", "postgres", "--", *cmd)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    def start(self) -> str:
        self.bindir = _bindir()
        self.root = Path(tempfile.mkdtemp(prefix="ussd-pg-"))
        os.chmod(self.root, 0o755)
        data, sock = self.root / "data", self.root / "sock"
        sock.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(sock, "postgres")
        done = self._run(str(self.bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                         "-E", "UTF8", "--no-sync")
        if done.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {done.stderr.strip()[:300]}")
        # Connections for every worker of a run at once (each test's receivers, watchers, dumps).
        options = f"-c listen_addresses='' -k {sock} -c fsync={'on' if self.fsync else 'off'} -c max_connections=300"
        done = self._run(str(self.bindir / "pg_ctl"), "-D", str(data), "-o", options,
                         "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")
        if done.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace")[-500:] if (self.root / "server.log").exists() else ""
            raise PostgresUnavailable(f"pg_ctl start failed: {done.stderr.strip()[:300]} {log}")
        self.url = f"postgresql://postgres@/postgres?host={sock}"
        deadline = time.time() + 30
        while time.time() < deadline:
            if self._run(str(self.bindir / "pg_isready"), "-h", str(sock), "-U", "postgres").returncode == 0:
                return self.url
            time.sleep(0.2)
        raise PostgresUnavailable("the server did not become ready in 30 s")

    def ready(self) -> bool:
        sock = self.root / "sock" if self.root is not None else None
        return bool(sock and sock.exists() and self._run(str(self.bindir / "pg_isready"), "-h", str(sock), "-U",
                                                         "postgres").returncode == 0)

    def stop(self) -> None:
        if self.root is None:
            return
        if self.bindir is not None and (self.root / "data").exists():
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None


class SharedPostgres:
    """One throwaway server for all the workers of a run, counted in and out under a file lock in
    ``folder`` (a folder the workers share): the first to ask starts it, the last to leave stops it."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.state = self.folder / "server.json"

    def _locked(self):
        lock = open(self.folder / "lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        return lock

    def _server(self, state: dict) -> ThrowawayPostgres:
        server = ThrowawayPostgres()
        server.root, server.bindir, server.url = Path(state["root"]), Path(state["bindir"]), state["url"]
        return server

    def acquire(self) -> str:
        with self._locked():
            state = json.loads(self.state.read_text()) if self.state.exists() else None
            if state is not None and not self._server(state).ready():
                self._server(state).stop()  # left by a worker that died: start again
                state = None
            if state is None:
                server = ThrowawayPostgres()
                try:
                    url = server.start()
                except BaseException:
                    server.stop()
                    raise
                state = {"url": url, "root": str(server.root), "bindir": str(server.bindir), "users": 0}
            state["users"] += 1
            self.state.write_text(json.dumps(state))
            return state["url"]

    def release(self) -> None:
        with self._locked():
            if not self.state.exists():
                return
            state = json.loads(self.state.read_text())
            state["users"] -= 1
            if state["users"] > 0:
                self.state.write_text(json.dumps(state))
                return
            self._server(state).stop()
            self.state.unlink()

    def stop_left_over(self) -> None:
        """At the end of the run (in the controller): stop a server no worker stopped."""
        with self._locked():
            if self.state.exists():
                self._server(json.loads(self.state.read_text())).stop()
                self.state.unlink()


def reset_schema(url: str) -> None:
    """Empty the database: every test starts from a fresh schema."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")


_schemas = iter(range(1, 10**9))


def fresh_schema_url(url: str) -> str:
    """A URL whose default schema is a new, empty one: a whole fresh store in milliseconds."""
    import psycopg
    from urllib.parse import quote

    name = f"t{os.getpid()}_{next(_schemas)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={name}')}"
