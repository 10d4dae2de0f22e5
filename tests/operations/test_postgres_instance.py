"""The PostgreSQL instance variant (deploy/postgres/dagster.yaml) against a real PostgreSQL server.

A throw-away server is initialised in a temp folder and listens on 127.0.0.1 on a free port only
(no Unix socket). PostgreSQL refuses to run as root, so under root the server runs as the
``postgres`` system user (created by the Debian package) through ``runuser`` (or ``su``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

REPO = Path(__file__).resolve().parents[2]
INSTANCE_YAML = REPO / "deploy" / "postgres" / "dagster.yaml"
DAGSTER = Path(sys.executable).parent / "dagster"
AS_OF = "2024-07-01T00:00:00Z"
DB_NAME = "tradingmem_dagster"
PG_USER = "dagster"
PG_PASSWORD = "tradingmem-test-only"
SERVER_USERS = ("postgres", "nobody")


def _pg_bindir() -> Path | None:
    """The folder of initdb/pg_ctl: Debian keeps them in /usr/lib/postgresql/<major>/bin, off PATH."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]), reverse=True
    )
    if candidates:
        return Path(candidates[0]).parent
    found = shutil.which("initdb")
    return Path(found).parent if found and shutil.which("pg_ctl") else None


def _server_user() -> str | None:
    """None when we may run the server ourselves; else the unprivileged user it runs as."""
    if os.geteuid() != 0:
        return None
    for name in SERVER_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    pytest.skip("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL")


