"""ConsumerGroupDescribe (key 69), versions 0-1: a KIP-848 consumer group, its epochs and members.

v0   flexible from the start (Kafka 3.7; what AdminClient.describeConsumerGroups asks Kafka 4 first)
v1   + member_type per member (KIP-1099, Kafka 4.1): 0 a classic member inside the consumer group (online
     migration), 1 a consumer-protocol member
Not implemented: authorized operations (no ACLs here: answered with Kafka's "not requested" value).

Per group: state (Empty, Assigning, Reconciling, Stable), group epoch,
target assignment epoch, the assignor, and per member its epoch, client,
subscription, current assignment and target assignment (topic ids and names).
A classic group's id answers GROUP_ID_NOT_FOUND ("not a consumer group"), as
in Kafka; so does an unknown one.
"""
from kafka.protocol.api_message import ApiMessage

from ..common.message import schemas
from . import api


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas): pass
class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas): pass


@api(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, versions=(0, 1))
async def handle_consumer_group_describe(ctx, request):
    coordinator = ctx.broker.group_coordinator
    return {"throttle_time_ms": 0,
            "groups": [coordinator.consumer_group_describe(g) for g in request.group_ids or []]}
