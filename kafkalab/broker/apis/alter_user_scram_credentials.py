"""AlterUserScramCredentials (key 51), version 0: create, change or delete users' SCRAM credentials (KIP-554).

Each upsertion carries a user, a mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), the iterations, the salt and the
salted password (the client salts and hashes: the password never crosses the wire); each deletion a user and a
mechanism. One result per user. A credential created here authenticates at once, a deleted one no more. The checks,
error codes and where the credentials are kept: :mod:`kafkalab.broker.server.credential_provider`. In ZooKeeper
mode only the active controller alters them (another broker answers NOT_CONTROLLER, as Kafka 3.9's does; the admin
client sends the request to the controller); ALTER on the cluster is required (CLUSTER_AUTHORIZATION_FAILED). A
KRaft broker forwards the request to the active controller (:mod:`kafkalab.controller.scram_control_manager`).

v0   deletions, upsertions (flexible)
"""
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, authorize_cluster
from . import api


def every_user(request, code: int, message: str | None = None) -> dict:
    """Kafka's ``getErrorResponse``: every user of the request once, with the one error (by default no message);
    also the KRaft controller's and the forwarding broker's answer when the request fails as a whole."""
    users = dict.fromkeys([u.name for u in request.upsertions or ()] + [d.name for d in request.deletions or ()])
    return {"throttle_time_ms": 0, "results": [{"user": u, "error_code": int(code), "error_message": message}
                                               for u in users]}


@api(AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, versions=(0, 0))
async def handle_alter_user_scram_credentials(ctx, request):
    broker = ctx.broker
    if getattr(broker, "zk_client", None) is not None:   # ZooKeeper mode: the active controller alters them (3.9)
        controller = getattr(broker, "kafka_controller", None)
        if controller is None or not controller.is_active:
            return every_user(request, ErrorCode.NOT_CONTROLLER)
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return every_user(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    results = await broker.credential_provider.alter(list(request.upsertions or ()), list(request.deletions or ()))
    return {"throttle_time_ms": 0, "results": results}
