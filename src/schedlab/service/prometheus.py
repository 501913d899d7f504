"""GET /metrics of ``schedlab serve`` in the Prometheus text format (read at each scrape).

``schedlab_queue_length``, ``schedlab_running_jobs``, ``schedlab_utilization{resource=...}``
(gauges); ``schedlab_events_total`` and ``schedlab_decisions_total`` (counters: decisions per
second is ``rate(schedlab_decisions_total[1m])``); ``schedlab_decision_latency_seconds`` (a
histogram of the compiled policy call's wall time per event, as the library measures it; the
event log's fsync and the HTTP stack are not in it).
"""

from __future__ import annotations

import math
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)


def families(now: dict[str, Any]) -> list[Any]:
    """The metric families of :meth:`schedlab.online.Scheduler.metrics`'s record ``now``."""
    queue = GaugeMetricFamily("schedlab_queue_length", "jobs waiting")
    queue.add_metric([], now["queue_length"])
    running = GaugeMetricFamily("schedlab_running_jobs", "jobs running")
    running.add_metric([], now["running"])
    utilization = GaugeMetricFamily(
        "schedlab_utilization", "fraction of the capacity in use", labels=["resource"]
    )
    for resource, value in now["utilization"].items():
        utilization.add_metric([str(resource)], value)
    events = CounterMetricFamily("schedlab_events", "accepted events")
    events.add_metric([], now["events"])
    decisions = CounterMetricFamily("schedlab_decisions", "decisions the policy took")
    decisions.add_metric([], now["decisions"])
    latency = now["decision_latency"]
    buckets = [
        ("+Inf" if math.isinf(bound) else f"{bound:g}", count)
        for bound, count in latency["buckets"].items()
    ]
    histogram = HistogramMetricFamily(
        "schedlab_decision_latency_seconds",
        "time of the compiled policy call per event (cumulative counts)",
        buckets=buckets,
        sum_value=latency["sum_s"],
    )
    return [queue, running, utilization, events, decisions, histogram]


class _Collector:
    def __init__(self, now: dict[str, Any]) -> None:
        self.now = now

    def collect(self) -> list[Any]:
        return families(self.now)


def exposition(now: dict[str, Any]) -> tuple[bytes, str]:
    """(body, content type) of a scrape of the scheduler's metrics ``now``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(now))
    return generate_latest(registry), CONTENT_TYPE_LATEST
