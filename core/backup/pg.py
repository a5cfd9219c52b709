"""PostgreSQL stores in a backup: a ``pg_dump`` custom-format member, read back with ``pg_restore``.

The dump and the manifest's figures come from one moment: the store's write lock is held while a
snapshot is exported and the figures are read, then ``pg_dump --snapshot`` dumps exactly that
snapshot while the receiver goes on writing. The password never goes on a command line (where
``ps`` shows it to every user): the tools get it through ``PGPASSWORD`` in their environment,
and every message they print is masked before it is shown.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from core.i18n import N_, MarkedError
from core.urls import mask_in

DUMP = "store.pgdump"
TOOL_TIMEOUT = 6 * 3600.0
SYSTEM_SCHEMAS = "('pg_catalog', 'information_schema')"


class PgError(MarkedError):
    """A tool or the server refused; ``cannot`` says whether it is exit 2 (cannot run) or 1 (bad)."""

    def __init__(self, words: str, cannot: bool = True, **values: object):
        super().__init__(words, **values)
        self.cannot = cannot


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise PgError(N_("%(name)s is not installed: install Debian's postgresql-client (the same major version"
                         " as the server, or newer)"), name=name)
    return found


def conninfo_and_env(url: str) -> tuple[str, dict]:
    """``(conninfo, env)`` for a libpq tool: the password (from the URL) only in ``PGPASSWORD``."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        params = conninfo_to_dict(url)
    except Exception as exc:  # noqa: BLE001 - psycopg's ProgrammingError on a URL libpq cannot parse
        raise PgError(N_("the PostgreSQL URL does not read: %(reason)s"), reason=mask_in(str(exc), url)) from None
    env = dict(os.environ)
    password = params.pop("password", None)
    if password is not None:
        env["PGPASSWORD"] = str(password)
    return make_conninfo(**{k: str(v) for k, v in params.items()}), env


def run_tool(url: str, argv: list[str], what: str, cannot: bool = True) -> subprocess.CompletedProcess:
    """Run a libpq tool against ``url``'s database (``-d`` conninfo without the password)."""
    conninfo, env = conninfo_and_env(url)
    try:
        done = subprocess.run([*argv, "-d", conninfo], env=env, capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise PgError(N_("%(what)s took more than %(seconds)s s and was stopped"),
                      cannot, what=what, seconds=int(TOOL_TIMEOUT)) from None
    if done.returncode != 0:
        raise PgError(N_("%(what)s failed: %(reason)s"), cannot, what=what, reason=_first_words(done.stderr, url))
    return done


def _first_words(stderr: str, url: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = "; ".join(lines[:2]) or "no message"
    return mask_in(text, url)[:400]


def connect(url: str):
    import psycopg

    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=30)
    except Exception as exc:  # noqa: BLE001 - psycopg.OperationalError and kin: one masked line
        raise PgError(N_("cannot reach the PostgreSQL database: %(reason)s"), reason=_first_words(str(exc), url)) from None


def current_schema(con) -> str:
    return con.execute("SELECT current_schema()").fetchone()[0]


def user_tables(con) -> tuple[int, bool]:
    """(relations outside the system schemas, whether a store's ``schema_version`` is among them)."""
    rows = con.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE n.nspname NOT IN {SYSTEM_SCHEMAS} AND n.nspname NOT LIKE 'pg\\_toast%' "
        "AND n.nspname NOT LIKE 'pg\\_temp%' AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')").fetchall()
    return len(rows), any(r[0] == "schema_version" for r in rows)


def dump(url: str, dest: Path, describe) -> dict:
    """Dump the store's database into ``dest``; return ``describe()``'s figures of the same moment.

    The write lock (the advisory lock every write transaction takes) is held from before the
    snapshot is exported until the figures are read, so both see one state of the store."""
    from core.store.backend import PG_WRITE_LOCK

    pg_dump = tool("pg_dump")
    con = connect(url)
    try:
        schema = current_schema(con)
        con.execute("SELECT pg_advisory_lock(%s)", (PG_WRITE_LOCK,))
        try:
            con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            snapshot = con.execute("SELECT pg_export_snapshot()").fetchone()[0]
            described = describe()
        finally:
            con.execute("SELECT pg_advisory_unlock(%s)", (PG_WRITE_LOCK,))
        # The exported snapshot stays valid while this transaction is open: writers go on meanwhile.
        run_tool(url, [pg_dump, "--format=custom", "--compress=6", f"--snapshot={snapshot}", "--file", str(dest)],
                 "pg_dump")
        con.execute("COMMIT")
    finally:
        con.close()
    return {**described, "pg_schema": schema}


def listing(dump_file: Path) -> int:
    """The entries of a dump's table of contents; a dump that does not read is a PgError (exit 1)."""
    pg_restore = tool("pg_restore")
    done = subprocess.run([pg_restore, "--list", str(dump_file)], capture_output=True, text=True,
                          timeout=TOOL_TIMEOUT)
    if done.returncode != 0:
        raise PgError(N_("the PostgreSQL dump does not read: %(reason)s"), reason=_first_words(done.stderr, ''), cannot=False)
    return sum(1 for line in done.stdout.splitlines() if line.strip() and not line.startswith(";"))


def restore_into(url: str, dump_file: Path) -> None:
    """``pg_restore`` in one transaction: a restore that fails half way leaves the database empty."""
    pg_restore = tool("pg_restore")
    run_tool(url, [pg_restore, "--no-owner", "--no-acl", "--single-transaction", "--exit-on-error",
                   str(dump_file)], "pg_restore")


def with_database(url: str, name: str, schema: str | None) -> str:
    """``url`` naming another database on the same server (and ``schema`` first on the search path)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ("dbname", "options")]
    if schema and schema != "public":
        query.append(("options", f"-csearch_path={schema}"))
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, urlencode(query), ""))


class Scratch:
    """A database made for one check on ``server``'s server, dropped afterwards."""

    def __init__(self, server: str, schema: str | None):
        self.server, self.schema = server, schema
        self.name = f"ussd_verify_{secrets.token_hex(6)}"
        self.url: str | None = None

    def __enter__(self) -> str:
        con = connect(self.server)
        try:
            con.execute(f'CREATE DATABASE "{self.name}"')
        except Exception as exc:  # noqa: BLE001 - no CREATEDB right, and the like: said by the caller
            raise PgError(N_("cannot make a scratch database there: %(reason)s"),
                          reason=_first_words(str(exc), self.server)) from None
        finally:
            con.close()
        self.url = with_database(self.server, self.name, self.schema)
        return self.url

    def __exit__(self, *exc) -> None:
        try:
            con = connect(self.server)
        except PgError:
            return
        try:
            con.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        except Exception:  # noqa: BLE001 - a scratch database left behind is named ussd_verify_*
            pass
        finally:
            con.close()
