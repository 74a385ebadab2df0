"""KIP-430 without an authorizer: every operation the resource type supports, as Kafka's
``AuthHelper.authorizedOperations`` answers, from the ``AclEntry.supportedOperations`` of the Kafka the broker
follows (4.x on a KRaft broker, 3.9 on the others; checked against both by test_differential.py and
test_consumer_group_protocol.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkalab.broker.security.auth_helper import authorized_operations, authorized_operations_field
from kafkalab.broker.security.authorizer.acl import AclOperation as Op, ResourceType
from kafkalab.broker.server.metadata_mode import MetadataMode


def ctx(mode: MetadataMode):
    return SimpleNamespace(broker=SimpleNamespace(authorizer=None, metadata_mode=mode), api_name="Metadata")


@pytest.mark.parametrize("mode", list(MetadataMode))
def test_a_group(mode):
    group = authorized_operations(ctx(mode), ResourceType.GROUP, "g")
    three_nine = {Op.READ, Op.DESCRIBE, Op.DELETE}
    assert group == ({*three_nine, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS} if mode is MetadataMode.KRAFT
                     else three_nine)
    assert authorized_operations_field(ctx(mode), ResourceType.GROUP, "g") == sum(1 << op for op in group)


@pytest.mark.parametrize("mode", list(MetadataMode))
def test_a_topic_and_the_cluster_in_every_mode(mode):
    assert authorized_operations(ctx(mode), ResourceType.TOPIC, "t") == {
        Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
    assert authorized_operations(ctx(mode), ResourceType.CLUSTER, "kafka-cluster") == {
        Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER,
        Op.DESCRIBE}
