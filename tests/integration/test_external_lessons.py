"""The lessons and labs, run against a cluster used as the workshop's compose cluster is used.

``docker compose up`` gives the JupyterLab container ``KAFKALAB_BOOTSTRAP_SERVERS``,
``KAFKALAB_ZOOKEEPER_CONNECT`` and ``KAFKALAB_COMPOSE_PROJECT``; ``kafkalab.connect()``
then returns an :class:`~kafkalab.cluster.external.ExternalCluster`, and a lesson's
``cluster.kill(1)`` goes through the Docker API (the socket mounted) or prints the
``docker compose`` command for the instructor. There is no Docker engine here, so
:class:`fake_docker.ComposeLikeCluster` stands in: a real 3-broker mini cluster
configured with docker-compose.yml's broker environment, behind a fake Docker
Engine that records every call and carries it out on the broker processes.

How outputs are compared: **not at all** (``--nbval-lax``), only errors count. The
stored outputs are those of the embedded cluster (the default nbval run compares
them); on another backend addresses, ids, the repr of ``kafka``, the configs table
and the timings legitimately differ. What must hold on both is what the lesson
asserts about the measured data, and every lesson step has such an assert cell.
The test adds what the notebook cannot see: which Docker calls were made, and that
the cluster is whole afterwards.

The lessons and labs that use the workshop's brokers (00, 01, 03, 05, 06, labs 00, 01, 03, 05, 06, 07)
run through the same harness on the brokers the workshop really has, Apache Kafka 3.9, in
``test_real_kafka_lessons.py`` (lesson 03 through the Docker API, with its kill signals and stop grace
period checked there). Here, on mini brokers, run what only this module covers: the harness itself,
the lessons that bring brokers of their own, and lesson 03 with no Docker access and an instructor.
"""
from __future__ import annotations

import os
import time

import pytest

import kafkalab
from kafkalab.cluster.docker_api import DockerEngine, container_state
from kafkalab.cluster.external import ExternalCluster

from tests.helpers.fake_docker import (LESSON_03_ACTIONS, NODE_EXISTS, ROOT, ComposeLikeCluster, Instructor,  # noqa: E402
                         assert_whole, compose_broker_configs, lesson_03_done_as_expected,
                         lesson_03_for_external, run_nbval)

pytestmark = pytest.mark.cluster

LESSON_04 = os.path.join(ROOT, "notebooks", "04_retention_and_segments.ipynb")
LAB_02 = os.path.join(ROOT, "labs", "02_producer", "solution.ipynb")


@pytest.fixture
def compose_like(tmp_path):
    made = []

    def make(**kwargs):
        lab = ComposeLikeCluster(str(tmp_path / f"cluster-{len(made)}"), **kwargs)
        made.append(lab)
        return lab
    try:
        yield make
    finally:
        for lab in made:
            lab.close()


def test_the_harness_is_the_compose_cluster_as_a_notebook_there_sees_it(compose_like, monkeypatch):
    known, skipped = compose_broker_configs()
    assert known["zookeeper.session.timeout.ms"] == "6000"
    # the mini broker serves transactions: the compose file's __transaction_state settings apply to it too
    assert known["transaction.state.log.replication.factor"] == "3"
    assert known["transaction.state.log.min.isr"] == "2"
    assert "advertised.listeners" in skipped, "where a broker is, the cluster decides"
    lab = compose_like()
    for var, value in lab.jupyter_env().items():
        monkeypatch.setenv(var, value)
    kafka = kafkalab.connect()
    try:
        ext = kafka.cluster
        assert isinstance(ext, ExternalCluster) and ext.controls == "docker"
        assert ext.lab_defaults()["matches"].all(), "the brokers run with the compose file's lab defaults"
        # Docker starts a killed broker's container at once; Apache Kafka then cannot register while its old
        # session's /brokers/ids/2 is there, and exits: ExternalCluster.restart waits the session out first
        engine = DockerEngine(lab.docker.host)
        cid = lab.container_of[2]
        engine.kill(cid)
        engine.start(cid)
        assert container_state(engine.inspect(cid)) == "exited" and NODE_EXISTS in engine.logs(cid, 5)
        ext.restart(2)
        assert [(a, b) for a, b, _ in lab.actions()] == [("kill", 2), ("start", 2), ("start", 2)]
        assert ext.brokers.set_index("id").loc[2, "alive"] == "running"
    finally:
        kafka.close()
    assert_whole(lab)


@pytest.mark.parametrize("notebook", [LESSON_04, LAB_02], ids=["lesson-04", "lab-02"])
def test_lessons_that_need_kafkalab_brokers_bring_their_own_and_leave_the_compose_cluster_alone(compose_like,
                                                                                              notebook):
    """Lesson 04 (the broker's clock and files) and lab 02 (fault injection) call connect(local=True):
    with the workshop's environment set they still run, on brokers of their own, and touch no container."""
    lab = compose_like()
    run, took = run_nbval(notebook, lab.jupyter_env())
    assert run.returncode == 0, f"nbval --nbval-lax failed after {took:.0f} s:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
    assert lab.actions() == []
    assert_whole(lab)


def run_watching(notebook: str, env: dict, on_stream, timeout_s: float = 240) -> None:
    """Execute ``notebook`` in a fresh kernel with ``env``, handing every piece of text it prints to
    ``on_stream`` as it arrives (what the instructor reads over a student's shoulder). Raises
    ``nbclient.exceptions.CellExecutionError`` on the first failing cell."""
    import nbformat
    from nbclient import NotebookClient

    class Watching(NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            if msg["header"]["msg_type"] == "stream":
                on_stream(msg["content"]["text"])
            return super().output(outs, msg, display_id, cell_index)

    nb = nbformat.read(notebook, as_version=4)
    client = Watching(nb, timeout=timeout_s, kernel_name="python3", resources={"metadata": {"path": ROOT}})
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)   # the kernel inherits this process's environment
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.mark.slow
def test_lesson_03_without_docker_access_prints_each_command_and_waits_for_the_instructor(compose_like, tmp_path):
    """No Docker socket (compose without docker-compose.docker-socket.yml): every break is a printed
    ``docker compose`` command; the test reads the kernel's output as it comes and, a second later, carries
    the command out on the cluster, as the instructor at the terminal would."""
    lab = compose_like(docker=False)
    instructor = Instructor(lab.cluster, delay_s=1.0, run=lambda what, fn: lab.in_background(what, fn))
    began = time.monotonic()
    run_watching(lesson_03_for_external(str(tmp_path)), lab.jupyter_env(), instructor.write)
    took = time.monotonic() - began
    done = [(m.group(1), int(m.group(2))) for m in map(Instructor.PATTERN.fullmatch, instructor.commands)]
    assert lesson_03_done_as_expected(done), instructor.commands
    assert instructor.text.count("has no control over Docker (no Docker socket at") == len(LESSON_03_ACTIONS)
    assert instructor.text.count("seen after") == len(LESSON_03_ACTIONS)
    assert_whole(lab)
    assert took < 180, f"the lesson took {took:.0f} s with an instructor in the loop"
