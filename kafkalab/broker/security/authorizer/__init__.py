"""ACL authorization (Kafka's ``kafka.security.authorizer``): the model of ACLs and filters (:mod:`.acl`), the
authorizer that decides with them (:mod:`.acl_authorizer`), and where they are stored (:mod:`.acl_store`: the
standalone broker's file, and ZooKeeper's ``/kafka-acl`` znodes)."""
