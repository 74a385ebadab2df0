"""The automatic check of lab 10 (KRaft): ``check_10(...)``.

It reads the cluster's metadata log itself (every node's copy of ``__cluster_metadata-0``, decoded with
:func:`kafkalab.tools.metadata_log_df`) and holds the student's answers against it: the topic's id and
leaders from its ``TopicRecord`` and ``PartitionRecord`` s, the new active controller and its epoch from the
``LeaderChange`` record written after the kill, and the ``BrokerRegistrationChangeRecord`` that fenced the
killed broker.
"""
from __future__ import annotations

import pandas as pd

from kafkalab.checks import Report, shown, unfilled, unfilled_detail
from kafkalab.tools import metadata_log_df

PARTITIONS = 3


def metadata_records(cluster) -> pd.DataFrame:
    """The longest copy of the metadata log among the nodes (all of them hold the same committed records)."""
    frames = []
    for node in getattr(cluster, "broker_ids", []):
        try:
            frames.append(metadata_log_df(cluster.metadata_log_dir(node)))
        except OSError:
            continue
    if not frames:
        raise RuntimeError("no node's __cluster_metadata-0 could be read")
    return max(frames, key=len)


def _data(df: pd.DataFrame, key: str):
    return df["data"].map(lambda d: d.get(key))


def check_10(cluster, topic, topic_id, partition_leaders, killed_controller, killed_controller_at, new_controller,
             new_epoch, killed_broker, killed_broker_at, fenced_offset) -> None:
    """Check lab 10 (``labs/10_kraft``); the arguments are the variables the lab asks for."""
    report = Report(f"Lab 10 — the metadata log of a KRaft cluster (topic {shown(topic)})")
    records = metadata_records(cluster)

    # step 1: the topic as records
    topics = records[(records["type"] == "TOPIC_RECORD") & (_data(records, "name") == topic)]
    true_id = topics["data"].iloc[-1]["topicId"] if len(topics) else None
    name = "topic_id is the topicId of the topic's TopicRecord"
    with report.answer(name, "topic_id"):
        if unfilled(topic_id):
            report.step(name, False, unfilled_detail("topic_id", topic_id, "find the row of type TOPIC_RECORD whose "
                                                     "data['name'] is the topic"))
        else:
            report.step(name, str(topic_id) == true_id,
                        f"got {topic_id!r}, the TopicRecord says {true_id!r}"
                        + (" — that is another topic's id" if str(topic_id) in set(_data(records, "topicId")) else ""))
    parts = records[(records["type"] == "PARTITION_RECORD") & (_data(records, "topicId") == true_id)]
    true_leaders = {int(d["partitionId"]): int(d["leader"]) for d in parts["data"]}
    name = f"partition_leaders maps each of the {PARTITIONS} partitions to the leader its PartitionRecord names"
    with report.answer(name, "partition_leaders"):
        if unfilled(partition_leaders):
            report.step(name, False, unfilled_detail("partition_leaders", partition_leaders,
                                                     "one PARTITION_RECORD per partition: data['partitionId'] -> "
                                                     "data['leader']"))
        else:
            got = {int(k): int(v) for k, v in dict(partition_leaders).items()}
            report.step(name, got == true_leaders, f"got {got}, the PartitionRecords say {true_leaders}"
                        + (" — keys are partition ids, values broker ids" if got == {v: k for k, v in true_leaders.items()}
                           else ""))

    # step 2: the election
    elected = records[(records["type"] == "LeaderChange") & (records["timestamp"] >= int(killed_controller_at * 1000))
                      & (_data(records, "leaderId") != killed_controller)]
    true_new = int(elected["data"].iloc[0]["leaderId"]) if len(elected) else None
    true_epoch = int(elected["epoch"].iloc[0]) if len(elected) else None
    name = "new_controller is the leader of the first LeaderChange after the kill"
    with report.answer(name, "new_controller"):
        if unfilled(new_controller):
            report.step(name, False, unfilled_detail("new_controller", new_controller,
                                                     "kr.controller, or data['leaderId'] of the LeaderChange record"))
        else:
            report.step(name, int(new_controller) == true_new,
                        f"got {new_controller}, the LeaderChange record names {true_new}"
                        + (" — that is the controller you killed" if int(new_controller) == killed_controller else ""))
    name = "new_epoch is the epoch of that election (the batch's partition leader epoch)"
    with report.answer(name, "new_epoch"):
        if unfilled(new_epoch):
            report.step(name, False, unfilled_detail("new_epoch", new_epoch,
                                                     "kr.quorum().attrs['leader_epoch'], or the record's epoch column"))
        else:
            report.step(name, int(new_epoch) == true_epoch,
                        f"got {new_epoch}, the election's epoch is {true_epoch}"
                        + (" — that is the epoch before the kill: an election always bumps it"
                           if true_epoch is not None and int(new_epoch) == true_epoch - 1 else ""))

    # step 3: the fencing
    fencing = records[(records["type"] == "BROKER_REGISTRATION_CHANGE_RECORD")
                      & (records["timestamp"] >= int(killed_broker_at * 1000))
                      & (_data(records, "brokerId") == killed_broker) & (_data(records, "fenced") == 1)]
    true_offset = int(fencing["offset"].iloc[0]) if len(fencing) else None
    name = "fenced_offset is the offset of the record that fenced the killed broker"
    with report.answer(name, "fenced_offset"):
        if unfilled(fenced_offset):
            report.step(name, False, unfilled_detail("fenced_offset", fenced_offset,
                                                     "a BROKER_REGISTRATION_CHANGE_RECORD with data['fenced'] == 1"))
        else:
            at = records[records["offset"] == int(fenced_offset)]
            what = f"{at['type'].iloc[0]} {at['data'].iloc[0]}" if len(at) else "no record"
            report.step(name, int(fenced_offset) == true_offset,
                        f"got {fenced_offset} ({what}); broker {killed_broker} was fenced at offset {true_offset}"
                        + (" — fenced: -1 is an unfencing" if len(at) and at["data"].iloc[0].get("fenced") == -1 else ""))
    timeout_s = int(cluster.configs["broker.session.timeout.ms"]) / 1000
    if true_offset is not None:   # fenced a session after the last heartbeat (heartbeats: broker.heartbeat.interval.ms)
        after = fencing["timestamp"].iloc[0] / 1000 - killed_broker_at
        report.step(f"the fencing came about broker.session.timeout.ms ({timeout_s:g} s) after the kill",
                    after >= 0.5 * timeout_s,
                    f"it came {after:.1f} s after the kill: was the broker killed (SIGKILL), or stopped?")
    report.finish()
