// Kafka's Java KafkaProducer and KafkaConsumer over a SASL_SSL listener, for
// tests/integration/test_sasl_ssl_client_matrix.py. Test code only: compiled with javac against the jars of Apache
// Kafka's distribution (kafka-clients 4.x). The model is SslClient.java; the security settings come from a file.
//
//   BOOTSTRAP TOPIC N CLIENT_PROPERTIES
//         CLIENT_PROPERTIES: the client's security configs (security.protocol, sasl.mechanism, sasl.jaas.config,
//         ssl.truststore.*). Produces N records keyed k<i> with values v<i> (acks=all), prints "ACKED <n>"; then
//         reads every partition of the topic from the start with assign(), printing "RECORD <key> <value>" for each
//         and "CONSUMED <n>" (within 30 s).
import java.io.FileInputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class SaslClient {
    static Properties client(String bootstrap, String file) throws IOException {
        Properties p = new Properties();
        try (FileInputStream in = new FileInputStream(file)) {
            p.load(in);
        }
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    public static void main(String[] a) throws IOException {
        String bootstrap = a[0], topic = a[1], file = a[3];
        int n = Integer.parseInt(a[2]);
        Properties p = client(bootstrap, file);
        p.put("acks", "all");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        int acked = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) sent.add(producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)));
            for (java.util.concurrent.Future<RecordMetadata> f : sent) {
                try { f.get(); acked++; } catch (Exception e) { System.err.println(e); }
            }
        }
        System.out.println("ACKED " + acked);
        Properties c = client(bootstrap, file);
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        int consumed = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.currentTimeMillis() + 30_000;
            while (consumed < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println("RECORD " + r.key() + " " + r.value());
                    consumed++;
                }
            }
        }
        System.out.println("CONSUMED " + consumed);
        System.out.flush();
    }
}
