"""The automatic check of lab 01 (partitions and keys): ``check_01(...)``.

It reads the student's topic back with its own consumer (every partition, from
the start) and checks what the broker stored — which key each record has, which
partition each account's payments went to, their order — and the answers the
student computed. Expected values come from the data and from Kafka's murmur2
partitioner (:mod:`kafkalab.partitioner`), not from the student's results.
"""
from __future__ import annotations

import collections

from kafkalab.checks import Report, as_text, read_partition, unfilled, unfilled_detail, shown
from kafkalab.partitioner import murmur2_partition

PARTITIONS = 6
ASKED_ACCOUNT = "acct-07"

# Who may pay from which account: joint accounts are shared by two customers.
_HOLDERS = {f"acct-{n:02d}": ([f"cust-{n:02d}"] if n % 3 else [f"cust-{n:02d}", f"cust-{n + 20:02d}"])
            for n in range(1, 13)}

#: (account, customer, sequence number within the account, amount in cents), in the order they happen
PAYMENTS = []
_seq = collections.Counter()
for _i in range(72):
    _account = f"acct-{(_i * 5) % 12 + 1:02d}"
    _holders = _HOLDERS[_account]
    _seq[_account] += 1
    PAYMENTS.append((_account, _holders[_seq[_account] % len(_holders)], _seq[_account], 100 + (_i * 37) % 900))


def _partitions_of(kafka, topic):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers, "log_level": 4})
    meta = admin.list_topics(topic, timeout=15).topics.get(topic)
    if meta is None or meta.error is not None:
        return None
    return len(meta.partitions)


def _parse(value: bytes):
    """'acct-07,cust-07,3,512' -> (account, customer, seq) or None."""
    try:
        account, customer, seq, _ = value.decode().split(",")
        return account, customer, int(seq)
    except Exception:  # noqa: BLE001 -- any other value format
        return None


def check_01(kafka, topic, predicted_partition, partitions_of, in_order) -> None:
    """Check lab 01 (``labs/01_partitions``); the arguments are the variables the lab asks for."""
    report = Report(f"Lab 01 — partitions and keys (topic {shown(topic)})")
    count = None if unfilled(topic) else _partitions_of(kafka, str(topic))

    name = f"step 1: the topic has {PARTITIONS} partitions and holds the {len(PAYMENTS)} payments once each"
    stored = {}
    if count is None:
        report.step(name, False, "topic is not the name of a topic on the broker — "
                                 "topic = kafka.create_topic('payments', partitions=6)")
    else:
        for p in range(count):
            stored[p] = read_partition(kafka.bootstrap_servers, str(topic), p)
        total = sum(len(v) for v in stored.values())
        problems = []
        if count != PARTITIONS:
            problems.append(f"the topic has {count} partitions, expected {PARTITIONS}")
        if total != len(PAYMENTS):
            problems.append(f"the topic holds {total} records, expected {len(PAYMENTS)} — produce every payment exactly "
                            f"once (re-run the notebook from the top rather than the produce cell twice)")
        report.step(name, not problems, "\n".join(problems))

    records = [(p, m.offset(), m.key(), _parse(m.value() or b"")) for p, msgs in stored.items() for m in msgs]
    unparsed = [r for r in records if r[3] is None]

    name = "step 1: every account's payments are in one partition"
    where = collections.defaultdict(set)
    for p, _, _, parsed in records:
        if parsed is not None:
            where[parsed[0]].add(p)
    split = sorted(a for a, ps in where.items() if len(ps) > 1)
    if count is not None and count != PARTITIONS:
        report.step(name, False, f"fix the first step first: with {count} partition(s) this proves nothing")
    elif not records or unparsed:
        report.step(name, False, "no payments to look at" if not records else
                    f"{len(unparsed)} record(s) whose value is not 'account,customer,seq,amount' — produce "
                    f"value=f'{{account}},{{customer}},{{seq}},{{amount}}'")
    else:
        keys = {as_text(k) for _, _, k, _ in records}
        hint = ""
        if keys and keys <= {c for _, c, _, _ in PAYMENTS}:
            hint = (" — your key is the customer, but joint accounts have two customers: their payments "
                    "then go to two partitions")
        elif None in keys:
            hint = " — records without a key are spread over the partitions"
        report.step(name, not split, f"split over several partitions: {', '.join(split)}{hint}")

    name = "step 1: each account is where the Java client would put it (murmur2 of the account)"
    wrong = sorted(a for a, ps in where.items() if ps != {murmur2_partition(a, PARTITIONS)})
    if not records or split or unparsed or count != PARTITIONS:
        report.step(name, False, "fix the steps above first")
    else:
        report.step(name, not wrong,
                    f"{len(wrong)} account(s) elsewhere, e.g. {wrong[:3]} — key by the account, and set "
                    f"partitioner='murmur2_random' in the producer's config (confluent-kafka's default, "
                    f"consistent_random, hashes with CRC32)")

    name = "step 1: in each partition, every account's payments are in the order they happened"
    seqs = collections.defaultdict(list)
    for p, offset, _, parsed in sorted(records, key=lambda r: (r[0], r[1])):
        if parsed is not None:
            seqs[parsed[0]].append(parsed[2])
    disordered = sorted(a for a, s in seqs.items() if s != sorted(s))
    report.step(name, bool(records) and not disordered and not split and count == PARTITIONS,
                "fix the steps above first" if not records or split or count != PARTITIONS else
                f"out of order: {disordered} — produce PAYMENTS in the order given")

    name = f"step 2: predicted_partition is where the Java client puts {ASKED_ACCOUNT!r} in a 6-partition topic"
    want = murmur2_partition(ASKED_ACCOUNT, PARTITIONS)
    with report.answer(name, "predicted_partition"):
        if unfilled(predicted_partition):
            report.step(name, False, unfilled_detail("predicted_partition", predicted_partition,
                                                     "kafkalab.partitioner.murmur2_partition(key, partitions)"))
        else:
            report.step(name, int(predicted_partition) == want,
                        f"got {predicted_partition}, expected {want} — murmur2, not CRC32, and 6 partitions")

    name = "step 3: partitions_of and in_order describe what you read back"
    with report.answer(name, "partitions_of / in_order"):
        if unfilled(partitions_of) or unfilled(in_order):
            which = "partitions_of" if unfilled(partitions_of) else "in_order"
            report.step(name, False, unfilled_detail(which, partitions_of if which == "partitions_of" else in_order))
        else:
            got_where = {as_text(a): {int(p) for p in ps} for a, ps in dict(partitions_of).items()}
            got_order = {as_text(a): bool(ok) for a, ok in dict(in_order).items()}
            want_order = {a: s == sorted(s) for a, s in seqs.items()}
            problems = []
            if got_where != dict(where):
                problems.append(f"partitions_of should map each account to the set of partitions its payments are in; "
                                f"got {dict(sorted(got_where.items()))}")
            if got_order != want_order:
                problems.append("in_order should map each account to whether its sequence numbers, read back, are "
                                "ascending")
            report.step(name, not problems, "\n".join(problems))

    report.finish()
