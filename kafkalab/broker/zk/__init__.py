"""ZooKeeper: Kafka's znodes (:mod:`.zk_data`) and the client that reads and writes them."""
