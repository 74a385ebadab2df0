"""Kafka's ZooKeeper-mode controller (``kafka.controller``), in small modules; named ``zk_controller`` so that it
cannot be taken for the KRaft controller, :mod:`kafkalab.controller` (``org.apache.kafka.controller``).

* :mod:`.kafka_controller`            ``KafkaController``: entry points, ZooKeeper watches -> events, responses
* :mod:`.controller_failover`         its election through ``/controller``, failover and resignation
* :mod:`.broker_changes`              its broker changes (``onBrokerStartup``/``onBrokerFailure``), controlled shutdown
* :mod:`.partition_changes`           its topic/partition changes, AlterPartition, preferred/unclean elections
* :mod:`.controller_event_manager`    ``ControllerEventManager``: the single event queue
* :mod:`.partition_state_machine`     ``PartitionStateMachine``: partitions going online, leader elections
* :mod:`.replica_state_machine`       ``ReplicaStateMachine``: replicas going online / offline (out of the ISR)
* :mod:`.topic_deletion_manager`      ``TopicDeletionManager``: deleting topics
* :mod:`.controller_context`          ``ControllerContext``: the controller's view of the cluster
* :mod:`.controller_channel_manager`  ``ControllerChannelManager`` and the request batch
* :mod:`.election`                    leader election algorithms

Rack-unaware replica placement for new topics is :mod:`kafkalab.broker.common.admin_utils`, which the ZooKeeper
client's ``AdminZkClient`` uses too.
"""
from .kafka_controller import KafkaController

__all__ = ["KafkaController"]
