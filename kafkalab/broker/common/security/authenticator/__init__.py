"""The broker's SASL authentication, as Kafka's ``org.apache.kafka.common.security.authenticator``: one
:class:`~.sasl_server_authenticator.SaslServerAuthenticator` per connection of a SASL listener, the listener's
configs (:mod:`.sasl_server_config`) and the SCRAM credentials it checks (:mod:`.credential_cache`)."""
