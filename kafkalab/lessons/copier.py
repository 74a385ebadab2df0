"""Lesson 07's consume-transform-produce copier, a process of its own for the lesson to SIGKILL.

Run as a script (the lesson starts it with ``subprocess``, and kills it mid-transaction)::

    python kafkalab/lessons/copier.py BOOTSTRAP SOURCE OUTPUT GROUP MODE BATCH_SIZE SIDE_EFFECTS

It reads partition 0 of SOURCE from GROUP's committed offset (``read_committed``), ``BATCH_SIZE``
records at a time, writes each record to OUTPUT with `` (copied)`` appended to its value, and appends
the source value to the file SIDE_EFFECTS — a side effect outside Kafka, like sending an e-mail.
After writing a batch it prints ``written FIRST LAST`` and waits for a line on standard input (the
lesson's "go on", or a SIGKILL), then commits. MODE chooses how:

* ``transactions``: a ``transactional.id`` of ``copier-OUTPUT``; ``init_transactions()`` fences the
  copier before it and aborts its open transaction; the batch's input offsets go *into* the
  transaction (``send_offsets_to_transaction``) and take effect with ``commit_transaction()``;
* anything else (``no transactions``): an idempotent producer, and ``consumer.commit(offsets)``
  after the batch is written — at-least-once.

It prints ``done`` once it has copied up to the end SOURCE had when it started. The script imports
confluent-kafka only (not kafkalab), so that each of the lesson's many restarts is quick.
"""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def copy(bootstrap, source, output, group, mode, batch_size, side_effects):
    transactions = mode == "transactions"
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True,
                         **({"transactional.id": "copier-" + output} if transactions else {})})
    if transactions:
        producer.init_transactions(30)     # fences the copier before it and aborts its open transaction
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(source, 0)])     # no offset: start at the group's committed offset
    end = consumer.get_watermark_offsets(TopicPartition(source, 0), timeout=10)[1]
    batch, position = [], None
    while position != end:
        batch += [m for m in consumer.consume(int(batch_size) - len(batch), timeout=1) if m.error() is None]
        if not batch or (len(batch) < int(batch_size) and batch[-1].offset() + 1 < end):
            continue
        if transactions:
            producer.begin_transaction()
        with open(side_effects, "a") as effects:
            for msg in batch:
                producer.produce(output, key=msg.key(), value=msg.value() + b" (copied)")
                effects.write(msg.value().decode() + "\n")               # "send an e-mail"
        position = batch[-1].offset() + 1
        offsets = [TopicPartition(source, 0, position)]
        if transactions:
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
        producer.flush(30)
        print("written", batch[0].offset(), batch[-1].offset(), flush=True)
        sys.stdin.readline()                 # the notebook says go on - or sends SIGKILL
        if transactions:
            producer.commit_transaction(30)
        else:
            consumer.commit(offsets=offsets, asynchronous=False)
        batch = []
    print("done", flush=True)


if __name__ == "__main__":
    copy(*sys.argv[1:8])
