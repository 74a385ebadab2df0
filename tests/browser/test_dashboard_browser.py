"""The dashboard in a real browser: JupyterLab headless, Debian's Chromium driven by selenium + chromium-driver.

A notebook starts a real mini cluster (``kafkalab.connect(brokers=2)``) and shows
``kafkalab.viz.dashboard(kafka)``. The test checks that the widget rendered as a
widget (not its text fallback), presses broker 2's kill button, and checks that its
row turns down and its process is gone. Screenshots go to
``$KAFKALAB_TEST_ARTIFACTS`` (default ``test-artifacts/`` in the checkout).

Skipped when chromium, chromedriver or selenium is missing (``.ci/run`` installs them).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import nbformat
import psutil
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARTIFACTS = os.environ.get("KAFKALAB_TEST_ARTIFACTS") or os.path.join(ROOT, "test-artifacts")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
TOKEN = "kafkalab-browser-test"

pytestmark = [pytest.mark.cluster, pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                                      reason="needs Debian's chromium and chromium-driver")]
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NOTEBOOK_CELLS = [
    "import kafkalab, kafkalab.viz, os, json\n"
    "kafka = kafkalab.connect(brokers=2, **{'zookeeper.session.timeout.ms': 4000})\n"
    "topic = kafka.create_topic('orders', partitions=2)\n"
    "from confluent_kafka import Producer\n"
    "p = Producer(kafka.client_config())\n"
    "for i in range(30): p.produce(topic, key=str(i), value=b'x')\n"
    "p.flush(10)\n"
    "json.dump({str(b): int(pid) for b, pid in zip(kafka.cluster.brokers['id'], kafka.cluster.brokers['pid'])},"
    " open(os.environ['KAFKALAB_BROWSER_PIDS'], 'w'))",
    "kafkalab.viz.dashboard(kafka, interval_s=1)",
]


@pytest.fixture
def jupyterlab(tmp_path):
    """JupyterLab on a free port, headless, on a folder with the test notebook; stopped at teardown."""
    work = tmp_path / "lab"
    work.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in NOTEBOOK_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(work / "dashboard.ipynb"))
    port = free_port()
    pids_file = str(tmp_path / "pids.json")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               KAFKALAB_BROWSER_PIDS=pids_file, JUPYTER_PREFER_ENV_PATH="1",
               JUPYTER_CONFIG_PATH=os.path.join(ROOT, "kafkalab", "jupyter_config"))   # as `kafkalab lab` does
    for var in ("KAFKALAB_BOOTSTRAP_SERVERS", "KAFKALAB_CLUSTER_DIR"):
        env.pop(var, None)
    log = open(tmp_path / "jupyterlab.log", "wb")
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.root_dir={work}", f"--IdentityProvider.token={TOKEN}", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
           "--ServerApp.disable_check_xsrf=True"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(work),
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start: {(tmp_path / 'jupyterlab.log').read_text()[-2000:]}")
                time.sleep(0.3)
        yield base, pids_file
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)   # the server and its kernels (which close their clusters)
            proc.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()


@pytest.fixture
def browser(tmp_path):
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    options = Options()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="kafkalab-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def shot(driver, name: str) -> str:
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, name)
    driver.save_screenshot(path)
    return path


def wait_for(predicate, timeout_s: float, what: str, driver=None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception:   # noqa: BLE001 -- elements come and go while JupyterLab renders
            pass
        time.sleep(0.3)
    if driver is not None:
        shot(driver, f"timeout-{what.replace(' ', '-')[:40]}.png")
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_dashboard_renders_and_its_kill_button_kills(jupyterlab, browser):
    base, pids_file = jupyterlab
    browser.get(f"{base}/lab/tree/dashboard.ipynb?token={TOKEN}")
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell"), 60, "the notebook", browser)
    wait_for(lambda: browser.execute_script(
        "return document.querySelector('.jp-Notebook-ExecutionIndicator') === null || "
        "!document.body.innerText.includes('Kernel starting')"), 30, "the kernel", browser)
    # and connected and idle (the status bar's "Python 3 (ipykernel) | Idle"): on a loaded CI machine a Shift+Enter
    # sent before that was lost, the first cell never ran, and the dashboard cell failed with NameError
    wait_for(lambda: browser.execute_script("return document.body.innerText.includes('| Idle')"), 90,
             "the kernel to be idle", browser)
    time.sleep(2)   # the kernel connects
    # Run All, from the command palette-free route: the Run menu's command via JupyterLab's app
    body = browser.find_element(By.CSS_SELECTOR, ".jp-Notebook")
    body.click()
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    for _ in NOTEBOOK_CELLS:
        ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
        time.sleep(0.5)

    kill2 = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, ".kafkalab-dashboard .kafkalab-kill-2"),
                     90, "the dashboard widget", browser)
    # a widget, not the text fallback ("Dashboard(children=...)" / "VBox(...)")
    assert browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox.kafkalab-dashboard")
    outputs = " ".join(e.text for e in browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output"))
    assert "VBox(" not in outputs and "Dashboard(" not in outputs
    wait_for(lambda: "up" in browser.find_element(By.CSS_SELECTOR, ".kafkalab-broker-2-status").text, 30,
             "broker 2 up", browser)
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".kafkalab-partition"), 30, "the partitions", browser)
    with open(pids_file) as f:
        pids = {int(k): v for k, v in json.load(f).items()}
    assert alive(pids[2])
    # Kafka's metrics in the header: one active controller, nothing under-replicated yet
    header = wait_for(lambda: (lambda t: t if "ActiveControllerCount 1" in t else None)(
        browser.find_element(By.CSS_SELECTOR, ".kafkalab-dashboard").text), 30, "the metrics line", browser)
    assert "UnderReplicatedPartitions 0" in header and "OfflinePartitionsCount 0" in header
    shot(browser, "dashboard-before-kill.png")

    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", kill2)
    kill2.click()
    status = wait_for(lambda: (lambda t: t if "down" in t else None)(
        browser.find_element(By.CSS_SELECTOR, ".kafkalab-broker-2-status").text), 30, "broker 2 down", browser)
    assert "killed" in status
    assert not alive(pids[2])
    assert alive(pids[1])
    assert "up" in browser.find_element(By.CSS_SELECTOR, ".kafkalab-broker-1-status").text
    # the kill button is greyed out now; restart is the one to press
    assert not browser.find_element(By.CSS_SELECTOR, ".kafkalab-dashboard .kafkalab-kill-2").is_enabled()
    assert browser.find_element(By.CSS_SELECTOR, ".kafkalab-dashboard .kafkalab-restart-2").is_enabled()
    time.sleep(5)   # the session expires (4 s): the partitions' ISR shrink shows too
    # ... and so does UnderReplicatedPartitions, summed over the two brokers left
    wait_for(lambda: "UnderReplicatedPartitions 0" not in browser.find_element(
        By.CSS_SELECTOR, ".kafkalab-dashboard").text, 30, "under-replicated partitions in the header", browser)
    shot(browser, "dashboard-after-kill.png")
    # the lab's Jupyter config turned the announcements plugin off: no news pop-up over the lesson
    assert "notified about official Jupyter news" not in browser.find_element(By.TAG_NAME, "body").text
