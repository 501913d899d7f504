"""The table of a figure: the numbers it plots (the CSV written beside it), so a report's table
always shows the figure's own metric with its unit (a queue size, a reward, a ratio), never a
metric the figure does not show.

A points CSV (:func:`schedlab.report.figures.write_csv`: series, x, y, its 95% interval,
stable, reliable, analytic) becomes one row per x and one column per series, each cell the mean
with its interval; any other CSV beside a figure (a heat map's cells, a table of points) is shown
row by row. Headers are human labels (:mod:`schedlab.report.labels`), keys are formatted for
people (:func:`schedlab.report.labels.people_values`).
"""

from __future__ import annotations

import csv
import html
import io
import math
from dataclasses import dataclass
from pathlib import Path

from schedlab import outputs
from schedlab.report.labels import Units, label, people_values, policy_label, with_unit

LONG = 30  # rows; a longer table is folded (<details>)


@dataclass(frozen=True)
class PlottedValue:
    """One plotted point of a points CSV."""

    mean: float
    lo: float
    hi: float
    stable: bool
    reliable: bool
    analytic: bool


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _num(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else "–"


def _e(text: object) -> str:
    return html.escape(str(text))


def is_points_csv(header: list[str]) -> bool:
    """Whether a CSV header is that of :func:`schedlab.report.figures.write_csv`."""
    return len(header) == 8 and header[3:] == [
        f"{header[2]}_ci95_lo",
        f"{header[2]}_ci95_hi",
        "stable",
        "reliable",
        "analytic",
    ]


def _cell(v: PlottedValue | None) -> str:
    if v is None:
        return '<td class="missing">–</td>'
    if not v.stable:
        return (
            '<td class="unstable" title="no steady state: the run estimates nothing">unstable</td>'
        )
    if not v.reliable:
        why = "unreliable: the interval cannot be trusted"
        return f'<td class="unreliable" title="{why}">{_num(v.mean)} ⚠</td>'
    ci = (
        f' <span class="ci">[{_num(v.lo)}, {_num(v.hi)}]</span>'
        if math.isfinite(v.lo) and math.isfinite(v.hi)
        else ""
    )
    kind = ' class="ref"' if v.analytic else ""
    return f"<td{kind}>{_num(v.mean)}{ci}</td>"


def _folded(rows: int, table: str) -> str:
    if rows <= LONG:
        return table
    return f"<details><summary>{rows} rows</summary>{table}</details>"


def _points_table(header: list[str], records: list[list[str]], units: Units) -> tuple[str, str]:
    hue, x, y = header[:3]
    series = list(dict.fromkeys(r[0] for r in records))
    xs = sorted({_float(r[1]) for r in records})
    cells = {
        (r[0], _float(r[1])): PlottedValue(
            mean=_float(r[2]),
            lo=_float(r[3]),
            hi=_float(r[4]),
            stable=r[5] == "True",
            reliable=r[6] == "True",
            analytic=r[7] == "True",
        )
        for r in records
    }
    names = [policy_label(s) if hue == "policy" else s for s in series]
    head = f'<th class="key">{_e(label(x))}</th>' + "".join(f"<th>{_e(n)}</th>" for n in names)
    body = "".join(
        f'<tr><td class="key">{_e(shown)}</td>'
        + "".join(_cell(cells.get((s, xv))) for s in series)
        + "</tr>"
        for xv, shown in zip(xs, people_values(xs), strict=True)
    )
    heading = f"{with_unit(y, units)} against {label(x)}, per {label(hue)}"
    table = f"<div class='wide'><table><tr>{head}</tr>{body}</table></div>"
    return heading, _folded(len(xs), table)


def _plain_table(header: list[str], records: list[list[str]]) -> str:
    columns = [people_values([_value(r[i]) for r in records]) for i in range(len(header))]
    head = "".join(f"<th>{_e(label(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(col[i])}</td>" for col in columns) + "</tr>"
        for i in range(len(records))
    )
    return _folded(len(records), f"<div class='wide'><table><tr>{head}</tr>{body}</table></div>")


def _value(text: str) -> object:
    if text == "":
        return "–"
    try:
        return int(text)
    except ValueError:
        pass
    value = _float(text)
    return text if math.isnan(value) and text.lower() != "nan" else value


def figure_tables_html(directory: Path, csvs: list[str], units: Units) -> str:
    """One table per CSV (paths relative to ``directory``) of a figure: the points CSV as a
    series-by-x table of the figure's metric, any other CSV row by row."""
    parts = []
    for name in csvs:
        text = outputs.read_text_inside(directory, name)
        records = [r for r in csv.reader(io.StringIO(text)) if r]
        if not records:
            continue
        header, rows = records[0], records[1:]
        if is_points_csv(header):
            heading, table = _points_table(header, rows, units)
            parts.append(
                f"<h3>{_e(heading)}</h3><p class='meta'>The numbers of {_e(Path(name).stem)}: "
                "mean and 95% interval per point (bounds and formulas without one).</p>" + table
            )
        else:
            parts.append(
                f"<h3>{_e(Path(name).name)}</h3><p class='meta'>The table behind the figure, "
                "row by row.</p>" + _plain_table(header, rows)
            )
    return "\n".join(parts)
