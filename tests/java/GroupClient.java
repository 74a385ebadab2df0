// Kafka's Java KafkaConsumer in a consumer group, for tests/integration/test_java_consumer_group.py. Test code
// only: compiled with javac against the jars of Apache Kafka's distribution (kafka-clients 4.x).
//
//   consume BOOTSTRAP TOPIC GROUP PROTOCOL EXPECTED SECONDS
//         subscribe() with group.protocol=PROTOCOL (classic or consumer), poll, commitSync() after each poll
//         that returned records; stops once EXPECTED records were consumed, 3 s after its last record or
//         assignment, or after SECONDS. Prints "ASSIGNED <partitions>" / "REVOKED <partitions>" at each rebalance callback, then
//         "CONSUMED <n>" and "GROUP_METADATA <member id> <generation, or the member epoch>".
//   produce BOOTSTRAP TOPIC N
//         a KafkaProducer with acks=all and enable.idempotence=true sends N records (key "k<i % 12>", value the
//         8-digit i), flushes, and prints "ACKED <n>" and "FAILED <n>" (records its callback saw succeed / fail).
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class GroupClient {
    static String partitions(Collection<TopicPartition> tps) {
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) ps.add(tp.partition());
        Collections.sort(ps);
        StringBuilder b = new StringBuilder();
        for (int p : ps) b.append(b.length() == 0 ? "" : ",").append(p);
        return b.length() == 0 ? "-" : b.toString();
    }

    static void produce(String bootstrap, String topic, int n) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        AtomicInteger acked = new AtomicInteger(), failed = new AtomicInteger();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + (i % 12), String.format("%08d", i)),
                              (md, e) -> (e == null ? acked : failed).incrementAndGet());
            }
            producer.flush();
        }
        System.out.println("ACKED " + acked.get());
        System.out.println("FAILED " + failed.get());
        System.out.flush();
    }

    public static void main(String[] a) {
        if (a[0].equals("produce")) {
            produce(a[1], a[2], Integer.parseInt(a[3]));
            return;
        }
        String bootstrap = a[1], topic = a[2], group = a[3], protocol = a[4];
        int expected = Integer.parseInt(a[5]);
        long deadline = System.currentTimeMillis() + 1000L * Integer.parseInt(a[6]);
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("group.protocol", protocol);
        c.put("client.id", "java-" + UUID.randomUUID().toString().substring(0, 6));
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        int consumed = 0;
        long[] lastProgress = {0};   // the last record or assignment: 3 s without either, and the member is done
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    System.out.println("REVOKED " + partitions(tps));
                }
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    System.out.println("ASSIGNED " + partitions(tps));
                    lastProgress[0] = System.currentTimeMillis();
                }
            });
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (!records.isEmpty()) {
                    consumed += records.count();
                    lastProgress[0] = System.currentTimeMillis();
                    consumer.commitSync();
                }
                if (consumed >= expected || (lastProgress[0] > 0 && System.currentTimeMillis() - lastProgress[0] > 3000)) {
                    break;
                }
            }
            ConsumerGroupMetadata m = consumer.groupMetadata();
            System.out.println("CONSUMED " + consumed);
            System.out.println("GROUP_METADATA " + m.memberId() + " " + m.generationId());
            System.out.flush();
        }
    }
}
