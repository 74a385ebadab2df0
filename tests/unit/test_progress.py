"""kafkalab.progress: a text bar in a terminal, nothing when disabled, a notebook bar nbval can compare."""
from __future__ import annotations

import io
import time

import pytest

from kafkalab import progress as progress_module
from kafkalab.progress import ENV_VAR, mode, progress, wait_with_progress


@pytest.fixture(autouse=True)
def default_mode(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


def test_terminal_bar_counts_the_records():
    out = io.StringIO()
    items = list(progress(range(3), desc="producing", unit="records", file=out))
    assert items == [0, 1, 2]
    text = out.getvalue()
    assert "producing:   0%|" in text and "0/3" in text
    assert "producing: 100%|" in text and "3/3" in text and "records/s" in text


def test_manual_bar_as_context_manager():
    out = io.StringIO()
    with progress(total=10, desc="acknowledged", unit="records", file=out) as bar:
        bar.update(4)
        bar.update(6)
    assert "acknowledged: 100%" in out.getvalue() and "10/10" in out.getvalue()


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_disabled_bars_write_nothing(monkeypatch, value):
    monkeypatch.setenv(ENV_VAR, value)
    assert mode() == "off"
    out = io.StringIO()
    assert list(progress(range(5), desc="producing", file=out)) == list(range(5))
    assert wait_with_progress(lambda: True, 1, "a leader", file=out) >= 0
    with pytest.raises(TimeoutError):
        wait_with_progress(lambda: False, 0.2, "never", interval_s=0.05, file=out)
    assert out.getvalue() == ""


def test_modes_from_the_environment(monkeypatch):
    assert mode() == "auto"
    monkeypatch.setenv(ENV_VAR, "text")
    assert mode() == "text"
    out = io.StringIO()
    list(progress(range(2), desc="sweep", file=out))
    assert "sweep: 100%" in out.getvalue()
    monkeypatch.setenv(ENV_VAR, "sometimes")
    with pytest.raises(ValueError, match="KAFKALAB_PROGRESS='sometimes'"):
        mode()


def test_wait_returns_once_the_condition_holds():
    out = io.StringIO()
    start = time.monotonic()
    calls = []

    def ready():
        calls.append(time.monotonic())
        return time.monotonic() - start > 0.3

    waited = wait_with_progress(ready, 5, "waiting for a new leader", interval_s=0.05, file=out)
    assert 0.3 <= waited < 2 and len(calls) >= 3
    text = out.getvalue()
    assert "waiting for a new leader:   0%|" in text and "(gives up after 5 s)" in text
    assert "waiting for a new leader: 100%|" in text          # full once the condition held


def test_wait_times_out_with_a_clear_error():
    out = io.StringIO()
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^a new leader: not done after 0\.4 s$"):
        wait_with_progress(lambda: False, 0.4, "a new leader", interval_s=0.05, file=out)
    assert 0.4 <= time.monotonic() - start < 2
    assert "100%" not in out.getvalue()                         # never drawn as done


def test_wait_passes_on_errors_and_rejects_a_bad_timeout():
    def broken():
        raise KeyError("no topic")

    with pytest.raises(KeyError):
        wait_with_progress(broken, 1, "x", file=io.StringIO())
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        wait_with_progress(lambda: True, 0, "x")


CELL = """
import time
from kafkalab.progress import progress, wait_with_progress
for _ in progress(range(3), desc="producing", unit="records"):
    time.sleep(0.15)
start = time.monotonic()
wait_with_progress(lambda: time.monotonic() - start > 0.3, 10, "waiting for a leader")
print("done")
"""


def run_in_kernel(source):
    import nbformat
    from jupyter_client import KernelManager
    from nbclient import NotebookClient
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    km = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME, kernel_spec_manager=NbvalKernelspecManager())
    try:
        NotebookClient(nb, km=km, timeout=60).execute()
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=False)
        km.cleanup_resources()
    return nb.cells[0].outputs


def test_notebook_bars_store_only_what_nbval_can_compare_exactly():
    """In a kernel each bar is one display_data: a widget view (nbval skips it: random model id) and the
    bar as first drawn, with no timings yet, as text/plain; no stderr. Two runs store the same."""
    runs = [run_in_kernel(CELL) for _ in range(2)]
    for outputs in runs:
        kinds = [(o.output_type, o.get("name")) for o in outputs]
        assert kinds == [("display_data", None), ("display_data", None), ("stream", "stdout")], kinds
        for o in outputs[:2]:
            assert "application/vnd.jupyter.widget-view+json" in o.data
        assert outputs[2].text == "done\n"

    def compared(outputs):
        return [o.data["text/plain"] if o.output_type == "display_data" else o.text for o in outputs]

    assert compared(runs[0]) == compared(runs[1])
    assert compared(runs[0])[0] == "producing:   0%|          | 0/3 [00:00<?, ?records/s]"
    assert compared(runs[0])[1].startswith("waiting for a leader:   0%|")


def test_the_module_names_its_environment_variable():
    assert progress_module.ENV_VAR == "KAFKALAB_PROGRESS" and ENV_VAR in progress_module.__doc__
