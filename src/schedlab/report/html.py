"""``schedlab report DIR``: one self-contained HTML page for a result directory.

For each experiment stored in DIR: the experiment spec and its base spec (the exact text that
produced the runs), a table per output metric (mean and 95% interval per point, unstable points
marked), and the figures of ``[[outputs.plots]]`` (or a default one) embedded as PNG data URIs.
The page has no external resources; a small script marks it ``data-images-ok`` once every figure
has decoded (used by the headless-browser test).
"""

from __future__ import annotations

import base64
import datetime
import html
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from schedlab.errors import SchedlabError
from schedlab.experiments.spec import ExperimentSpec, PlotSpec
from schedlab.experiments.stats import summarize
from schedlab.experiments.store import ResultStore

CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: right; }
th { background: #f4f4f4; } td.key { text-align: left; }
td.unstable { color: #b00; font-weight: bold; }
pre { background: #f7f7f7; padding: 0.8rem; overflow-x: auto; font-size: 0.8rem; }
img { max-width: 100%; border: 1px solid #eee; }
.meta { color: #666; font-size: 0.85rem; }
"""

SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.every(function (i) { return i.complete && i.naturalWidth > 0; });
  document.body.setAttribute('data-images-ok', ok ? 'yes' : 'no');
});
"""


def _fmt(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.5g}"


def _axes(rows: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for row in rows:
        for a in json.loads(row.get("axes") or "[]"):
            if a not in names:
                names.append(a)
    return [a for a in names if len({repr(r.get(a)) for r in rows}) > 1]


def _table(rows: list[dict[str, Any]], metric: str) -> str:
    by = _axes(rows) or ["policy"]
    stats = sorted(summarize(rows, by, metric), key=lambda s: [str(k) for k in s.key])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in by)
    body = []
    for s in stats:
        keys = "".join(f'<td class="key">{html.escape(str(k))}</td>' for k in s.key)
        if s.stable and not s.reliable:
            cell = f'<td>{_fmt(s.mean)}</td><td class="unstable">{html.escape(s.note)}</td>'
        elif s.stable:
            cell = f"<td>{_fmt(s.mean)}</td><td>[{_fmt(s.lo)}, {_fmt(s.hi)}]</td>"
        else:
            cell = '<td class="unstable" colspan="2">unstable (no steady state)</td>'
        body.append(f"<tr>{keys}<td>{s.n}</td>{cell}</tr>")
    return (
        f"<h3>{html.escape(metric)}</h3><table><tr>{head}<th>runs</th><th>mean</th>"
        f"<th>95% CI</th></tr>{''.join(body)}</table>"
    )


def _figure(rows: list[dict[str, Any]], plot: PlotSpec, name: str) -> str:
    from schedlab.commands.experiments import plot_points
    from schedlab.report.figures import line_plot

    points, label = plot_points(rows, x=plot.x, y=plot.y, hue=plot.hue, ratio_to=plot.ratio_to)
    with tempfile.TemporaryDirectory() as tmp:
        png = line_plot(
            points,
            Path(tmp) / "figure",
            x=plot.x,
            y=label,
            hue=plot.hue,
            logy=plot.logy,
            title=plot.title or f"{name}: {label}",
        )[0]
        data = base64.b64encode(png.read_bytes()).decode()
    return f'<p><img alt="{html.escape(label)}" src="data:image/png;base64,{data}"></p>'


def _default_plot(rows: list[dict[str, Any]]) -> PlotSpec | None:
    axes = _axes(rows)
    numeric = [a for a in axes if all(isinstance(r.get(a), int | float) for r in rows)]
    if not numeric:
        return None
    hue = "variant" if "variant" in axes else "policy"
    return PlotSpec(x=numeric[0], y="mean_response_time", hue=hue)


def build_report(directory: Path) -> str:
    store = ResultStore(directory)
    rows = store.read()
    if not rows:
        raise SchedlabError(f"{directory}: no stored runs to report")
    sections = []
    # Saved specs are found by listing the folder, never by a path built from stored values.
    spec_dir = directory / "experiments"
    saved = {p.name: p for p in spec_dir.glob("*.toml")} if spec_dir.is_dir() else {}
    names = sorted({r["experiment"] for r in rows})
    for name in names:
        mine = [r for r in rows if r["experiment"] == name]
        spec_path = saved.get(f"{name}.toml")
        parts = [f'<h2 id="{html.escape(name)}">{html.escape(name or "(runs)")}</h2>']
        stable = sum(bool(r["stable"]) for r in mine)
        parts.append(
            f'<p class="meta">{len(mine)} runs, {stable} stable; code '
            f"{html.escape(', '.join(sorted({r['code_hash'] for r in mine})))}</p>"
        )
        metrics = ["mean_response_time"]
        plots: list[PlotSpec] = []
        if spec_path is not None:
            import tomllib

            spec = ExperimentSpec.model_validate(tomllib.loads(spec_path.read_text()))
            metrics = list(spec.outputs.metrics)
            plots = list(spec.outputs.plots)
        for metric in metrics:
            parts.append(_table(mine, metric))
        default = _default_plot(mine)
        for plot in plots or ([default] if default else []):
            parts.append(_figure(mine, plot, name))
        for path, title in (
            (spec_path, "Experiment spec"),
            (saved.get(f"{name}.base.toml"), "Base simulation spec"),
        ):
            if path is not None:
                parts.append(
                    f"<h3>{title} ({html.escape(path.name)})</h3>"
                    f"<pre>{html.escape(path.read_text())}</pre>"
                )
        sections.append("\n".join(parts))
    from schedlab import __version__

    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    toc = " · ".join(f'<a href="#{html.escape(n)}">{html.escape(n)}</a>' for n in names)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>schedlab report: {html.escape(directory.name)}</title>"
        f"<style>{CSS}</style><script>{SCRIPT}</script></head><body>"
        f"<h1>schedlab report: {html.escape(str(directory))}</h1>"
        f'<p class="meta">generated {when} by schedlab {__version__}; {len(rows)} runs. '
        "Intervals are 95%: Student t over replications, or batch means for one run. Unstable "
        f"runs estimate nothing and are never averaged.</p><p>{toc}</p>"
        + "\n".join(sections)
        + "</body></html>"
    )


def write_report(directory: Path, out: Path | None = None) -> Path:
    target = out or directory / "report.html"
    target.write_text(build_report(directory), encoding="utf-8")
    return target
