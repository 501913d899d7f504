"""The ``schedlab`` process ends without tearing the interpreter down
(schedlab.cli._end_without_teardown, issue 33 item 1), and loses nothing by it: the output files
are whole, the printed result complete, the exit status kept, the exit handlers run, and a thread
still running is waited for."""

from __future__ import annotations

import json
import pstats
import subprocess
import sys
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from tests.helpers.paths import ROOT

QUICKSTART = ROOT / "src" / "schedlab" / "examples" / "quickstart.toml"
AT_EXIT = """
import atexit
from pathlib import Path

atexit.register(Path({marker!r}).write_text, "exit handler ran")
"""
THREAD = """
import threading
import time
from pathlib import Path

def late():
    time.sleep(1.0)
    Path({marker!r}).write_text("thread finished")

threading.Thread(target=late).start()
"""


def schedlab(*args: object) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "schedlab.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def plugin(tmp_path: Path, template: str) -> tuple[Path, Path]:
    marker = tmp_path / f"{len(list(tmp_path.iterdir()))}.marker"
    path = tmp_path / f"plugin_{marker.stem}.py"
    path.write_text(template.format(marker=str(marker)))
    return path, marker


def test_the_outputs_are_whole_and_the_exit_handlers_ran(tmp_path: Path) -> None:
    handler, marker = plugin(tmp_path, AT_EXIT)
    jobs, series = tmp_path / "jobs.parquet", tmp_path / "series.csv"
    done = schedlab(
        "simulate", QUICKSTART, "--arrivals", 300, "--json", "--plugin", handler,
        "--jobs-out", jobs, "--timeseries-out", series,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["metrics"]["mean_response_time"]["mean"] > 0
    assert pq.read_table(jobs).num_rows == 300
    assert pacsv.read_csv(series).column_names[:2] == ["time", "number_in_system"]
    assert marker.read_text() == "exit handler ran"


def test_a_running_thread_is_waited_for(tmp_path: Path) -> None:
    thread, marker = plugin(tmp_path, THREAD)
    done = schedlab("simulate", QUICKSTART, "--arrivals", 100, "--json", "--plugin", thread)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "thread finished"


def test_the_exit_status_of_an_error_is_kept(tmp_path: Path) -> None:
    done = schedlab("simulate", tmp_path / "missing.toml")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {tmp_path / 'missing.toml'}: no such file"]


def test_a_profile_of_the_command_is_written(tmp_path: Path) -> None:
    profile = tmp_path / "version.prof"
    command = [sys.executable, "-m", "cProfile", "-o", profile, "-m", "schedlab.cli", "version"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert pstats.Stats(str(profile)).total_calls > 0
