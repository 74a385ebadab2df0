"""The lessons and lab solutions that hold in KRaft mode, run there: ``KAFKALAB_MODE=kraft`` (issue #32).

With that variable ``kafkalab.connect()`` and ``kafkalab.cluster()`` start mini KRaft clusters (three Python
controllers holding the metadata quorum, and mini brokers) instead of the embedded broker or the ZooKeeper-mode
cluster, and a lesson's asserts are claims that must hold there too. Each notebook here runs unchanged under
nbval (``--nbval-lax``: ports, ids and timings differ), with one cell added after every cell that starts a
cluster, which checks that what runs really is a KRaft cluster and no ZooKeeper-mode one or embedded broker.

Not here yet, and why (each is a step of issue #32): lessons 02 and 03 explain failover by ZooKeeper's session
and read znodes; lesson 04 and lab 04 set the embedded broker's clock; lesson 06 holds in KRaft mode (measured
by hand) but takes minutes of Spark; lessons 07, 08 and 09 and lab 08 are not yet measured in KRaft mode;
lesson 10 is KRaft's own lesson already; lesson 11 (TLS listeners and ACLs) starts embedded mini brokers of its
own with SSL listeners and an authorizer (``kafkalab.mini``), which ``connect()``'s clusters do not have yet.
"""
from __future__ import annotations

import os

import nbformat
import pytest

from tests.helpers.fake_docker import ROOT, run_copy

pytestmark = pytest.mark.cluster

KRAFT_READY = [
    "notebooks/00_first_events.ipynb",
    "notebooks/01_partitions_and_keys.ipynb",
    "notebooks/05_consumer_groups_and_offsets.ipynb",
    "labs/00_first_events/solution.ipynb",
    "labs/01_partitions/solution.ipynb",
    "labs/02_producer/solution.ipynb",      # its faults too: the mini KRaft brokers take them as the others do
    "labs/03_replication/solution.ipynb",
    "labs/05_consumer_groups/solution.ipynb",
    "labs/07_exactly_once/solution.ipynb",
]

#: added after each cell that starts a cluster: every cluster open in the kernel is a KRaft one, and none other
IS_KRAFT = """\
import importlib as _importlib
_zookeeper_mode = list(_importlib.import_module("kafkalab.cluster.cluster")._OPEN)
_kraft_mode = list(_importlib.import_module("kafkalab.cluster.kraft")._OPEN)
assert _kraft_mode and not _zookeeper_mode, (_kraft_mode, _zookeeper_mode)
assert all(c.mode == "kraft" and c.controller_ids for c in _kraft_mode)
assert kafka.broker is None   # no embedded (standalone) broker either
"""


def _starts_a_cluster(cell) -> bool:
    return cell.cell_type == "code" and ("kafkalab.connect(" in cell.source or "kafkalab.cluster(" in cell.source)


@pytest.mark.parametrize("name", KRAFT_READY)
def test_holds_on_a_mini_kraft_cluster(name, tmp_path):
    nb = nbformat.read(os.path.join(ROOT, name), as_version=4)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if _starts_a_cluster(cell):
            cells.append(nbformat.v4.new_code_cell(IS_KRAFT))
    assert len(cells) > len(nb.cells), f"{name} starts no cluster of its own"
    nb.cells = cells
    run_copy(nb, name, tmp_path, "on_kraft", "in KRaft mode", KAFKALAB_MODE="kraft")
