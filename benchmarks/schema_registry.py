"""kafkalab's schema registry: start and restart time, the cost of a registration and of a lookup by id.

    python -m benchmarks.schema_registry [--versions 200] [--lookups 2000] [--bootstrap-servers H:P] [--json F]

Against a mini broker it starts in this process (or any Kafka with --bootstrap-servers, on a fresh topic):
* ``start``: ``kafkalab.schema_registry()`` until it serves (topic created, transactional producer initialised,
  ``_schemas`` read to its end); ``restart``: close and start again, reading back ``--versions`` versions;
* ``register``: ``POST /subjects/{s}/versions`` of a new compatible version (a compatibility check against the
  latest version, one transaction, read back before the answer), median and 95th percentile;
* ``lookup``: ``GET /schemas/ids/{id}``, median and 95th percentile;
* ``serialize``: confluent-kafka's ``AvroSerializer`` records/s once the id is cached (the registry is not asked).
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid


import kafkalab  # noqa: E402
from tests.helpers.registry_helpers import Rest, record  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(bootstrap_servers: str, versions: int, lookups: int) -> dict:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = f"_schemas_bench_{uuid.uuid4().hex[:8]}"
    t = time.perf_counter()
    registry = kafkalab.schema_registry(bootstrap_servers, topic=topic)
    start = time.perf_counter() - t
    try:
        rest = Rest(registry.url)
        register = []
        for i in range(versions):
            body = record("Bench", *[(f"f{j}", "int", j) for j in range(i + 1)])   # each adds a field with a default
            t = time.perf_counter()
            status, answer = rest.post("/subjects/bench-value/versions", body)
            register.append(time.perf_counter() - t)
            assert status == 200, answer
        lookup = []
        for i in range(lookups):
            t = time.perf_counter()
            status, _ = rest.get(f"/schemas/ids/{1 + i % versions}")
            lookup.append(time.perf_counter() - t)
            assert status == 200
        t = time.perf_counter()
        registry.restart()
        restart = time.perf_counter() - t
        assert rest.get("/subjects/bench-value/versions")[1] == list(range(1, versions + 1))

        serializer = AvroSerializer(SchemaRegistryClient({"url": registry.url}),
                                    json.dumps({"type": "record", "name": "Ser", "fields": [
                                        {"name": "n", "type": "long"}, {"name": "s", "type": "string"}]}))
        context = SerializationContext("ser", MessageField.VALUE)
        serializer({"n": 0, "s": "x"}, context)                         # registers, then cached
        count = 20_000
        t = time.perf_counter()
        for n in range(count):
            serializer({"n": n, "s": "some text"}, context)
        serialize = count / (time.perf_counter() - t)
    finally:
        registry.close()
    return {"start_s": round(start, 3), "restart_s": round(restart, 3), "versions": versions,
            "register_ms_median": round(statistics.median(register) * 1e3, 2),
            "register_ms_p95": round(percentile(register, 0.95) * 1e3, 2),
            "lookup_ms_median": round(statistics.median(lookup) * 1e3, 3),
            "lookup_ms_p95": round(percentile(lookup, 0.95) * 1e3, 3),
            "serialize_records_per_s": round(serialize)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", help="any Kafka (default: a mini broker started here)")
    parser.add_argument("--versions", type=int, default=200)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--json", help="also write the result to this file")
    args = parser.parse_args()
    if args.bootstrap_servers:
        result = run(args.bootstrap_servers, args.versions, args.lookups)
    else:
        with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as log_dir, kafkalab.mini(log_dir=log_dir) as broker:
            result = run(broker.bootstrap_servers, args.versions, args.lookups)
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
