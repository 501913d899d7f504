"""``schedlab serve`` and ``schedlab replay`` refuse bad input in one line (exit 2) before
serving or sending anything: no token, a short token, --insecure-local on another address, a log
of another policy, no service at the URL, a speed that is no speed."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from tests.helpers.network import free_port

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None):
    result = runner.invoke(app, list(args), env={"SCHEDLAB_TOKEN": "", **(env or {})})
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ((), "no API token: give --token-file FILE or set SCHEDLAB_TOKEN"),
        (("--insecure-local", "--host", "0.0.0.0"), "--insecure-local serves 127.0.0.1 only"),
        (("--token-file", "missing.txt"), "missing.txt: cannot read the token"),
    ],
)
def test_serve_refuses_to_start_without_a_proper_token(fcfs_spec, options, says):
    code, output = run("serve", "--spec", str(fcfs_spec), *options)
    assert code == 2 and says in output and output.count("error:") == 1


def test_serve_refuses_a_short_token(fcfs_spec, tmp_path):
    short = tmp_path / "token"
    short.write_text("abc\n")
    code, output = run("serve", "--spec", str(fcfs_spec), "--token-file", str(short))
    assert code == 2 and "the token is shorter than 16 characters" in output


def test_serve_refuses_the_log_of_another_policy(fcfs_spec, tmp_path):
    log = tmp_path / "events.jsonl"
    log.write_text(
        '{"format":"schedlab-event-log","version":2,"spec_hash":"x","policy":"fcfs","options":{}}\n'
    )
    code, output = run(
        "serve",
        "--spec",
        str(fcfs_spec),
        "--insecure-local",
        "--event-log",
        str(log),
        "--port",
        str(free_port()),
    )
    assert code == 2 and f"{log}:1: the log was written with spec_hash 'x'" in output


def test_replay_says_in_one_line_that_no_service_answers(kth_table):
    url = f"http://127.0.0.1:{free_port()}"
    code, output = run("replay", str(kth_table), "--to", url, "--wait", "0.2")
    assert code == 2 and f"{url}: no answer from /healthz within 0.2 s" in output


def test_replay_refuses_a_speed_that_is_no_speed(kth_table):
    code, output = run("replay", str(kth_table), "--speed", "fast")
    assert code == 2 and "--speed: 'fast' is not a speed (e.g. 1000x, or max)" in output


@pytest.mark.parametrize("command", ["serve", "replay"])
def test_without_the_serve_extra_the_commands_say_how_to_install_it(
    fcfs_spec, tmp_path, monkeypatch, command
):
    from schedlab.commands import online

    real = online.importlib.util.find_spec
    monkeypatch.setattr(
        online.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "uvicorn" else real(name, *a),
    )
    args = (
        ["--spec", str(fcfs_spec), "--insecure-local"]
        if command == "serve"
        else [str(tmp_path / "log.parquet")]
    )
    code, output = run(command, *args)
    assert code == 2 and output.count("error:") == 1
    says = "needs the 'serve' extra (uvicorn not installed): pip install 'schedlab[serve]'"
    assert says in output


def test_insecure_local_with_a_token_set_warns_in_one_line(tmp_path, monkeypatch):
    from schedlab.service.server import ignored_token

    monkeypatch.setenv("SCHEDLAB_TOKEN", "a-token-that-is-long-enough")
    said = ignored_token(None, insecure_local=True)
    assert said == (
        "--insecure-local serves without authentication: $SCHEDLAB_TOKEN is set but not used"
    )
    assert ignored_token(None, insecure_local=False) is None
    assert "--token-file t" in ignored_token(Path("t"), insecure_local=True)
    monkeypatch.delenv("SCHEDLAB_TOKEN")
    assert ignored_token(None, insecure_local=True) is None
