"""The network layer, as Kafka's ``kafka.network`` (``SocketServer``, ``RequestChannel``).

``socket_server``   frames requests off each connection and hands them to the server's handler
                    (a broker's ``kafka_apis.KafkaApis``, a controller's ``RaftServer``)
``request_channel`` what passes between the two: ``Request``, ``InvalidRequest``, ``CloseConnection``
``network_client``  one broker's client to another (Kafka's ``NetworkClient``, used by the
                    controller channel, the replica fetchers and the AlterPartition sender)
"""