def _as_user(user: str | None, cmd: list[str]) -> list[str]:
    if user is None:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *cmd]
    if shutil.which("su"):
        return ["su", "-s", "/bin/sh", user, "-c", shlex.join(cmd)]
    pytest.skip("running as root without runuser or su: cannot start PostgreSQL as an unprivileged user")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str

    def env(self, db_name: str) -> dict[str, str]:
        """The variables deploy/postgres/dagster.yaml reads."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": db_name,
        }

    def connect(self, db_name: str = "postgres"):
        import psycopg2

        return psycopg2.connect(
            host=self.host, port=self.port, user=self.user, password=self.password, dbname=db_name
        )


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, pg_ctl) are not installed: install the Debian "
            "package 'postgresql' (.ci/run does when it can)"
        )
    user = _server_user()
    # not under pytest's tmp_path: that folder is private to the test user, the server user
    # must own its data folder
    root = Path(tempfile.mkdtemp(prefix="tradingmem-pg-"))
    data = root / "data"
    pwfile = root / "pwfile"
    pwfile.write_text(PG_PASSWORD + "\n", encoding="utf-8")
    if user is not None:
        shutil.chown(root, user)
        shutil.chown(pwfile, user)
    started = False
    try:
        init = subprocess.run(
            _as_user(
                user,
                [
                    str(bindir / "initdb"),
                    "-D", str(data),
                    "-U", PG_USER,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "-E", "UTF8",
                    "--no-instructions",
                ],
            ),
            cwd=root, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert init.returncode == 0, f"initdb failed:\n{init.stdout[-2000:]}\n{init.stderr[-2000:]}"
        for _attempt in range(3):  # the free port may be taken between probe and bind
            port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories='' "
                "-c fsync=off -c full_page_writes=off -c synchronous_commit=off"
            )
            proc = subprocess.run(
                _as_user(
                    user,
                    [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"),
                     "-w", "-t", "60", "-o", options, "start"],
                ),
                cwd=root, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            if proc.returncode == 0:
                started = True
                break
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        assert started, f"PostgreSQL did not start: {proc.stderr}\n{log[-2000:]}"
        yield PostgresServer(host="127.0.0.1", port=port, user=PG_USER, password=PG_PASSWORD)
    finally:
        if started or (data / "postmaster.pid").exists():  # also a server that came up too late
            subprocess.run(
                _as_user(user, [str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
                cwd=root, capture_output=True, timeout=60,
            )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_runs(postgres: PostgresServer, tmp_path_factory) -> dict:
    """A demo world run by `dagster job execute` (main job, then one audit pass) on the PG instance."""
    from tradingmem_assets.demo import write_demo_world

    con = postgres.connect()
    con.autocommit = True
    with con.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{DB_NAME}"')
    con.close()

    root = tmp_path_factory.mktemp("pg_instance")
    home = root / "dagster_home"
    home.mkdir()
    shutil.copy(INSTANCE_YAML, home / "dagster.yaml")
    write_demo_world(root / "landing", scale=0.002)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRADINGMEM_", "DAGSTER_"))}
    env.update(postgres.env(DB_NAME))
    env.update(
        DAGSTER_HOME=str(home),
        TRADINGMEM_DB=str(root / "tradingmem.duckdb"),
        TRADINGMEM_LANDING_DIR=str(root / "landing"),
        TRADINGMEM_AS_OF=AS_OF,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    outputs = {}
    for job in ("trading_memory_job", "methodology_audit_job"):
        started = time.monotonic()
        proc = subprocess.run(
            [str(DAGSTER), "job", "execute", "-m", "tradingmem_assets.definitions", "-j", job],
            cwd=root, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, f"{job} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        outputs[job] = time.monotonic() - started
    # turning a schedule on from the CLI writes its state to the schedule storage
    proc = subprocess.run(
        [str(DAGSTER), "schedule", "start", "-m", "tradingmem_assets.definitions", "trading_memory_schedule"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, f"schedule start failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return {"env": env, "home": home, "seconds": outputs}


def test_shipped_instance_yaml_keeps_the_single_writer_queue_and_reads_pg_settings_from_env():
    import yaml

    shipped = yaml.safe_load(INSTANCE_YAML.read_text(encoding="utf-8"))
    embedded = yaml.safe_load((REPO / "dagster.yaml").read_text(encoding="utf-8"))
    assert shipped["concurrency"] == embedded["concurrency"]
    db = shipped["storage"]["postgres"]["postgres_db"]
    assert db["scheme"] == "postgresql+psycopg2"  # the driver dagster-postgres installs
    assert {k: v["env"] for k, v in db.items() if k != "scheme"} == {
        "hostname": "DAGSTER_PG_HOST",
        "port": "DAGSTER_PG_PORT",
        "username": "DAGSTER_PG_USER",
        "password": "DAGSTER_PG_PASSWORD",
        "db_name": "DAGSTER_PG_DB",
    }


def test_both_jobs_succeed_and_their_runs_are_stored_in_postgres(pg_runs, postgres, monkeypatch):
    from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage

    for key in [k for k in os.environ if k.startswith(("TRADINGMEM_", "DAGSTER_PG_"))]:
        monkeypatch.delenv(key)
    for key in ("DAGSTER_HOME", *postgres.env(DB_NAME)):
        monkeypatch.setenv(key, pg_runs["env"][key])
    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        for job in ("trading_memory_job", "methodology_audit_job"):
            records = instance.get_run_records(filters=dg.RunsFilter(job_name=job))
            assert [r.dagster_run.status for r in records] == [dg.DagsterRunStatus.SUCCESS], job
        audit = instance.fetch_materializations(dg.AssetKey("methodology_audit_reports"), limit=1).records
        assert audit and audit[0].asset_materialization.metadata["learning_tables_sha256_before"]
        # `dagster schedule start` stored the schedule's state in the PostgreSQL schedule storage
        states = {s.name: s.status for s in instance.all_instigator_state()}
        assert "trading_memory_schedule" in states
        assert states["trading_memory_schedule"].value == "RUNNING"

    con = postgres.connect(DB_NAME)
    try:
        with con.cursor() as cur:
            cur.execute("SELECT pipeline_name, status FROM runs ORDER BY create_timestamp")
            assert cur.fetchall() == [("trading_memory_job", "SUCCESS"), ("methodology_audit_job", "SUCCESS")]
            cur.execute("SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'")
            assert cur.fetchone()[0] > 10
            cur.execute("SELECT instigator_type, status FROM instigators")
            assert ("SCHEDULE", "RUNNING") in cur.fetchall()
    finally:
        con.close()
