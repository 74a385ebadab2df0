"""SASL/PLAIN (RFC 4616) as Kafka's ``org.apache.kafka.common.security.plain``: the server (:mod:`.plain_sasl_server`)
checking a user name and password against the ``user_<name>="<password>"`` options of the listener's
``PlainLoginModule`` JAAS entry."""
