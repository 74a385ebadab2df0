"""Breaking a cluster kafkalab did not start: :class:`ExternalBrokerControls`, mixed into ``ExternalCluster``.

``kill``, ``stop``, ``restart``, ``pause`` and ``resume`` of a broker in the
workshop's compose cluster are ``docker compose kill / stop / start / pause /
unpause`` of its container: through the Docker Engine API when the notebook
can reach it (:class:`~kafkalab.cluster.docker_api.DockerControls`), else
printed for whoever runs the cluster
(:class:`~kafkalab.cluster.docker_api.PrintedControls`). Either way each
control then waits until the change shows — the broker stops answering,
leaves the cluster's registrations, or is back, registered and answering —
and returns only then, as :class:`~kafkalab.cluster.Cluster`'s do.
"""
from __future__ import annotations

import sys
import time


class ExternalBrokerControls:
    """The controls of :class:`~kafkalab.cluster.external.ExternalCluster`. They use its ``docker`` and
    ``printed`` controls, ``out``, ``timeout_s``, ``configs``, ``broker_ids``, ``_lock`` and ``_check_open``,
    and what it sees of a broker: ``_alive`` (Docker's state or a probe), ``probe`` and ``_registered``."""

    # -- breaking things ---------------------------------------------------------------------------------------

    def _say(self, text: str) -> None:
        out = self.out if self.out is not None else sys.stdout
        out.write(text + "\n")
        if hasattr(out, "flush"):
            out.flush()

    def _wait(self, condition, what: str, timeout_s: float | None = None, every_s: float = 0.25) -> float:
        """Poll ``condition()`` until true; returns the seconds it took. TimeoutError says what did not happen."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        began = time.monotonic()
        while True:
            if condition():
                return time.monotonic() - began
            if time.monotonic() - began > timeout_s:
                raise TimeoutError(f"{what} did not happen within {timeout_s:.0f} s")
            time.sleep(every_s)

    def _do(self, action: str, broker_id: int, condition, what: str, timeout_s: float | None = None,
            stop_timeout_s: int = 30) -> None:
        """Run ``docker compose <action>`` on the broker's container (API or a person), then wait for ``what``."""
        if self.docker is not None:
            self.docker.act(action, broker_id, stop_timeout_s)
            self._wait(condition, what, timeout_s)
            return
        command = self.printed.command(action, broker_id)
        limit = self.timeout_s if timeout_s is None else timeout_s
        why = f" ({self.printed.why})" if self.printed.why else ""
        self._say(f"broker {broker_id}: this notebook has no control over Docker{why}.\n"
                  f"Run this where docker-compose.yml is (the instructor's machine):\n\n"
                  f"    {command}\n\n"
                  f"waiting up to {limit:.0f} s until {what} ...")
        took = self._wait(condition, f"{what} (after `{command}`)", timeout_s)
        self._say(f"broker {broker_id}: {what}: seen after {took:.1f} s")

    def _check_broker(self, broker_id) -> int:
        self._check_open()
        try:
            broker_id = int(broker_id)
        except (TypeError, ValueError):
            raise KeyError(f"no broker {broker_id!r}: the brokers are {self.broker_ids}") from None
        if broker_id not in self.broker_ids:
            raise KeyError(f"no broker {broker_id!r}: the brokers are {self.broker_ids}")
        return broker_id

    def _gone(self, broker_id: int) -> bool:
        return self._alive(broker_id) not in ("running", "paused", "silent", "starting")

    def kill(self, broker_id: int) -> None:
        """SIGKILL the broker (``docker compose kill``): a crash. Returns once it is down; its registration stays
        until its ZooKeeper session times out (``zookeeper.session.timeout.ms``)."""
        with self._lock:
            broker_id = self._check_broker(broker_id)
            state = self._alive(broker_id)
            if state not in ("running", "paused", "silent", "starting"):
                raise RuntimeError(f"broker {broker_id} is not running ({state})")
            self._do("kill", broker_id, lambda: self._gone(broker_id), f"broker {broker_id} is down")

    def stop(self, broker_id: int, timeout_s: float = 30.0) -> None:
        """SIGTERM (``docker compose stop``): a controlled shutdown. Returns once the broker is down and has
        left the cluster's registrations."""
        with self._lock:
            broker_id = self._check_broker(broker_id)
            state = self._alive(broker_id)
            if state not in ("running", "paused", "silent", "starting"):
                raise RuntimeError(f"broker {broker_id} is not running ({state})")
            if state in ("paused", "silent"):
                self.resume(broker_id)   # a frozen broker cannot shut down cleanly: thaw it first
            self._do("stop", broker_id, lambda: self._gone(broker_id) and self._registered(broker_id) is not True,
                     f"broker {broker_id} has shut down and left the cluster", stop_timeout_s=int(timeout_s))

    def restart(self, broker_id: int, timeout_s: float | None = None) -> None:
        """Start the broker again (``docker compose start``): a running one is stopped first, and a killed
        one's old registration is waited out (Kafka refuses to register a broker id that is still registered).
        Returns once it is registered and answering again."""
        with self._lock:
            broker_id = self._check_broker(broker_id)
            if self._alive(broker_id) in ("running", "paused", "silent", "starting"):
                self.stop(broker_id)
            if self._registered(broker_id):
                session_ms = int(self.configs.get("zookeeper.session.timeout.ms", 18000))
                self._say(f"broker {broker_id}: waiting for its old registration to expire "
                          f"(zookeeper.session.timeout.ms = {session_ms}) before it starts again ...")
                self._wait(lambda: self._registered(broker_id) is not True,
                           f"the old registration of broker {broker_id} expired",
                           session_ms / 1000 + (timeout_s or self.timeout_s))
            self._do("start", broker_id,
                     lambda: self._registered(broker_id) is True and self.probe(broker_id) == "running",
                     f"broker {broker_id} is registered and answering again", timeout_s)

    def pause(self, broker_id: int) -> None:
        """Freeze the broker (``docker compose pause``): connections are accepted, nothing is answered, and its
        ZooKeeper session expires after ``zookeeper.session.timeout.ms``."""
        with self._lock:
            broker_id = self._check_broker(broker_id)
            state = self._alive(broker_id)
            if state != "running":
                raise RuntimeError(f"broker {broker_id} is not running ({state})")
            self._do("pause", broker_id, lambda: self._alive(broker_id) in ("paused", "silent"),
                     f"broker {broker_id} is frozen")

    def resume(self, broker_id: int) -> None:
        """Thaw a paused broker (``docker compose unpause``)."""
        with self._lock:
            broker_id = self._check_broker(broker_id)
            state = self._alive(broker_id)
            if state not in ("paused", "silent"):
                raise RuntimeError(f"broker {broker_id} is not paused ({state})")
            self._do("unpause", broker_id, lambda: self.probe(broker_id) == "running",
                     f"broker {broker_id} answers again")

    def inject_fault(self, broker_id: int, kind: str, api: str | None = None, **options) -> dict:
        raise NotImplementedError("faults are a kafkalab lab tool: Apache Kafka's brokers have none")

    def faults(self) -> list[dict]:
        return []

    def clear_faults(self, broker_id: int | None = None, fault_id: int | None = None) -> int:
        return 0
