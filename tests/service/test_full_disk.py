"""503 means not written (issue 45, item 3): an event whose line could not be made durable is
answered 503 and is not in the log, so a restart does not have it -- with a failed fsync
injected, and on a real full file system (a small tmpfs, mounted when the tests run as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from schedlab.service.app import create_app
from schedlab.service.server import start
from tests.service.conftest import TOKEN

with warnings.catch_warnings():  # starlette's TestClient warns about httpx 0.28
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _served(spec: Path, log: Path):
    service = start(spec, None, log).service
    return service, TestClient(create_app(service, TOKEN), raise_server_exceptions=False)


def _restarted_ids(spec: Path, log: Path, tmp_path: Path) -> set[str]:
    """The jobs (running or waiting) of a restart on a copy of ``log``."""
    copy = tmp_path / "restarted.jsonl"
    shutil.copyfile(log, copy)
    service = start(spec, None, copy).service
    state = service.scheduler.state()
    service.log.close()
    return {str(r.id) for r in state.running} | {str(j) for j in state.queue}


def test_an_event_whose_fsync_failed_is_answered_503_and_is_not_in_the_log(
    fcfs_spec, tmp_path, monkeypatch
):
    log = tmp_path / "events.jsonl"
    service, api = _served(fcfs_spec, log)
    assert api.post("/jobs", json={"id": "a", "need": 2, "at": 1}, headers=AUTH).status_code == 200
    durable = log.read_bytes()
    real = os.fsync

    def failing(fd: int) -> None:
        if fd == service.log._fd:
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing)
    response = api.post("/jobs", json={"id": "b", "need": 1, "at": 2}, headers=AUTH)
    monkeypatch.undo()
    assert response.status_code == 503 and "could not be written" in response.json()["error"]
    assert log.read_bytes() == durable  # the whole line the write left was cut off
    assert _restarted_ids(fcfs_spec, log, tmp_path) == {"a"}
    service.commit.stop()


@pytest.fixture
def small_file_system(tmp_path):
    """A 64 KiB tmpfs (root only; skipped elsewhere), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    point = tmp_path / "small"
    point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(point)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=True)


def test_on_a_full_file_system_every_503_is_absent_from_the_log_and_every_200_present(
    fcfs_spec, small_file_system, tmp_path
):
    """The log on a tmpfs filled up to its last page: events are accepted until a write finds no
    room (the kernel writes what fits in the log's last page: a short write), from then on every
    event is 503. The log holds exactly the events answered 200, each line whole."""
    log = small_file_system / "events.jsonl"
    service, api = _served(fcfs_spec, log)
    filler = small_file_system / "filler"
    sink = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:  # fill every page but the log's
        while os.write(sink, b"x" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(sink)
    answers = {}
    for number in range(200):
        job = {"id": f"j{number}", "need": 1, "at": float(number)}
        answers[job["id"]] = api.post("/jobs", json=job, headers=AUTH).status_code
        if answers[job["id"]] == 503:
            break
    accepted = {job for job, status in answers.items() if status == 200}
    assert list(answers.values())[-1] == 503 and len(accepted) >= 1, answers
    data = log.read_bytes()
    assert data.endswith(b"\n")
    assert len(data.split(b"\n")) - 2 == len(accepted)  # the header and one line per 200
    service.commit.stop()
    service.log.close()
    assert _restarted_ids(fcfs_spec, log, tmp_path) == accepted  # no job answered 503
