"""Issue 32 item 5: every figure a reproduction saves reads like a paper's: each axis label has
a unit in parentheses or is dimensionless by an explicit list, the papers' symbols are math text
(no raw "F^g", "F*", "rho"), and the title cites the paper by author and year.

The figures are caught as they are saved (``Figure.savefig``), after schedlab typeset them. The
reproductions run at their --quick scale or smaller (one per figure kind: line plots of queue
sizes over time, of rewards, of ratios against the load, error-bar plots against the analysis)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib.figure
import pytest

from schedlab.papers import PAPERS
from schedlab.report.figures import math_text

# Axis labels of quantities without a unit: a load, a count of servers, a scale factor, a ratio.
DIMENSIONLESS = (
    "load",
    "offered load",
    "number of servers",
    "workload scale factor",
    "traffic intensity",
    "traffic scaling",
)
UNIT = re.compile(r"\([^()]+\)$")  # "mean queue size (jobs)", "time (s)"
RAW_SYMBOLS = re.compile(r"F\^g|F\*|\brho\b|\bmu_|\blambda|\bzeta\b|\balpha\b|ρ|λ")
PAPER_KEY = re.compile(r"\b(" + "|".join(PAPERS) + r")\b")


@dataclass(frozen=True)
class Saved:
    titles: list[str]
    axis_labels: list[str]
    legend: list[str]


def has_unit(text: str) -> bool:
    plain = re.sub(r"\$[^$]*\$", "x", text).strip()
    return bool(UNIT.search(plain)) or " / " in plain or plain.startswith(DIMENSIONLESS)


def raw_symbols(text: str) -> list[str]:
    return RAW_SYMBOLS.findall(re.sub(r"\$[^$]*\$", "", text))


def test_the_checks_tell_good_labels_from_bad():
    assert has_unit("mean queue size (jobs)") and has_unit("load $\\rho$")
    assert has_unit("E[T] / E[T] of SRPT-1") and not has_unit("mean queue size")
    assert raw_symbols("global greedy F^g, rho = 0.9") == ["F^g", "rho"]
    assert raw_symbols(math_text("global greedy F^g, rho = 0.9, F*")) == []
    assert math_text("psychas2022 Fig. 3: x").startswith("Psychas & Ghaderi 2022, Fig. 3")


TINY = {  # the figure spec's fields -> value, to keep each run small
    "psychas2018-fig3": {},
    "psychas2022-fig3": {"quick_sizes": (10, 20), "quick_horizon": 12.0, "quick_bound_samples": 2},
    "grosof2023-fig3": {"loads": (0.5, 0.9), "quick_arrivals": 4000},
    "berg2020-fig6": {"quick_sim_xs": (2,), "xs": (1, 2, 3)},
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_every_figure_has_units_math_text_and_the_papers_citation(name, tmp_path, monkeypatch):

    from schedlab.reproduce.driver import resized
    from schedlab.reproduce.registry import Context, get_reproduction, run_reproduction

    entry = resized(get_reproduction(name), **TINY[name])
    saved: list[Saved] = []
    savefig = matplotlib.figure.Figure.savefig

    def catch(fig, *args, **kwargs):
        titles = [fig._suptitle.get_text()] if fig._suptitle is not None else []
        axis_labels, legend = [], []
        for ax in fig.axes:
            titles.append(ax.get_title())
            axis_labels += [t for t in (ax.get_xlabel(), ax.get_ylabel()) if t]
            if ax.get_legend() is not None:
                legend += [t.get_text() for t in ax.get_legend().get_texts()]
        saved.append(Saved([t for t in titles if t], axis_labels, legend))
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", catch)
    run_reproduction(entry, Context(quick=True, out=Path(tmp_path), workers=1))
    assert saved, f"{name} saved no figure"
    cite = PAPERS[entry.paper].cite
    for fig in saved:
        assert fig.axis_labels and all(has_unit(t) for t in fig.axis_labels), fig
        for text in [*fig.titles, *fig.axis_labels, *fig.legend]:
            assert raw_symbols(text) == [], (text, fig)
            assert not PAPER_KEY.search(text) and "Paper 0" not in text, (text, fig)
        assert any(t.startswith(cite) for t in fig.titles), (cite, fig.titles)


def test_plot_of_runs_in_seconds_says_seconds(tmp_path, monkeypatch):
    """`schedlab plot` of runs whose time unit is the second (a log's) labels its y axis "(s)",
    not the model's "time units"."""
    import json

    from typer.testing import CliRunner

    from schedlab.cli import app
    from schedlab.experiments.store import ResultStore

    store = ResultStore(tmp_path)
    for i, (policy, load, mean) in enumerate(
        [("fcfs", 0.5, 10.0), ("fcfs", 0.7, 20.0), ("easy-backfill", 0.5, 8.0)]
    ):
        for seed in (1, 2):
            spec = {"policy": {"name": policy}, "workload": {"load": load}, "run": {"seed": seed}}
            store.write(
                {
                    "spec_hash": f"h{i}{seed}",
                    "spec_json": json.dumps(spec),
                    "policy": policy,
                    "load": load,
                    "mean_response_time": mean + seed,
                    "stable": True,
                    "reliable": True,
                    "time_unit": "s",
                    "experiment": "log",
                    "point": i,
                    "replication": seed - 1,
                    "mean_response_time_lo": mean + seed - 1,
                    "mean_response_time_hi": mean + seed + 1,
                }
            )
    labels: list[str] = []
    savefig = matplotlib.figure.Figure.savefig

    def catch(fig, *args, **kwargs):
        labels.extend(ax.get_ylabel() for ax in fig.axes)
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", catch)
    args = ["plot", str(tmp_path), "--x", "load", "--y", "mean_response_time"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert labels and set(labels) == {"mean response time E[T] (s)"}, labels
