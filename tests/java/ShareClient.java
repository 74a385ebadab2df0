import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Kafka's own share consumer (KIP-932, kafka-clients 4.x) for kafkalab's tests, explicit acknowledgement:
 * {@code share <bootstrap> <group> <topic> <records>} reads the topic's records 0..records-1 through the share group,
 * RELEASEs record 3 at its first delivery, REJECTs record 5, ACCEPTs everything else, and prints one line per
 * delivery, "DELIVERED offset count", then "DONE".
 */
public class ShareClient {
    public static void main(String[] args) {
        String bootstrap = args[1], group = args[2], topic = args[3];
        int records = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        TreeMap<Long, Integer> done = new TreeMap<>();
        long deadline = System.currentTimeMillis() + 60_000, quietUntil = Long.MAX_VALUE;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
                ConsumerRecords<String, String> polled = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : polled) {
                    int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                    System.out.println("DELIVERED " + r.offset() + " " + count);
                    AcknowledgeType type = AcknowledgeType.ACCEPT;
                    if (r.offset() == 3 && count == 1) {
                        type = AcknowledgeType.RELEASE;
                    } else if (r.offset() == 5) {
                        type = AcknowledgeType.REJECT;
                    }
                    consumer.acknowledge(r, type);
                    if (type != AcknowledgeType.RELEASE) {
                        done.put(r.offset(), count);
                    }
                }
                if (!polled.isEmpty()) {
                    consumer.commitSync();
                }
                if (done.size() >= records && quietUntil == Long.MAX_VALUE) {
                    quietUntil = System.currentTimeMillis() + 1500;   // and nothing more comes
                }
            }
        }
        System.out.println("DONE " + done.size());
    }
}
