"""kafkalab.spark leaves nothing in the temporary directory: not after a kernel is shut down, not after a kill.

Each test gives its processes a temporary directory of their own (``TMPDIR``, which Python's
``tempfile`` follows; the Spark JVM's ``java.io.tmpdir`` and ``spark.local.dir`` are put under
kafkalab's own directory inside it), so the count of entries before and after is not disturbed by
other work on the machine, and counts what Spark itself leaves there too.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not (os.environ.get("JAVA_HOME") or any(
    os.path.exists(os.path.join(d, "java")) for d in os.environ.get("PATH", "").split(os.pathsep))),
    reason="Spark needs Java")


def _test_labs_run():
    spec = importlib.util.spec_from_file_location("test_labs_for_run", os.path.join(ROOT, "tests", "test_labs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._run


def test_lab_06_exercise_run_by_the_lab_tests_leaves_no_temporary_directory(tmp_path, monkeypatch):
    """The exercise stops at its check, so its clean-up cell never runs; the kernel is then shut down the way
    tests/test_labs.py does it (a shutdown request, SIGKILL after jupyter_client's 5 s). Before the fix the
    kernel spent ~30 s waiting for the Spark JVM it had signalled, was killed, and left the broker's
    ``kafkalab-*`` and the session's ``kafkalab-spark-*`` directories behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))   # the kernel inherits it
    before = sorted(os.listdir(tmp))
    nb, error = _test_labs_run()(os.path.join(ROOT, "labs", "06_word_count", "exercise.ipynb"))
    assert error is not None and error.ename == "LabCheckFailed"   # it ran as far as the check
    after = sorted(os.listdir(tmp))
    assert before == [] and after == before, f"left in the temporary directory: {after}"


_OWNER = """
import sys, time
from kafkalab.spark import session, work_dir
spark = session(app_name="owner")
q = spark.readStream.format("rate").load().writeStream.format("noop").start()   # a temporary checkpoint
q.processAllAvailable()
print(work_dir(), flush=True)
time.sleep(600)
"""


def test_a_killed_owners_directory_is_removed_by_the_next_session_and_its_jvm_exits(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    owner = subprocess.Popen([sys.executable, "-c", _OWNER], env=env, stdout=subprocess.PIPE, text=True,
                             cwd=str(tmp_path))
    try:
        work = owner.stdout.readline().strip()
        assert work.startswith(str(tmp / f"kafkalab-spark-{owner.pid}-")), work
        jvms = [p for p in psutil.Process(owner.pid).children(recursive=True) if p.name() == "java"]
        assert jvms, "no Spark JVM under the owner"
        assert os.listdir(tmp) == [os.path.basename(work)]            # Spark's scratch space is inside it
        assert os.listdir(os.path.join(work, "tmp")), "the temporary checkpoint is not under work_dir/tmp"
        owner.send_signal(signal.SIGKILL)                               # no atexit, no clean-up
        owner.wait(10)
        gone, alive = psutil.wait_procs(jvms, timeout=15)               # it reads its stdin to end-of-file
        assert not alive, f"the Spark JVM outlived its owner: {alive}"
        assert os.listdir(tmp) == [os.path.basename(work)]              # still there: nobody could remove it

        # the next session, in another Python, removes it; its own directory goes at its exit
        done = subprocess.run([sys.executable, "-c", "from kafkalab.spark import session, work_dir; "
                               "session(); print(work_dir())"], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        assert os.listdir(tmp) == [], f"left in the temporary directory: {os.listdir(tmp)}"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_a_live_owners_directory_is_kept(tmp_path):
    from kafkalab.spark import remove_orphaned_dirs

    mine = tmp_path / f"kafkalab-spark-{os.getpid()}-abc"
    parent_of_pytest = tmp_path / f"kafkalab-spark-{os.getppid()}-abc"
    newer_process = tmp_path / f"kafkalab-spark-{os.getppid()}-old"   # the pid reused by a younger process
    dead = tmp_path / "kafkalab-spark-999999999-abc"
    other = tmp_path / "kafkalab-spark-notapid"
    for d in (mine, parent_of_pytest, newer_process, dead, other):
        d.mkdir()
    long_ago = psutil.Process(os.getppid()).create_time() - 3600
    os.utime(newer_process, (long_ago, long_ago))
    time.sleep(0.01)
    assert sorted(remove_orphaned_dirs(str(tmp_path))) == sorted([str(dead), str(newer_process)])
    assert sorted(os.listdir(tmp_path)) == sorted(d.name for d in (mine, parent_of_pytest, other))
