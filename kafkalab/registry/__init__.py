"""A schema registry speaking Confluent Schema Registry's REST API, its state in Kafka's ``_schemas`` topic.

``kafkalab.schema_registry(kafka)`` (:mod:`kafkalab.registry.app`) starts one; ``kafkalab schema-registry
--bootstrap-servers HOST:PORT`` runs one from a shell. Unmodified clients use it: confluent-kafka's
``SchemaRegistryClient``, ``AvroSerializer`` and ``AvroDeserializer``.

Modules, named after the classes of Confluent's registry they stand for:

* :mod:`~kafkalab.registry.rest` -- the REST resources (subjects, schemas, compatibility, config) over HTTP
* :mod:`~kafkalab.registry.kafka_schema_registry` -- ``KafkaSchemaRegistry``: subjects, versions, ids, deletes
* :mod:`~kafkalab.registry.kafka_store` -- ``KafkaStore``: the compacted ``_schemas`` topic, read back at start
* :mod:`~kafkalab.registry.compatibility` -- the compatibility levels (BACKWARD, FORWARD, FULL, ..._TRANSITIVE)
* :mod:`~kafkalab.registry.schemas` -- Avro and JSON Schema parsing and Avro's schema resolution (Apache ``avro``)
* :mod:`~kafkalab.registry.errors` -- Confluent's error codes (40401, 40402, 40403, 40901, 42201, ...)

Why not a real registry: Confluent's is not on the package registries this project reaches, Karapace is not
installable from PyPI, and Apicurio Registry 3.3.3 on Maven Central cannot be started from what is published
there (see docs/schema-registry.md for what was measured).
"""
from .app import SchemaRegistry, schema_registry

__all__ = ["SchemaRegistry", "schema_registry"]
