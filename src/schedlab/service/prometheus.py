"""GET /metrics of ``schedlab serve`` in the Prometheus text format (read at each scrape).

``schedlab_queue_length``, ``schedlab_running_jobs``, ``schedlab_utilization{resource=...}``
(gauges); ``schedlab_events_total`` and ``schedlab_decisions_total`` (counters: decisions per
second is ``rate(schedlab_decisions_total[1m])``); ``schedlab_decision_latency_seconds`` (a
histogram of the time the scheduler took per accepted event, the event log's fsync excluded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

if TYPE_CHECKING:
    from schedlab.service.app import Service


def families(service: Service) -> list[Any]:
    """The metric families of the service's current state."""
    from schedlab.service.app import LATENCY_BUCKETS

    with service.lock:
        now = service.scheduler.metrics()
        counts, total = list(service.latency_counts), service.latency_sum
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
    cumulative, buckets = 0, []
    for bound, count in zip((*LATENCY_BUCKETS, float("inf")), counts, strict=True):
        cumulative += count
        buckets.append((f"{bound:g}" if bound != float("inf") else "+Inf", cumulative))
    latency = HistogramMetricFamily(
        "schedlab_decision_latency_seconds",
        "scheduler time per accepted event",
        buckets=buckets,
        sum_value=total,
    )
    return [queue, running, utilization, events, decisions, latency]


class _Collector:
    def __init__(self, service: Service) -> None:
        self.service = service

    def collect(self) -> list[Any]:
        return families(self.service)


def exposition(service: Service) -> tuple[bytes, str]:
    """(body, content type) of a scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(service))
    return generate_latest(registry), CONTENT_TYPE_LATEST
