"""SASL/SCRAM (RFC 5802, RFC 7677) as Kafka's ``org.apache.kafka.common.security.scram``: the mechanisms
(:mod:`.scram_mechanism`), the credential a broker stores (:mod:`.scram_credential`), the messages
(:mod:`.scram_messages`), the computations (:mod:`.scram_formatter`) and the server side of the exchange
(:mod:`.scram_sasl_server`)."""
