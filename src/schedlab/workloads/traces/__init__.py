"""Real workload traces -> one canonical job table that every model family replays.

Formats: Google clusterdata-2011 ``task_events`` (``google2011``), Google Borg 2019
``instance_events`` (``borg2019``), Standard Workload Format v2.2 logs of the Parallel Workloads
Archive (``swf``), Alibaba cluster-trace-v2017 and v2018 ``batch_task`` (``alibaba2017``,
``alibaba2018``). Readers stream (gzipped parts are read directly, a trace larger than memory
converts in bounded memory) and count every row they drop or cannot read.

Python::

    from schedlab.workloads.traces import Transforms, read
    table = read("../shared/data/alibaba/batch_task_v2017.csv.gz", format="alibaba2017",
                 transforms=Transforms(max_resource=True))

See docs/traces.md for the formats, the table, the transforms and how to replay a table.
"""

from schedlab.workloads.traces.canonical import get_meta, read_table
from schedlab.workloads.traces.info import TraceInfo, summarize
from schedlab.workloads.traces.pipeline import (
    Conversion,
    Transforms,
    convert,
    formats,
    get_format,
    read,
    read_machines,
)
from schedlab.workloads.traces.report import ReadReport, TraceError
from schedlab.workloads.traces.transforms import (
    max_resource,
    normalize,
    round_pow2,
    server_need,
    time_scale,
    window_jobs,
    window_time,
)

__all__ = [
    "Conversion",
    "ReadReport",
    "TraceError",
    "TraceInfo",
    "Transforms",
    "convert",
    "formats",
    "get_format",
    "get_meta",
    "max_resource",
    "normalize",
    "read",
    "read_machines",
    "read_table",
    "round_pow2",
    "server_need",
    "summarize",
    "time_scale",
    "window_jobs",
    "window_time",
]
