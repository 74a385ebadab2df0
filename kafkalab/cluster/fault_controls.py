"""Lab faults on cue: :class:`FaultControls`, a cluster's side of :mod:`kafkalab.broker.server.faults`.

Killing, stopping and pausing a broker (:mod:`kafkalab.cluster.lifecycle`) are
failures of a whole process. A fault is smaller: one broker drops the
responses to one API, or stops replicating for a few seconds, while it stays
up and registered. Each mini broker process listens on a local control socket
(in its log directory, or the temporary directory when that path is too long
for a Unix socket); these methods send it one request each. Apache Kafka's
brokers have no such socket, so the faults are mini brokers' only.
"""
from __future__ import annotations


class FaultControls:
    """Faults, mixed into :class:`~kafkalab.cluster.Cluster`. It uses the cluster's ``_res`` (the brokers),
    ``backend``, and the broker lifecycle's ``_broker`` and ``_state``."""

    # -- lab faults (kafkalab.broker.server.faults: each broker process's control socket) --------

    def inject_fault(self, broker_id: int, kind: str, api: str | None = None, **options) -> dict:
        """Make one broker misbehave on cue (mini brokers only; see :mod:`kafkalab.broker.server.faults`), e.g.
        ``inject_fault(1, "drop_response", api="Produce", count=2)``, ``inject_fault(2, "pause_replication",
        duration_s=8)``. Returns the fault as :meth:`faults` lists it."""
        from ..broker.server.faults import control_request
        b = self._broker(broker_id)
        if getattr(self.backend, "name", "mini") != "mini":
            raise NotImplementedError("faults are a kafkalab lab tool: Apache Kafka's brokers have none")
        return control_request(b.log_dir, "inject", {"kind": kind, "api": api, **options})

    def faults(self) -> list[dict]:
        """The active faults of every running broker, each with its ``broker`` id."""
        from ..broker.server.faults import control_request
        out = []
        for b in self._res.brokers.values():
            if self._state(b) == "running":
                out += [{"broker": b.id, **f} for f in control_request(b.log_dir, "faults")]
        return out

    def clear_faults(self, broker_id: int | None = None, fault_id: int | None = None) -> int:
        """End the faults of one broker (one fault by id), or of every running broker."""
        from ..broker.server.faults import control_request
        brokers = [self._broker(broker_id)] if broker_id is not None else list(self._res.brokers.values())
        return sum(control_request(b.log_dir, "clear", {"fault_id": fault_id}) for b in brokers
                   if self._state(b) == "running")
