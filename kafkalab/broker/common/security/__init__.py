"""What every layer shares about security (Kafka's ``org.apache.kafka.common.security``): who a connection is
(:mod:`.kafka_principal`). The listeners, TLS and SASL live in the network layer and the authenticators; the
authorizer, which needs the cluster's ACLs, in :mod:`kafkalab.broker.security`."""
