"""A consume-transform-produce copier run as its own process, as Kafka's system test
``transactions_test.py`` runs its ``TransactionalMessageCopier`` instances:

    python tests/helpers/txn_copier.py BOOTSTRAP SRC DST GROUP TRANSACTIONAL_ID

A ``read_committed`` consumer in GROUP reads SRC; each batch is produced to the same partition of DST
in a transaction of TRANSACTIONAL_ID together with the consumer's positions
(``send_offsets_to_transaction``), then committed. Each commit prints ``copied N`` on standard output
(the owner's progress signal); a failed instance aborts, prints ``restart: <error>`` and starts over
from the committed offsets as a new instance (fencing the old one). The process ends when its standard
input closes: the owner closed it, or died (then the kernel closed it), so no copier outlives its test.
"""
from __future__ import annotations

import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer

WAIT_S = 45


def say(line: str) -> None:
    sys.stdout.write(line.replace("\n", " ") + "\n")
    sys.stdout.flush()


def instance(bootstrap: str, src: str, dst: str, group: str, txn_id: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "session.timeout.ms": 6000})
    consumer.subscribe([src])
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 10000})
    try:
        producer.init_transactions(WAIT_S)
        while True:
            msgs = [m for m in consumer.consume(20, 0.5) if not m.error()]
            if not msgs:
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce(dst, m.value(), partition=m.partition())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), WAIT_S)
            producer.commit_transaction(WAIT_S)
            say(f"copied {len(msgs)}")
    except KafkaException:
        try:
            producer.abort_transaction(10)
        except KafkaException:
            pass
        raise
    finally:
        consumer.close()


def main(argv: list[str]) -> None:
    bootstrap, src, dst, group, txn_id = argv

    def owner_gone() -> None:        # standard input closed: the owner is done with us, or dead
        sys.stdin.buffer.read()
        os._exit(0)
    threading.Thread(target=owner_gone, daemon=True).start()
    say("started")
    while True:
        try:
            instance(bootstrap, src, dst, group, txn_id)
        except KafkaException as exc:   # start over: a new instance from the committed offsets
            say(f"restart: {exc}")
            time.sleep(0.5)


if __name__ == "__main__":
    main(sys.argv[1:])
