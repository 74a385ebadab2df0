// Kafka's Java client (kafka-clients 3.9.2) exercising transactions against a broker, for
// tests/integration/test_java_transactions.py. Test code only: it is compiled with javac against the
// Kafka Streams jars kafkalab.streams fetches (they include kafka-clients).
//
//   copy  BOOTSTRAP IN OUT GROUP TXN_ID N ABORT_EVERY  consume-transform-produce with sendOffsetsToTransaction:
//         one transaction per poll; every ABORT_EVERY-th transaction is aborted on purpose and the consumer
//         rewound to its committed offsets, as an application does after an abort. Stops after N records
//         committed. Prints "COMMITTED <transactions>" and "ABORTED <transactions>".
//   count BOOTSTRAP TOPIC ISOLATION EXPECTED          a consumer (assign, from the beginning) with
//         isolation.level=ISOLATION; prints "VALUES <n> <distinct n>" once it reached the end offsets (for
//         read_committed: the last stable offset) with at least EXPECTED values, or 15 s passed.
//   fence BOOTSTRAP TOPIC TXN_ID                       two producers with one transactional.id: the older one
//         is fenced. Prints "COMMIT <exception class>" and "ABORT <exception class>" of the older one.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class TxnClient {
    static Properties producerProps(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("transaction.timeout.ms", "20000");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return p;
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String isolation) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        if (group != null) c.put("group.id", group);
        c.put("isolation.level", isolation);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("max.poll.records", "25");   // many small transactions
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaConsumer<>(c);
    }

    static void copy(String[] a) {
        String bootstrap = a[1], in = a[2], out = a[3], group = a[4], txnId = a[5];
        int n = Integer.parseInt(a[6]), abortEvery = Integer.parseInt(a[7]);
        int committed = 0, aborted = 0, copied = 0, txn = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap, txnId));
             KafkaConsumer<String, String> consumer = consumer(bootstrap, group, "read_committed")) {
            producer.initTransactions();
            consumer.subscribe(Collections.singletonList(in));
            long deadline = System.currentTimeMillis() + 60_000;
            while (copied < n && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (abortEvery > 0 && ++txn % abortEvery == 0) {
                    producer.abortTransaction();
                    aborted++;
                    // the records of an aborted transaction are read again: back to the committed offsets
                    Map<TopicPartition, OffsetAndMetadata> last = consumer.committed(consumer.assignment());
                    for (TopicPartition tp : consumer.assignment()) {
                        OffsetAndMetadata o = last.get(tp);
                        consumer.seek(tp, o == null ? 0 : o.offset());
                    }
                } else {
                    producer.commitTransaction();
                    committed++;
                    copied += records.count();
                }
            }
        }
        System.out.println("COMMITTED " + committed);
        System.out.println("ABORTED " + aborted);
        System.out.println("COPIED " + copied);
    }

    static void count(String[] a) {
        String bootstrap = a[1], topic = a[2], isolation = a[3];
        int expected = Integer.parseInt(a[4]);
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = consumer(bootstrap, null, isolation)) {
            List<TopicPartition> tps = new ArrayList<>();
            consumer.partitionsFor(topic).forEach(p -> tps.add(new TopicPartition(topic, p.partition())));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            // the end offsets honour the isolation level: the last stable offset for read_committed
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 15_000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) values.add(r.value());
                boolean atEnd = true;
                for (TopicPartition tp : tps) atEnd &= consumer.position(tp) >= end.get(tp);
                if (atEnd && values.size() >= expected) break;
            }
        }
        System.out.println("VALUES " + values.size() + " " + new HashSet<>(values).size());
    }

    static void fence(String[] a) {
        String bootstrap = a[1], topic = a[2], txnId = a[3];
        KafkaProducer<String, String> older = new KafkaProducer<>(producerProps(bootstrap, txnId));
        older.initTransactions();
        older.beginTransaction();
        older.send(new ProducerRecord<>(topic, "k", "from the zombie"));
        older.flush();
        try (KafkaProducer<String, String> newer = new KafkaProducer<>(producerProps(bootstrap, txnId))) {
            newer.initTransactions();   // bumps the epoch and aborts the older producer's transaction
            // The zombie's next write carries the old epoch: the partition leader refuses it with
            // INVALID_PRODUCER_EPOCH, an abortable error, so its commit fails ...
            try {
                older.send(new ProducerRecord<>(topic, "k", "still the zombie"));
                older.commitTransaction();
                System.out.println("COMMIT ok");
            } catch (KafkaException e) {
                System.out.println("COMMIT " + e.getClass().getSimpleName());
            }
            // ... and aborting asks the coordinator (EndTxn with the old epoch): PRODUCER_FENCED, fatal.
            try {
                older.abortTransaction();
                System.out.println("ABORT ok");
            } catch (KafkaException e) {
                System.out.println("ABORT " + e.getClass().getSimpleName());
            }
            newer.beginTransaction();
            newer.send(new ProducerRecord<>(topic, "k", "from the new producer"));
            newer.commitTransaction();
        } finally {
            older.close(Duration.ZERO);
        }
    }

    public static void main(String[] a) {
        switch (a[0]) {
            case "copy": copy(a); break;
            case "count": count(a); break;
            case "fence": fence(a); break;
            default: throw new IllegalArgumentException(a[0]);
        }
    }
}
