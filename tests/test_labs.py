"""The labs in ``labs/``: exercises stay in step with their solutions, and their checks can fail.

nbval runs every ``labs/*/solution.ipynb`` (the check must pass on it). These
tests cover the other half: an exercise run as handed out — TODOs unfilled —
must stop at the check with a checklist of ✗, and a check must reject wrong
answers with a specific message, not just accept anything.
"""
from __future__ import annotations

import glob
import os

import nbformat
import pandas as pd
import pytest

import kafkalab
from kafkalab.checks import READINGS_00, LabCheckFailed, check_00

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABS = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, "labs", "*", "exercise.ipynb")))


def _read(path):
    return nbformat.read(path, as_version=4)


def _run(path):
    """Execute a notebook in a kernel of this Python; return (notebook, error or None)."""
    from jupyter_client import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

    nb = _read(path)
    km = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME, kernel_spec_manager=NbvalKernelspecManager())
    client = NotebookClient(nb, km=km, timeout=120, resources={"metadata": {"path": os.path.dirname(path)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        return nb, exc
    finally:
        # nbclient leaves a kernel it was handed running; left to die with pytest it would exit without its
        # atexit handlers (ipykernel's parent poller uses os._exit) and leave the broker's temporary directory
        # and its connection file behind. Shut it down cleanly instead.
        if km.has_kernel:
            km.shutdown_kernel(now=False)
        km.cleanup_resources()
    return nb, None


def test_every_lab_has_exercise_and_solution():
    assert LABS, "no labs found under labs/"
    for lab in LABS:
        assert os.path.exists(os.path.join(lab, "solution.ipynb")), f"{lab} has no solution.ipynb"


@pytest.mark.parametrize("lab", LABS, ids=os.path.basename)
def test_exercise_matches_solution_except_todo_cells(lab):
    exercise = _read(os.path.join(lab, "exercise.ipynb"))
    solution = _read(os.path.join(lab, "solution.ipynb"))
    assert len(exercise.cells) == len(solution.cells)
    todos = 0
    for i, (e, s) in enumerate(zip(exercise.cells, solution.cells)):
        assert e.cell_type == s.cell_type, f"cell {i}"
        e_tags, s_tags = e.metadata.get("tags", []), s.metadata.get("tags", [])
        if "todo" in e_tags:
            todos += 1
            assert "solution" in s_tags, f"cell {i}: exercise TODO cell without a solution cell"
            assert "TODO" in e.source, f"cell {i} is tagged todo but says no TODO"
        elif i > 0:  # cell 0 is the title, which says "solution" in the solution
            assert e.source == s.source, f"cell {i} differs between exercise and solution but is not a TODO cell"
    assert todos > 0


@pytest.mark.parametrize("lab", LABS, ids=os.path.basename)
def test_unfilled_exercise_fails_at_the_check(lab):
    nb, error = _run(os.path.join(lab, "exercise.ipynb"))
    assert error is not None, "the exercise passed its check with the TODOs unfilled"
    assert error.ename == "LabCheckFailed", f"the exercise failed before its check: {error.ename}: {error.evalue}"
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "✗" in printed and "All checks passed" not in printed


# --- check_00 on its own: right answers pass, each kind of wrong answer is named -------------------

def _produce(kafka, topic, readings, header=b"celsius"):
    from confluent_kafka import Producer

    producer = Producer(kafka.client_config())
    for sensor, celsius, ts in readings:
        producer.produce(topic, key=sensor, value=celsius, timestamp=ts or 0, headers=[("unit", header)])
    assert producer.flush(10) == 0
    producer.close()


def _answers():
    frame = pd.DataFrame([{"offset": i, "key": s, "value": c} for i, (s, c, _) in enumerate(READINGS_00)])
    return dict(delivered_offsets=[0, 1, 2, 3, 4], readings=frame,
                from_offset_3=[c for _, c, _ in READINGS_00[3:]], watermarks=(0, 5))


@pytest.fixture
def lab_kafka(tmp_path):
    with kafkalab.connect(log_dir=str(tmp_path / "broker")) as kafka:
        yield kafka


def test_check_00_passes_right_answers(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00)
    check_00(lab_kafka, topic, **_answers())
    assert "All checks passed" in capsys.readouterr().out


def test_check_00_names_what_the_broker_got_wrong(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    swapped = [READINGS_00[1], READINGS_00[0], *READINGS_00[2:]]
    _produce(lab_kafka, topic, swapped, header=b"fahrenheit")
    with pytest.raises(LabCheckFailed):
        check_00(lab_kafka, topic, **_answers())
    out = capsys.readouterr().out
    assert "✗ step 1: the five readings" in out
    assert "all five readings are there, but in another order" in out
    assert "expected a header ('unit', b'celsius')" in out


def test_check_00_names_the_field_that_differs(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, [(s, c, None) for s, c, _ in READINGS_00])   # timestamp forgotten: the clock
    with pytest.raises(LabCheckFailed):
        check_00(lab_kafka, topic, **_answers())
    out = capsys.readouterr().out
    assert "offset 0: timestamp " in out and "expected 1735722000000" in out
    assert "is the client's clock" in out
    assert "offset 0: key" not in out and "offset 0: value" not in out


def test_check_00_names_wrong_answers(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00)
    answers = _answers()
    answers["readings"] = answers["readings"].iloc[::-1]
    answers["from_offset_3"] = ["10.8"]
    answers["watermarks"] = (5, 5)
    with pytest.raises(LabCheckFailed, match="3 of 5 checks failed"):
        check_00(lab_kafka, topic, **answers)
    out = capsys.readouterr().out
    assert "✓ step 1: the five readings" in out
    assert "✗ step 2" in out and "✗ step 3" in out and "✗ step 4" in out


def test_check_00_counts_duplicates(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00 + READINGS_00[:1])   # the produce cell run "one and a bit" times
    with pytest.raises(LabCheckFailed):
        check_00(lab_kafka, topic, **_answers())
    assert "the topic holds 6 record(s), expected 5" in capsys.readouterr().out


def test_check_00_copes_with_records_without_a_key(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00[:2])
    _produce(lab_kafka, topic, [(None, c, ts) for _, c, ts in READINGS_00[2:]])
    with pytest.raises(LabCheckFailed, match="1 of 5 checks failed"):
        check_00(lab_kafka, topic, **_answers())
    assert "offset 2: key None, expected b'greenhouse'" in capsys.readouterr().out


def test_check_00_turns_answers_of_the_wrong_shape_into_hints(lab_kafka, capsys):
    """What students really write: a list for a DataFrame, records for values, position() for watermarks."""
    from confluent_kafka import Consumer, TopicPartition

    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00)
    consumer = Consumer(lab_kafka.client_config(group_id="shapes", enable_auto_commit=False))
    try:
        consumer.assign([TopicPartition(topic, 0, 3)])
        records = []
        for _ in range(20):
            records += consumer.consume(2, timeout=0.5)
            if len(records) >= 2:
                break
        wrong = dict(delivered_offsets=[], readings=[(0, "greenhouse", "21.5")], from_offset_3=records,
                     watermarks=consumer.position([TopicPartition(topic, 0)]))
        with pytest.raises(LabCheckFailed, match="4 of 5 checks failed"):
            check_00(lab_kafka, topic, **wrong)
        out = capsys.readouterr().out
        assert "delivered_offsets is empty" in out and "on_delivery" in out
        assert "readings is a list, expected a pandas DataFrame" in out
        assert "from_offset_3 holds records (Message objects)" in out
        assert "expected a pair (low, high)" in out

        wrong.update(delivered_offsets=[object()], from_offset_3=[30.4, 10.8], watermarks=5)
        with pytest.raises(LabCheckFailed):
            check_00(lab_kafka, topic, **wrong)
        out = capsys.readouterr().out
        assert "could not check `delivered_offsets` (TypeError" in out
        assert "expected the values as str" in out
        assert "watermarks is 5, expected a pair" in out
    finally:
        consumer.close()


def test_check_00_rejects_bytes_where_text_was_asked(lab_kafka, capsys):
    """Steps 2 and 3 ask for keys and values decoded to str (undecoded bytes used to pass)."""
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00)
    answers = _answers()
    answers["readings"] = answers["readings"].assign(key=[s.encode() for s, _, _ in READINGS_00])
    answers["from_offset_3"] = [c.encode() for _, c, _ in READINGS_00[3:]]
    answers["watermarks"] = [0, 5]
    with pytest.raises(LabCheckFailed, match="2 of 5 checks failed"):
        check_00(lab_kafka, topic, **answers)
    out = capsys.readouterr().out
    assert "✗ step 2" in out and "decode them" in out and "✗ step 3" in out and "holds bytes" in out


# --- check_04 on its own -------------------------------------------------------------------------

def _load_check_04():
    import importlib.util

    spec = importlib.util.spec_from_file_location("lab04_check", os.path.join(ROOT, "labs", "04_retention", "check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lab04 = _load_check_04()


@pytest.fixture
def lab04_kafka(tmp_path):
    with kafkalab.connect(log_dir=str(tmp_path / "broker"), **{"log.retention.check.interval.ms": 86_400_000,
                                                                 "log.cleaner.enable": False}) as kafka:
        yield kafka


def _do_lab_04(kafka, one_batch_each=True, prices_segment_bytes=512):
    """Run lab 04's steps against ``kafka`` as the solution does; return the answers check_04 takes."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kafkalab.tools import dump_log_df, list_segments

    broker = kafka.broker
    directory = lambda topic: os.path.join(broker.log_dir, f"{topic}-0")   # noqa: E731
    orders = kafka.create_topic("orders", **{"segment.bytes": 2048, "retention.ms": 20 * lab04.MINUTE})
    producer = Producer(kafka.client_config(linger_ms=0 if one_batch_each else 100))
    for key, value, ts in lab04.ORDERS:
        producer.produce(orders, key=key, value=value, timestamp=ts)
        if one_batch_each:
            producer.flush(10)
    producer.flush(10)
    segments = list_segments(directory(orders))
    segment_of_30 = segments[segments["baseOffset"] <= 30]["segment"].iloc[-1]
    batches = dump_log_df(os.path.join(directory(orders), segment_of_30), level="batch")
    position_of_30 = int(batches[batches["baseOffset"] <= 30]["position"].iloc[-1])
    broker.call(broker.server.log_manager.cleanup_logs, lab04.NOW)
    log_start = broker.call(lambda: broker.server.log_manager.get_log(orders, 0).log_start_offset)
    prices = kafka.create_topic("prices", **{"cleanup.policy": "compact", "segment.bytes": prices_segment_bytes,
                                             "min.cleanable.dirty.ratio": 0.01})
    for product, price in lab04.PRICES:
        producer.produce(prices, key=product, value=price)
        producer.flush(10)
    producer.close()
    broker.call(broker.server.log_manager.run_cleaner, lab04.NOW)
    consumer = Consumer(kafka.client_config(group_id="lab04-test", enable_auto_commit=False,
                                            auto_offset_reset="earliest"))
    try:
        consumer.assign([TopicPartition(orders, 0, 0)])
        msg = None
        for _ in range(40):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                break
        first_offset_read = msg.offset() if msg is not None and msg.error() is None else None
    finally:
        consumer.close()
    return dict(orders=orders, segment_count=len(segments), segment_of_30=segment_of_30,
                position_of_30=position_of_30, log_start=log_start, first_offset_read=first_offset_read,
                prices=prices, latest_prices={k.encode(): v.encode() for k, v in lab04.expected_prices().items()})


def test_check_04_passes_right_answers_in_any_type(lab04_kafka, capsys):
    answers = _do_lab_04(lab04_kafka)   # latest_prices as bytes, as a consumer reads them
    lab04.check_04(lab04_kafka, **answers)
    assert "All checks passed" in capsys.readouterr().out


def test_check_04_names_the_cause_not_its_consequences(lab04_kafka, capsys):
    answers = _do_lab_04(lab04_kafka, one_batch_each=False, prices_segment_bytes=1 << 20)
    answers.update(log_start=(answers["log_start"], 50), first_offset_read=None)
    with pytest.raises(LabCheckFailed):
        lab04.check_04(lab04_kafka, **answers)
    out = capsys.readouterr().out
    assert "share" in out and "flush() after each produce()" in out            # step 1: the real cause
    assert "the topic of step 1 is not right yet" in out                         # later steps point back to it
    assert "log_start is the low watermark, the first of the two" in out
    assert "first_offset_read is None" in out and "auto_offset_reset='earliest'" in out
    assert "all records are in the active segment, which the cleaner never cleans" in out


def test_check_04_turns_any_answer_into_a_checklist(lab04_kafka, capsys):
    """Placeholders, None and values of the wrong type give ✗ lines, never an error from inside the check."""
    topic = lab04_kafka.create_topic("orders")
    garbage = dict(orders=topic, segment_count=pd.DataFrame(), segment_of_30=None, position_of_30=...,
                   log_start="36?", first_offset_read=[36], prices=..., latest_prices=[("apple", "0.80")])
    with pytest.raises(LabCheckFailed, match="7 of 7 checks failed"):
        lab04.check_04(lab04_kafka, **garbage)
    out = capsys.readouterr().out
    assert sum(line.startswith("  ✗ ") for line in out.splitlines()) == 7 and "Traceback" not in out
    assert "segment_of_30 is None" in out and "prices is still `...`" in out   # not "not the name of a topic"
    assert "Ellipsis" not in out
