"""ZooKeeper, as Kafka's ``kafka.zk``: Kafka's znodes and their JSON (:mod:`.zk_data`), the client that reads and
writes them (:mod:`.kafka_zk_client`, ``KafkaZkClient``) and the admin operations on them (:mod:`.admin_zk_client`,
``AdminZkClient``)."""
