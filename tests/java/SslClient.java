// Kafka's Java KafkaProducer and KafkaConsumer over an SSL listener with PEM stores (KIP-651), for
// tests/integration/test_tls_java_client.py. Test code only: compiled with javac against the jars of Apache Kafka's
// distribution (kafka-clients 4.x).
//
//   run BOOTSTRAP TOPIC N TRUSTSTORE_PEM [KEYSTORE_PEM]
//         produces N records (acks=all) and prints "ACKED <n>", then reads the topic from the start with
//         assign() and prints "CONSUMED <n>" (within 30 s). KEYSTORE_PEM: a key and certificate chain for mutual TLS.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class SslClient {
    static Properties ssl(String bootstrap, String truststore, String keystore) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SSL");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", truststore);
        if (keystore != null) {
            p.put("ssl.keystore.type", "PEM");
            p.put("ssl.keystore.location", keystore);
        }
        return p;
    }

    public static void main(String[] a) {
        String bootstrap = a[1], topic = a[2], truststore = a[4], keystore = a.length > 5 ? a[5] : null;
        int n = Integer.parseInt(a[3]);
        Properties p = ssl(bootstrap, truststore, keystore);
        p.put("acks", "all");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        int acked = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) sent.add(producer.send(new ProducerRecord<>(topic, "k", "v" + i)));
            for (java.util.concurrent.Future<RecordMetadata> f : sent) {
                try { f.get(); acked++; } catch (Exception e) { System.err.println(e); }
            }
        }
        System.out.println("ACKED " + acked);
        Properties c = ssl(bootstrap, truststore, keystore);
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        int consumed = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 30_000;
            while (consumed < n && System.currentTimeMillis() < deadline) {
                consumed += consumer.poll(Duration.ofMillis(500)).count();
            }
        }
        System.out.println("CONSUMED " + consumed);
        System.out.flush();
    }
}
