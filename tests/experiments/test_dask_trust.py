"""Issue 15 item 9: Dask runs are checked against their tasks; TLS settings from a file
(docs/guarantees.md#dask)."""

from __future__ import annotations

import pytest

from schedlab.errors import SchedlabError, SpecError
from schedlab.experiments.runner import BadWorkerRow, Task, checked_row, execute, run_tasks
from schedlab.experiments.security import load_security
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import parse_spec
from tests.helpers.specs import pooled_spec


def tasks() -> list[Task]:
    return [
        Task.of(
            parse_spec(pooled_spec(1, load, arrivals=2_000, seed=3)), 0, experiment="d", point=i
        )
        for i, load in enumerate((0.3, 0.5))
    ]


def test_local_dask_cluster_stores_checked_rows(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        store = ResultStore(tmp_path)
        summary = run_tasks(tasks(), store, cluster=cluster.scheduler_address)
    assert summary.ran == 2
    assert {r["spec_hash"] for r in store.read()} == {t.hash for t in tasks()}


@pytest.mark.parametrize(
    "tamper",
    [
        lambda row, other: {**row, "spec_hash": other["spec_hash"]},  # filed under another run
        lambda row, other: {**other, "spec_hash": row["spec_hash"]},  # another run's numbers
        lambda row, other: {**row, "replication": 7},
        lambda row, other: {**row, "point": 1},
        lambda row, other: {**row, "mean_response_time": [1.0]},
        lambda row, other: [row],
    ],
)
def test_a_row_that_does_not_answer_its_task_is_refused(tamper):
    a, b = tasks()
    row, other = execute(a), execute(b)
    assert checked_row(a, row) is row
    with pytest.raises(BadWorkerRow):
        checked_row(a, tamper(row, other))


def test_security_file(tmp_path):
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("x")
    toml = tmp_path / "tls.toml"
    toml.write_text(
        'tls_ca_file = "ca.pem"\ntls_client_cert = "client.pem"\ntls_client_key = "client.key"\n'
    )
    security = load_security(toml)
    assert security.require_encryption
    assert security.tls_ca_file == str(tmp_path / "ca.pem")
    yml = tmp_path / "tls.yaml"
    yml.write_text("tls_ca_file: ca.pem\ntls_client_cert: client.pem\nrequire_encryption: false\n")
    assert load_security(yml).tls_client_cert == str(tmp_path / "client.pem")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('tls_ca_file = "ca.pem"\n', "tls.toml: tls_client_cert: missing required field"),
        (
            'tls_ca_file = "nope.pem"\ntls_client_cert = "ca.pem"\n',
            "tls.toml: tls_ca_file: no such",
        ),
        ('tls_ca_file = "ca.pem"\ntls_client_cert = "ca.pem"\ntls_ca = 1\n', "tls_ca: unknown"),
        ("tls_ca_file = [\n", "not valid toml"),
    ],
)
def test_bad_security_file_is_one_line(tmp_path, text, expected):
    (tmp_path / "ca.pem").write_text("x")
    path = tmp_path / "tls.toml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_security(path)
    message = str(info.value)
    assert expected in message and "\n" not in message
    assert isinstance(info.value, SchedlabError)
