"""ShareGroupDescribe (key 77), version 1: a KIP-932 share group, its epochs and members.

v0   Kafka 4.0's early access (not served)
v1   flexible; the first production version (Kafka 4.1)
KIP-430: with ``include_authorized_operations``, what the principal may do on each group found (every group
operation without an authorizer), as Kafka 4's ``KafkaApis.handleShareGroupDescribe``.

Per group: state (Empty, Stable), group epoch, assignment epoch, the assignor (``simple``), and per member its
epoch, client, subscription and assignment (topic ids and names). The id of a classic or consumer group
answers GROUP_ID_NOT_FOUND ("not a share group"), as in Kafka; so does an unknown one.
"""
from kafka.protocol.api_message import ApiMessage

from ..common.message import schemas
from . import api
from .consumer_group_describe import describe_groups   # the same refusal and KIP-430 operations per group


class ShareGroupDescribeRequest(ApiMessage, load_json=schemas): pass
class ShareGroupDescribeResponse(ApiMessage, load_json=schemas): pass


@api(ShareGroupDescribeRequest, ShareGroupDescribeResponse, versions=(1, 1))
async def handle_share_group_describe(ctx, request):
    coordinator = ctx.broker.group_coordinator
    return {"throttle_time_ms": 0, "groups": describe_groups(ctx, request, coordinator.share_group_describe)}
