"""JSON schemas of the ZooKeeper-era inter-broker messages (see ``zk_messages.py``).

kafka-python's ``load_json`` reads ``<MessageName>.json`` from the package of
the module it is given, so ``zk_messages`` passes this package.
"""
