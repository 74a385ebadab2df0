"""The broker's security: who may do what (:mod:`kafkalab.broker.security.authorizer`, Kafka's
``kafka.security.authorizer``) and the checks the request handlers make (:mod:`.auth_helper`, Kafka's
``kafka.server.AuthHelper``)."""
