"""``<home>/metrics/ussd_console.prom``: the health figures and the counters in Prometheus's text
format, for node_exporter's textfile collector.

Written with ``prometheus-client``'s own exposition, through
``core.home.replace_private`` (a temporary file renamed over the old one, so a
scrape never reads half a file; never through a symlink, mode 0600), from a collector built on each write from the store and the
heartbeats: the store's counters are already totals, so they are exposed as
counters as they stand.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from core.home import private_folder, replace_private
from core.store.records import Totals

WRITE_EVERY = 15.0
FILE_NAME = "ussd_console.prom"


def metrics_path(home):
    return home.root / "metrics" / FILE_NAME


class _Snapshot:
    """A one-shot collector over figures gathered just before the write."""

    def __init__(self, health: dict, totals: Totals, per_source: dict, files: dict):
        self.health, self.totals, self.per_source, self.files = health, totals, per_source, files

    def collect(self):
        h, t = self.health, self.totals

        def gauge(name, doc, value):
            family = GaugeMetricFamily(name, doc)
            family.add_metric([], float(value))
            return family

        yield gauge("ussd_receiver_up", "1 while a watch or console takes the inbox on this home", h["receiver"]["running"])
        yield gauge("ussd_observer_running", "1 while the inbox observer (push path) runs", h["observer"] == "running")
        yield gauge("ussd_sweep_running", "1 while the inbox sweep (pull path) runs", h["sweep"] == "running")
        yield gauge("ussd_last_sweep_timestamp_seconds", "end of the last inbox sweep (0: none yet)", h["last_sweep_at"] or 0)
        yield gauge("ussd_last_frame_timestamp_seconds", "when the newest frame was decided (0: none yet)", h["last_frame_at"] or 0)
        yield gauge("ussd_outbox_pending", "alert deliveries not yet made", h["outbox_pending"])
        yield gauge("ussd_faults_open", "faults in force in the running receivers", h["faults_open"])
        yield gauge("ussd_files_waiting", "files in the inbox and its claimed folder", h["files_waiting"])
        yield gauge("ussd_cases", "cases in the applied ledger", t.cases)
        yield gauge("ussd_people", "people counted over all cases", t.headcount_total)
        yield gauge("ussd_conflicts_open", "conflicts waiting for an operator", t.conflicts_open)
        frames = CounterMetricFamily("ussd_frames", "frames decided, by arrival path and outcome", labels=["path", "outcome"])
        for path, counts in sorted(self.per_source.items()):
            for outcome, n in sorted(counts.items()):
                frames.add_metric([path, outcome], float(n))
        yield frames
        files = CounterMetricFamily("ussd_inbox_files", "inbox files taken, by delivery path", labels=["path"])
        for path, n in sorted(self.files.items()):
            files.add_metric([path], float(n))
        yield files
        alerts = CounterMetricFamily("ussd_alerts_delivered", "alerts delivered, by target", labels=["target"])
        for target, n in sorted(h["alerts_delivered"].items()):
            alerts.add_metric([target], float(n))
        yield alerts


def write_metrics(home, receiver, health: dict) -> None:
    """Write the file atomically from ``health`` (``core.ops.health.gather``) and the store."""
    from core.store.inbox_progress import file_counts

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(health, receiver.totals(), receiver.per_source(), file_counts(receiver)))
    from core.gateways.accounts import MetricsCollector  # the gateways' own counts, per gateway

    registry.register(MetricsCollector(receiver.db))
    path = metrics_path(home)
    private_folder(path.parent)
    replace_private(path, generate_latest(registry))
