"""``schedlab report DIR``: one self-contained HTML page for any result directory.

The page follows the experiment (its ``experiment.json`` when present, see
:mod:`schedlab.report.experiment_record`; otherwise what the stored runs show):

1. the title of the experiment (its name, never a local path) and its ranked findings;
2. every figure in the directory (those of the reproduction or comparison, those made with
   ``schedlab plot``, those declared by ``[[outputs.plots]]``; a default E[T]-vs-load figure when
   there is none), embedded as PNG with links to the SVG and CSV beside it;
3. wide tables per metric: one row per point of the swept axes other than the policy (e.g. per
   load), the policies side by side, best value in bold; then the ratio of each policy to the best
   (or the declared reference) at the same point, paired on common random numbers. Points are
   found from the runs' specs (:mod:`schedlab.report.sweep`), so no table pools across a swept
   axis such as the load;
4. the claims with PASS/FAIL and their evidence;
5. provenance: schedlab version, code hash, command, machine, wall time, arrivals per run,
   warm-up, seeds, replications, and the spec(s).

Human labels (:mod:`schedlab.report.labels`) everywhere. The page has no external resources; a
small script marks it ``data-images-ok`` once every figure has decoded (used by the
headless-browser test). ``build_index`` makes one page linking several result directories.
"""

from __future__ import annotations

import base64
import datetime
import html
import json
import math
import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from schedlab import outputs
from schedlab.errors import SchedlabError
from schedlab.experiments.spec import ExperimentSpec, PlotSpec
from schedlab.experiments.stats import point_order
from schedlab.experiments.store import ResultStore
from schedlab.measurement.reliability import EXACT
from schedlab.papers import PAPERS
from schedlab.report.experiment_record import ExperimentRecord, read_record
from schedlab.report.figure_tables import figure_tables_html
from schedlab.report.figures import line_plot, policy_colors
from schedlab.report.labels import Units, label, people_values, policy_label, unit_of, with_unit
from schedlab.report.points import PlotError, plot_points
from schedlab.report.sweep import hue_of, swept_axes, with_spec_columns
from schedlab.report.tables import Cell, WideTable, blocks, ratio_table, wide_table

CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222;
       padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; } h2 { margin-top: 2.5rem;
     border-bottom: 1px solid #ccc; } h3 { margin-top: 1.6rem; }
table { border-collapse: collapse; margin: 0.6rem 0 1.2rem; font-size: 0.85rem; }
th, td { border: 1px solid #ddd; padding: 0.2rem 0.5rem; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } td.key, th.key { text-align: left; }
td.best { font-weight: bold; background: #eef7ee; } td.ref { color: #666; }
td.unstable { color: #b00; } td.unreliable { color: #a60; } td.missing { color: #bbb; }
.ci { color: #777; font-size: 0.78rem; }
.pass { color: #fff; background: #2a7a2a; padding: 0 0.4rem; border-radius: 3px; }
.fail { color: #fff; background: #b00; padding: 0 0.4rem; border-radius: 3px; }
ul.evidence { margin: 0.2rem 0 0.8rem; color: #444; font-size: 0.85rem; }
pre { background: #f7f7f7; padding: 0.8rem; overflow-x: auto; font-size: 0.8rem; }
figure { margin: 1rem 0 2rem; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.85rem; }
.meta { color: #666; font-size: 0.85rem; } dl.prov { display: grid;
  grid-template-columns: max-content auto; gap: 0.2rem 1rem; font-size: 0.88rem; }
dl.prov dt { color: #555; } dl.prov dd { margin: 0; }
.summary li { margin: 0.2rem 0; } div.wide { overflow-x: auto; max-width: 100%; }
"""

SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.every(function (i) { return i.complete && i.naturalWidth > 0; });
  document.body.setAttribute('data-images-ok', ok ? 'yes' : 'no');
});
"""

FIGURE_DIR = "figures"
MAX_DEFAULT_FIGURES = 6
LONG_TABLE = 30  # rows; longer tables and secondary blocks are folded (<details>)


def _e(text: Any) -> str:
    return html.escape(str(text))


def _num(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.4g}"


def _data_uri(directory: Path, png: Path) -> str:
    data = outputs.read_bytes_inside(directory, png.relative_to(directory))
    return "data:image/png;base64," + base64.b64encode(data).decode()


def _own_files(directory: Path, pattern: str) -> list[Path]:
    """The regular files of ``directory`` matching ``pattern`` that are reached without a
    symbolic link (docs/guarantees.md#files: nothing outside the folder is read)."""
    found = []
    for path in sorted(directory.glob(pattern)):
        try:
            outputs.inside(directory, path.relative_to(directory))
        except outputs.OutputError:
            continue
        if path.is_file():
            found.append(path)
    return found


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{CSS}</style><script>{SCRIPT}</script></head>"
        f"<body>{body}</body></html>"
    )


# --- figures ---------------------------------------------------------------------------------


def _experiment_specs(directory: Path) -> dict[str, ExperimentSpec]:
    specs = {}
    for path in _own_files(directory, "experiments/*.toml"):
        if path.name.endswith(".base.toml"):
            continue
        text = outputs.read_text_inside(directory, path.relative_to(directory))
        specs[path.stem] = ExperimentSpec.model_validate(tomllib.loads(text))
    return specs


def _plot_file(
    directory: Path,
    rows: list[dict[str, Any]],
    plot: PlotSpec,
    stem: str,
    colors,
    declared_at: str | None = None,
):
    """Draw a declared or default plot into DIR/figures. A default plot the runs do not fit is
    left out (None); a declared one (``declared_at``: its file and field) is a one-line error."""
    try:
        points, y = plot_points(rows, x=plot.x, y=plot.y, hue=plot.hue, ratio_to=plot.ratio_to)
    except PlotError as exc:
        if declared_at is None:
            return None
        option, _, reason = str(exc).partition(": ")  # "--ratio-to: ..." -> field ratio_to
        if option.startswith("--") and reason:
            raise SchedlabError(f"{declared_at}.{option[2:].replace('-', '_')}: {reason}") from None
        raise SchedlabError(f"{declared_at}: {exc}") from None
    names = {str(r.get(plot.hue)) for r in rows}
    outputs.make_dirs(outputs.inside(directory, FIGURE_DIR))
    return line_plot(
        points,
        outputs.inside(directory, f"{FIGURE_DIR}/{stem}"),
        x=plot.x,
        y=y,
        hue=plot.hue,
        logy=plot.logy,
        ratio=plot.ratio_to is not None,
        ylabel=with_unit(y, Units.of(rows)),  # the runs' own time unit (s for a log)
        colors=colors,
        names={n: policy_label(n) for n in names} if plot.hue == "policy" else None,
        title=plot.title or f"{stem.removeprefix('report-')}: {label(y)}",
    )[0]


def _default_plots(
    directory: Path, name: str, rows: list[dict[str, Any]], axes: list[str], colors
) -> list[Path]:
    """E[T] against the first numeric axis per series, one figure per value of the other axes."""
    hue = hue_of(axes)
    numeric = [a for a in axes if a != hue and all(isinstance(r.get(a), int | float) for r in rows)]
    if hue is None or not numeric or "mean_response_time" not in rows[0]:
        return []
    x = "load" if "load" in numeric else numeric[0]
    rest = [a for a in axes if a not in (hue, x)]
    panels: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        panels.setdefault(tuple(r.get(a) for a in rest), []).append(r)
    out = []
    ordered = sorted(panels.items(), key=lambda kv: point_order(kv[0]))
    for key, mine in ordered[:MAX_DEFAULT_FIGURES]:
        suffix = "".join(f"-{a}={v}" for a, v in zip(rest, key, strict=True))
        stem = _safe(f"report-{name}-mean_response_time-vs-{x}{suffix}")
        where = ", ".join(
            f"{label(a)} = {v}"
            for a, v in zip(rest, people_values(key), strict=True)
            if v != "default"
        )
        plot = PlotSpec(
            x=x,
            hue=hue,
            logy=True,
            title=f"{name}: {label('mean_response_time')}" + (f" ({where})" if where else ""),
        )
        png = _plot_file(directory, mine, plot, stem, colors)
        if png is not None:
            out.append(png)
    return out


def _safe(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_")


def _figures(
    directory: Path, record: ExperimentRecord | None, made: Sequence[Path] = ()
) -> list[Path]:
    """Every PNG of the directory (outside runs/): the experiment's own first (those its record
    names, then those its spec declares), then the others (e.g. made with `schedlab plot`)."""
    found = [
        p
        for p in _own_files(directory, "**/*.png")
        if not any(
            part.startswith(".") or part == "runs" for part in p.relative_to(directory).parts
        )
    ]
    first = [directory / f for f in (record.figures if record else []) if f.endswith(".png")]
    return list(dict.fromkeys([p for p in [*first, *made] if p in found] + found))


def _figure_html(directory: Path, png: Path) -> str:
    rel = png.relative_to(directory)
    links = [f'<a href="{_e(rel.as_posix())}">PNG</a>']
    for suffix, what in ((".svg", "SVG"), (".csv", "CSV of the plotted numbers")):
        if png.with_suffix(suffix).exists():
            links.append(f'<a href="{_e(rel.with_suffix(suffix).as_posix())}">{what}</a>')
    return (
        f'<figure><img alt="{_e(png.stem)}" src="{_data_uri(directory, png)}">'
        f"<figcaption>{_e(rel.as_posix())} · {' · '.join(links)}</figcaption></figure>"
    )


# --- tables ----------------------------------------------------------------------------------


def _cell_html(cell: Cell | None, ratio: bool) -> str:
    return (
        _td(cell, ratio).replace("<td", f'<td data-runs="{cell.runs}" data-specs="{cell.specs}"', 1)
        if cell
        else _td(cell, ratio)
    )


def _td(cell: Cell | None, ratio: bool) -> str:
    if cell is None:
        return '<td class="missing">not run</td>'
    if not cell.stable:
        return (
            '<td class="unstable" title="no steady state: the run estimates nothing">unstable</td>'
        )
    if cell.reference:
        return '<td class="ref">1 (reference)</td>'
    value = f"{_num(cell.mean)}×" if ratio else _num(cell.mean)
    if not cell.reliable:  # the reason, never the interval (measurement/reliability.py)
        why = cell.note or "unreliable: its interval at this point cannot be trusted"
        reason = f'<span class="ci">{_e(why)}</span>'
        return f'<td class="unreliable" title="{_e(why)}">{value} ⚠ {reason}</td>'
    ci = (
        f' <span class="ci">[{_num(cell.lo)}, {_num(cell.hi)}]</span>'
        if math.isfinite(cell.lo) and math.isfinite(cell.hi)
        else ""
    )
    best = ' class="best"' if cell.best and not ratio else ""
    return f"<td{best}>{value}{ci}</td>"


def _table_html(whole: WideTable, hue: str | None) -> str:
    parts = []
    for i, table in enumerate(blocks(whole)):
        html_table = _block_html(table, hue)
        if i == 0 and len(table.rows) <= LONG_TABLE:
            parts.append(html_table)
            continue
        names = ", ".join(policy_label(s) if hue == "policy" else s for s in table.series)
        parts.append(
            f"<details><summary>{len(table.rows)} more points with {_e(names)}</summary>"
            f"{html_table}</details>"
            if i
            else f"<details open><summary>{len(table.rows)} points</summary>{html_table}</details>"
        )
    return "".join(parts)


def _key_values(column: str, values: list[Any]) -> list[str]:
    """A key column's cells: a file's name rather than its path (pages never show local paths),
    numbers and unset parameters as people read them (:func:`people_values`)."""
    if column.endswith(".path"):
        values = [Path(v).name if isinstance(v, str) else v for v in values]
    return people_values(values)


def _block_html(table: WideTable, hue: str | None) -> str:
    head = "".join(f'<th class="key">{_e(label(k))}</th>' for k in table.keys)
    head += "".join(
        f"<th>{_e(policy_label(s) if hue == 'policy' else s if hue else label(table.metric))}</th>"
        for s in table.series
    )
    shown = [_key_values(k, [key[i] for key, _ in table.rows]) for i, k in enumerate(table.keys)]
    body = []
    for j, (_, cells) in enumerate(table.rows):
        keys = "".join(f'<td class="key">{_e(column[j])}</td>' for column in shown)
        body.append(
            f"<tr>{keys}{''.join(_cell_html(cells.get(s), table.ratio) for s in table.series)}</tr>"
        )
    return f"<div class='wide'><table><tr>{head}</tr>{''.join(body)}</table></div>"


def _tables_html(
    rows: list[dict[str, Any]], axes: list[str], metrics: Sequence[str], reference: str | None
) -> str:
    hue = hue_of(axes)
    units = Units.of(rows)
    parts = []
    for metric in metrics:
        if not any(r.get(metric) is not None for r in rows):
            continue
        table = wide_table(rows, axes, hue, metric)
        by = f", {label(hue)} side by side" if hue else ""
        what = "Value of the one replay" if metric in EXACT else "Mean and 95% interval"
        parts.append(
            f"<h3>{_e(with_unit(metric, units))}{_e(by)}</h3><p class='meta'>{what} per point, "
            f"in {_e(unit_of(metric, units) or 'no unit')}; best in bold. "
            f"Points: {_e(', '.join(label(a) for a in axes) or 'one')}.</p>"
            + _table_html(table, hue)
        )
        if hue and len(table.series) > 1:
            ratios = ratio_table(rows, axes, hue, metric, reference)
            ref = (
                f"{policy_label(reference) if hue == 'policy' else reference}"
                if reference
                else "the best at each point"
            )
            parts.append(
                f"<h3>{_e(label(metric))}: ratio to {_e(ref)}</h3><p class='meta'>Paired on "
                "common random numbers (same job sequence), 95% interval.</p>"
                + _table_html(ratios, hue)
            )
    return "\n".join(parts)


# --- claims and provenance -------------------------------------------------------------------


def _claims_html(record: ExperimentRecord | None) -> str:
    if not record or not record.claims:
        return ""
    items = []
    for c in record.claims:
        verdict = c.verdict or ("PASS" if c.passed else "FAIL")
        badge = f'<span class="{"pass" if c.passed else "fail"}">{verdict}</span>'
        evidence = "".join(f"<li>{_e(e.strip())}</li>" for e in c.evidence.split("; ") if e.strip())
        items.append(f"<p>{badge} {_e(c.text)}</p><ul class='evidence'>{evidence}</ul>")
    passed = sum((c.verdict or "PASS") == "PASS" and c.passed for c in record.claims)
    return f'<h2 id="claims">Claims: {passed} of {len(record.claims)} pass</h2>' + "".join(items)


def _distinct(values: Sequence[Any]) -> str:
    seen = sorted({v for v in values if v is not None}, key=lambda v: point_order((v,)))
    return ", ".join(str(v) for v in seen) if seen else "–"


def _run_settings(rows: list[dict[str, Any]]) -> dict[str, str]:
    from schedlab.model.spec import RunSpec

    runs = [json.loads(r["spec_json"]).get("run", {}) for r in rows if r.get("spec_json")]
    default = RunSpec()
    reps: dict[str, int] = {}
    for r in rows:
        reps[r.get("spec_json", "")] = reps.get(r.get("spec_json", ""), 0) + 1
    return {
        "runs": f"{len(rows)} ({sum(bool(r.get('stable')) for r in rows)} stable)",
        "arrivals per run": _distinct([f"{v:,}" for v in (r.get("arrivals") for r in rows) if v]),
        "warm-up (fraction of arrivals discarded)": _distinct(
            [s.get("warmup", default.warmup) for s in runs]
        ),
        "seeds": _distinct([s.get("seed", default.seed) for s in runs]),
        "replications per point": _distinct(list(reps.values())),
        "batches per run (batch-means intervals)": _distinct(
            [s.get("batches", default.batches) for s in runs]
        ),
        "simulation time, sum over runs": f"{sum(r.get('wall_s') or 0 for r in rows):.1f} s",
    }


def _provenance_html(
    directory: Path, record: ExperimentRecord | None, rows: list[dict[str, Any]]
) -> str:
    items: dict[str, str] = {}
    if record:
        p = record.provenance
        items.update(
            {
                "command": p.command,
                "schedlab version": p.schedlab_version,
                "code hash": p.code_hash,
                "started": p.started,
                "wall time of that command": f"{p.wall_s:.1f} s",
                "machine": f"{p.machine}, {p.cpus} CPU(s), {p.platform}, Python {p.python}",
            }
        )
        if record.scale:
            items["scale"] = record.scale
    if rows:
        items.setdefault("schedlab version", _distinct([r.get("schedlab_version") for r in rows]))
        items.setdefault("code hash", _distinct([r.get("code_hash") for r in rows]))
        items["code hash of the runs"] = _distinct([r.get("code_hash") for r in rows])
        items.update(_run_settings(rows))
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items.items())
    parts = [f'<h2 id="provenance">Provenance</h2><dl class="prov">{dl}</dl>']
    if record and record.notes:
        parts.append(
            "<h3>Notes</h3><ul>" + "".join(f"<li>{_e(n)}</li>" for n in record.notes) + "</ul>"
        )
    shown = False
    for path in _own_files(directory, "experiments/*.toml"):
        text = outputs.read_text_inside(directory, path.relative_to(directory))
        parts.append(f"<h3>Spec {_e(path.name)}</h3><pre>{_e(text)}</pre>")
        shown = True
    if not shown and rows and rows[0].get("spec_json"):
        axes = swept_axes(rows)
        first = json.dumps(json.loads(rows[0]["spec_json"]), indent=2, sort_keys=True)
        parts.append(
            f"<h3>Spec of one run</h3><p class='meta'>The runs differ in: "
            f"{_e(', '.join(axes) or 'nothing')} (every run's full spec is in its Parquet "
            f"row, column spec_json).</p><pre>{_e(first)}</pre>"
        )
    return "\n".join(parts)


# --- the page --------------------------------------------------------------------------------


def _title(directory: Path, record: ExperimentRecord | None, rows: list[dict[str, Any]]) -> str:
    if record:  # a reproduction's --quick run says so (its scale starts "quick variant")
        return record.name + (" (quick variant)" if record.scale.startswith("quick") else "")
    names = sorted({r.get("experiment") or "" for r in rows} - {""})
    return ", ".join(names) if names else directory.resolve().name


def build_report(directory: Path) -> str:
    record = read_record(directory)
    rows = with_spec_columns(ResultStore(directory).read())
    if not rows and record is None:
        raise SchedlabError(f"{directory}: no stored runs to report")
    title = _title(directory, record, rows)
    specs = _experiment_specs(directory)
    experiments = sorted({r.get("experiment") or "" for r in rows})
    colors = policy_colors(str(r.get(hue_of(swept_axes(rows)) or "policy")) for r in rows)
    made: list[Path] = []
    for name in experiments:
        mine = [r for r in rows if (r.get("experiment") or "") == name]
        declared = specs[name].outputs.plots if name in specs else []
        for i, plot in enumerate(declared):
            at = f"{directory / 'experiments' / name}.toml: outputs.plots[{i}]"
            png = _plot_file(directory, mine, plot, _safe(f"report-{name}-{i + 1}"), colors, at)
            made += [png] if png else []
    figures = _figures(directory, record, made)
    if not figures:
        for name in experiments:
            mine = [r for r in rows if (r.get("experiment") or "") == name]
            _default_plots(directory, name or title, mine, swept_axes(mine), colors)
        figures = _figures(directory, record)
    head = [f"<h1>{_e(title)}</h1>"]
    if record and record.title:
        head.append(f"<p><b>{_e(record.title)}</b>")
        if record.paper:
            paper = PAPERS[record.paper].cite if record.paper in PAPERS else record.paper
            head.append(f" — {_e(paper)}, {_e(record.figure)}")
        head.append("</p>")
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    from schedlab._version import __version__

    head.append(
        f'<p class="meta">Report generated {when} by schedlab {__version__}. Intervals are 95%: '
        "Student t over replications, or batch means within one run. Unstable runs estimate "
        "nothing and are never averaged. Sections: <a href='#figures'>figures</a> · "
        "<a href='#tables'>tables</a> · <a href='#claims'>claims</a> · "
        "<a href='#provenance'>provenance</a></p>"
    )
    if record and record.summary:
        head.append(
            "<h2>Findings</h2><ul class='summary'>"
            + "".join(f"<li>{_e(s)}</li>" for s in record.summary)
            + "</ul>"
        )
    body = head
    body.append('<h2 id="figures">Figures</h2>')
    body += [_figure_html(directory, p) for p in figures] or ["<p>No figure.</p>"]
    body.append('<h2 id="tables">Tables</h2>')
    metrics = (record.metrics if record and record.metrics else None) or ["mean_response_time"]
    plotted = [f for f in (record.figures if record else []) if f.endswith(".csv")]
    if record and record.kind == "reproduction" and plotted:  # the figures' own metrics
        body.append(figure_tables_html(directory, plotted, Units.of(rows)))
        experiments = []
    for name in experiments:
        mine = [r for r in rows if (r.get("experiment") or "") == name]
        exp_metrics = list(specs[name].outputs.metrics) if name in specs else metrics
        if len(experiments) > 1:
            body.append(f"<h3>Experiment {_e(name or '(unnamed)')}</h3>")
        body.append(
            _tables_html(mine, swept_axes(mine), exp_metrics, record.reference if record else None)
        )
    body.append(_claims_html(record))
    body.append(_provenance_html(directory, record, rows))
    return _page(f"{title} — schedlab report", "\n".join(body))


def write_report(directory: Path, out: Path | None = None) -> Path:
    """Write the report (default ``DIR/report.html``; never through a link or over a special
    file)."""
    target = outputs.check_target(out or outputs.inside(directory, "report.html"))
    return outputs.write_text(target, build_report(directory))


def build_index(reports: Sequence[tuple[Path, Path]], index: Path) -> str:
    """One page linking the reports of several result directories: (directory, report) pairs."""
    rows = []
    for directory, page in reports:
        record = read_record(directory)
        runs = ResultStore(directory).files()
        title = _title(directory, record, ResultStore(directory).read() if record is None else [])
        claims = (
            f"{sum(c.passed for c in record.claims)} of {len(record.claims)} pass"
            if record and record.claims
            else "–"
        )
        figures = _figures(directory, record)
        thumb = (
            f'<img style="width:260px" alt="{_e(figures[0].stem)}" '
            f'src="{_data_uri(directory, figures[0])}">'
            if figures
            else ""
        )
        href = Path(os.path.relpath(page.resolve(), index.resolve().parent)).as_posix()
        rows.append(
            f'<tr><td class="key"><a href="{_e(href)}">{_e(title)}</a><br>'
            f'<span class="meta">{_e(record.title if record else "")}</span></td>'
            f"<td>{_e(record.kind if record else 'runs')}</td><td>{len(runs)}</td>"
            f"<td>{_e(claims)}</td><td>{len(figures)}</td><td>{thumb}</td></tr>"
        )
    table = (
        "<table><tr><th class='key'>experiment</th><th>kind</th><th>runs</th><th>claims</th>"
        f"<th>figures</th><th>first figure</th></tr>{''.join(rows)}</table>"
    )
    return _page("schedlab results", f"<h1>schedlab results</h1>{table}")
