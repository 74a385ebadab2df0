"""No lesson states a ZooKeeper-only mechanism as Kafka's rule without naming the mode.

Kafka 4 runs only in KRaft mode, and a learner in 2026 installs Kafka 4; the lessons' clusters run in
ZooKeeper mode by default and in KRaft mode with ``KAFKALAB_MODE=kraft``. So a markdown cell that explains
something only a ZooKeeper-mode cluster does (znodes, ZooKeeper sessions and their expiry, the ``/controller``
election, quotas kept under ``/config/clients``) must say what the other architecture does too: the same cell
names KRaft (or the mode: "ZooKeeper mode", "in KRaft mode"). A cell about KRaft alone needs nothing.
"""
from __future__ import annotations

import glob
import os
import re

import nbformat
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9][0-9]_*.ipynb"))
                   + glob.glob(os.path.join(ROOT, "labs", "*", "*.ipynb")))

#: what only a ZooKeeper-mode cluster has: ZooKeeper itself, its znodes and sessions, and the configs of both
ZOOKEEPER_ONLY = re.compile(r"zookeeper|znode|/brokers/ids|/controller\b|/config/(clients|users|topics)"
                            r"|ephemeral", re.IGNORECASE)
#: a cell that names the mode, or the other architecture, says which cluster its words are true of
NAMES_THE_MODE = re.compile(r"kraft|zookeeper[- ]mode", re.IGNORECASE)


def _offending_cells(path):
    cells = nbformat.read(path, as_version=4).cells
    return [(i, ZOOKEEPER_ONLY.search(c.source).group(0)) for i, c in enumerate(cells)
            if c.cell_type == "markdown" and ZOOKEEPER_ONLY.search(c.source) and not NAMES_THE_MODE.search(c.source)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: os.path.relpath(p, ROOT))
def test_zookeeper_mechanisms_name_their_mode(path):
    offending = _offending_cells(path)
    assert not offending, ("markdown cells that speak of ZooKeeper-mode mechanisms without naming the mode or "
                           "saying what KRaft does (cell index, first match): " + repr(offending))


def test_the_check_sees_what_it_must(tmp_path):
    # the rule itself, on three made-up cells: the ZooKeeper-only one alone is reported
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("A crashed broker's znode `/brokers/ids/1` goes when its session expires."),
        nbformat.v4.new_markdown_cell("In ZooKeeper mode the znode goes; in KRaft mode the controller fences it."),
        nbformat.v4.new_markdown_cell("The leader keeps the ISR."),
    ])
    path = str(tmp_path / "cells.ipynb")
    nbformat.write(nb, path)
    assert _offending_cells(path) == [(0, "znode")]
