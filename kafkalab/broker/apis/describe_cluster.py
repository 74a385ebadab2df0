"""DescribeCluster (key 60), versions 0-2: the brokers, the controller and the cluster id (KIP-700).

What ``AdminClient.describe_cluster()`` shows. A standalone mini broker is
the whole cluster and its own controller; in cluster mode the live brokers
(with racks) and the controller id come from the metadata cache, as the
controller's last UpdateMetadata described them.

v0   brokers (id, host, port, rack), controller id, cluster id, cluster authorized operations
v1   + endpoint_type (KIP-919): 1 = brokers; 2 = controllers gets MISMATCHED_ENDPOINT_TYPE from a
     broker, any other type UNSUPPORTED_ENDPOINT_TYPE, as in Kafka 3.9 (``AuthHelper.computeDescribeClusterResponse``)
v2   + include_fenced_brokers / is_fenced (KIP-1073): a KRaft broker (kafkalab.kraft) lists the registered
     brokers the controller has fenced too, with is_fenced (as Kafka 4.4 does); elsewhere none is fenced
KIP-430 cluster authorized operations when asked for: what the principal may do on the cluster (0 without
DESCRIBE on it), every operation the cluster supports without an authorizer (Kafka's ``AuthHelper``); not asked
for, -2147483648, "not provided".
"""
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import (
    CLUSTER_NAME, AclOperation, ResourceType, authorize_cluster, authorized_operations)
from . import api

BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2


@api(DescribeClusterRequest, DescribeClusterResponse, versions=(0, 2))
async def handle_describe_cluster(ctx, request):
    broker = ctx.broker
    endpoint_type = request.endpoint_type if ctx.api_version >= 1 else BROKERS_ENDPOINT
    if endpoint_type != BROKERS_ENDPOINT:
        if endpoint_type == CONTROLLERS_ENDPOINT:    # a real endpoint type, but a broker is not a controller
            code, message = (ErrorCode.MISMATCHED_ENDPOINT_TYPE, "The request was sent to an endpoint of type "
                             "BROKER, but we wanted an endpoint of type CONTROLLER")
        else:
            code, message = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}"
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
                "endpoint_type": endpoint_type, "cluster_id": broker.cluster_id, "controller_id": -1, "brokers": []}
    brokers = [{"broker_id": b.id, "host": b.host, "port": b.port, "rack": b.rack, "is_fenced": False}
               for b in broker.live_broker_nodes_for(ctx.listener_name)]   # the request's listener's endpoints
    if ctx.api_version >= 2 and request.include_fenced_brokers:
        fenced = broker.fenced_broker_nodes     # KRaft: registered but fenced
        brokers = sorted(brokers + [{"broker_id": b.id, "host": b.host, "port": b.port, "rack": b.rack,
                                     "is_fenced": True} for b in fenced], key=lambda b: b["broker_id"])
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": BROKERS_ENDPOINT,
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id,
        "brokers": brokers,
        # KIP-430: what the principal may do on the cluster (0 without DESCRIBE on it; every operation without an
        # authorizer); not asked for, None, which the codec writes as -2147483648 ("omitted")
        "authorized_operations": (
            None if not request.include_cluster_authorized_operations
            else authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
            if authorize_cluster(ctx, AclOperation.DESCRIBE) else set()),
    }
