"""``kafkalab.streams``: Apache Kafka Streams itself, on the JVM, beside the lessons' Python.

Lesson 06 builds Kafka Streams' WordCount in PySpark; this package runs the real thing next to it::

    from kafkalab.streams import word_count
    with word_count(kafka.bootstrap_servers, "word-count-input", "word-count-output") as app:
        app.wait_until_caught_up()
        print(app.topology)             # Topology.describe()
        print(app.internal_topics())    # ['streams-wordcount-...-changelog', 'streams-wordcount-...-repartition']

``word_count()`` fetches ``org.apache.kafka:kafka-streams`` from the Maven repository once (cached in
``~/.kafkalab/dist``), compiles kafkalab's ``WordCount.java`` against it and runs it in a JVM child
process (:mod:`kafkalab.streams.jvm`, :mod:`kafkalab.streams.app`).
"""
from .app import DEFAULT_CONFIGS, StreamsApp, StreamsError, word_count
from .jvm import STREAMS_VERSION, StreamsJvmError, fetch_streams

__all__ = ["word_count", "StreamsApp", "StreamsError", "StreamsJvmError", "fetch_streams", "STREAMS_VERSION",
           "DEFAULT_CONFIGS"]
