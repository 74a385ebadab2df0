"""The ``simple`` share group assignor (KIP-932): every subscribed partition to at least one member; shared when
there are more members than partitions; balanced otherwise."""
from kafkalab.broker.coordinator.group.share_group import simple

TOPICS = {"t": ("tid", 3), "u": ("uid", 1)}


def counts(assignment):
    return {m: sum(len(p) for p in a.values()) for m, a in assignment.items()}


def owners(assignment, topic_id):
    out = {}
    for m, a in assignment.items():
        for p in a.get(topic_id, ()):
            out.setdefault(p, []).append(m)
    return out


def test_fewer_members_than_partitions_each_partition_once_balanced():
    a = simple({"m1": {"t"}, "m2": {"t"}}, TOPICS)
    assert sorted(owners(a, "tid")) == [0, 1, 2] and all(len(ms) == 1 for ms in owners(a, "tid").values())
    assert sorted(counts(a).values()) == [1, 2]


def test_more_members_than_partitions_share_them():
    a = simple({f"m{i}": {"t"} for i in range(5)}, TOPICS)
    assert all(counts(a)[m] == 1 for m in a)                       # every member gets a partition
    assert sorted(len(ms) for ms in owners(a, "tid").values()) == [1, 2, 2]   # partitions shared


def test_one_partition_goes_to_every_member():
    a = simple({"m1": {"u"}, "m2": {"u"}, "m3": {"u", "t"}}, TOPICS)
    assert owners(a, "uid") == {0: ["m1", "m2", "m3"]}
    assert owners(a, "tid") == {0: ["m3"], 1: ["m3"], 2: ["m3"]}    # only m3 subscribes to t


def test_no_members_or_no_partitions():
    assert simple({}, TOPICS) == {}
    assert simple({"m1": {"t"}}, {"t": ("tid", 0)}) == {"m1": {}}
