#!/usr/bin/env bash
# Run every test: unit and integration tests (tests/), and nbval over the lessons (notebooks/)
# and the lab solutions (labs/*/solution.ipynb). The exercises are skipped: with their TODOs unfilled
# they fail by design (tests/test_labs.py checks that they do).
# Creates/updates ./.venv first (see scripts/_env.sh) and fetches Apache Kafka 3.9 and 4 for the real-Kafka tests
# (kafkalab fetch-kafka: Maven, cached) and Kafka Connect 3.9 (kafkalab fetch-connect). Extra arguments go to pytest, e.g. -x or -k.
#
# ./scripts/test.sh --fast [pytest args]: the quick loop, a minute or two: ruff (pyproject's [tool.ruff]), mypy
# ([tool.mypy]'s files) and tests/unit only, with no Kafka, Connect or anything else fetched (./.venv is still
# created or updated through _env.sh), stopping at the first of the three that fails. --fast must come first;
# the other arguments go to pytest, e.g. ./scripts/test.sh --fast -k segment, or
# ./scripts/test.sh --fast tests/unit/broker/log to run one directory instead of tests/unit.
# Without --fast the script runs everything, as above (README's test command and .ci/run call it so).
FAST=0
if [ "${1:-}" = "--fast" ]; then
    FAST=1
    shift
fi
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
cd "$ROOT"
if [ "$FAST" = 1 ]; then
    echo "==> ruff check kafkalab tests benchmarks"
    python -m ruff check kafkalab tests benchmarks
    echo "==> mypy (the files of [tool.mypy] in pyproject.toml)"
    python -m mypy
    # tests/unit by default; paths given after --fast replace it
    paths=(tests/unit)
    for arg in "$@"; do
        case "$arg" in tests/*) paths=(); break ;; esac
    done
    echo "==> pytest ${paths[*]} $*"
    exec python -m pytest ${paths[@]+"${paths[@]}"} -p no:cacheprovider -q -n 2 "$@"
fi
# Real Apache Kafka (tests/integration/test_kafka_cluster.py, the lessons checked against it): fetched once
# into ~/.kafkalab/dist (or $KAFKALAB_DIST), then reused without the network.
echo "==> Apache Kafka 3.9 for the tests that run real Kafka: kafkalab fetch-kafka 3.9"
if ! KAFKA_HOME_FOR_TESTS="$(kafkalab fetch-kafka 3.9 | tail -n 1)"; then
    echo "error: could not fetch Apache Kafka (see above); the real-Kafka tests need it" >&2
    exit 1
fi
echo "    $KAFKA_HOME_FOR_TESTS"
echo "==> the Prometheus JMX exporter's agent, for real Kafka's metrics (tests/integration/test_metrics_on_kafka.py)"
if ! JMX_EXPORTER_FOR_TESTS="$(kafkalab fetch-jmx-exporter | tail -n 1)"; then
    echo "error: could not fetch the Prometheus JMX exporter (see above); the real-Kafka metrics tests need it" >&2
    exit 1
fi
echo "    $JMX_EXPORTER_FOR_TESTS"
echo "==> Apache Kafka 4 for the KRaft-mode tests (tests/integration/test_kafka_kraft.py): kafkalab fetch-kafka 4"
if ! KRAFT_HOME_FOR_TESTS="$(kafkalab fetch-kafka 4 | tail -n 1)"; then
    echo "error: could not fetch Apache Kafka 4 (see above); the KRaft-mode tests need it" >&2
    exit 1
fi
echo "    $KRAFT_HOME_FOR_TESTS"
# kafkajs (tests/js/package.json) for tests/integration/test_sasl_ssl_client_matrix.py: where npm is there and the
# registry answers; else its tests skip, saying so
if command -v npm >/dev/null 2>&1; then
    echo "==> kafkajs for the Node.js client tests: npm ci in tests/js"
    (cd tests/js && npm ci --no-audit --no-fund --loglevel=error) ||
        echo "warning: npm ci in tests/js failed; the kafkajs tests will skip" >&2
else
    echo "==> no npm here: the kafkajs tests will skip"
fi
echo "==> Kafka Connect 3.9 for tests/integration/test_kafka_connect.py: kafkalab fetch-connect"
if ! CONNECT_HOME_FOR_TESTS="$(kafkalab fetch-connect | tail -n 1)"; then
    echo "error: could not fetch Kafka Connect (see above); the Connect tests need it" >&2
    exit 1
fi
echo "    $CONNECT_HOME_FOR_TESTS"
# Two pytest-xdist workers: much of the suite waits (session timeouts, JVM and kernel start-up, rebalances)
# rather than computes. --dist loadfile keeps each file on one worker, in order: a notebook's cells (nbval
# items) run in one kernel top to bottom, and a module's shared broker, cluster, JVM or Spark session stays
# shared. `./scripts/test.sh -n 0` runs everything in this one process instead (a later -n wins).
exec python -m pytest tests notebooks labs --ignore-glob='labs/*/exercise.ipynb' \
    --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
    --nbval-cell-timeout 300 -p no:cacheprovider -ra --durations=25 -n 2 --dist loadfile "$@"
