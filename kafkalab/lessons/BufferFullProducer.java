// Kafka's Java producer (kafka-clients 3.9.2) filling its buffer: lesson 02's "buffer.memory and max.block.ms" step,
// run by kafkalab/lessons/java_producer.py against the jars kafkalab.streams fetches (they include kafka-clients).
//
//   BufferFullProducer BOOTSTRAP TOPIC BUFFER_MEMORY MAX_BLOCK_MS RECORD_BYTES
//
// Sends one record and waits for its acknowledgement, trying again while the metadata wait (also bounded by
// max.block.ms) times out (the partition's metadata is then known, so that no send() below waits for metadata), prints "READY" and waits for a line on stdin (the lesson pauses the partition's
// leader meanwhile). Then sends RECORD_BYTES-byte records to partition 0 until one send() fails, and prints
//   ACCEPTED <records send() took before the failure> <longest of their send() calls, ms>
//   FAILED <that send() call's ms> <exception class> <is a TimeoutException> <message>
// then waits for a second line on stdin (the leader resumed), flushes and prints "DELIVERED <records acknowledged>".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class BufferFullProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "1");
        p.put("linger.ms", "0");
        p.put("buffer.memory", args[2]);
        p.put("batch.size", "16384");
        p.put("max.block.ms", args[3]);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        byte[] value = new byte[Integer.parseInt(args[4])];
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        AtomicInteger delivered = new AtomicInteger();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int attempt = 1; ; attempt++) {   // the metadata wait counts against max.block.ms too: try again
                try {
                    producer.send(new ProducerRecord<>(topic, 0, null, value)).get();
                    break;
                } catch (java.util.concurrent.ExecutionException e) {
                    if (!(e.getCause() instanceof TimeoutException) || attempt == 30) throw e;
                }
            }
            System.out.println("READY");
            System.out.flush();
            stdin.readLine();
            int accepted = 0;
            double longest = 0;
            while (accepted < 1_000_000) {
                AtomicReference<Exception> failure = new AtomicReference<>();
                long start = System.nanoTime();
                // a record that cannot get buffer memory within max.block.ms: send() returns a failed future and
                // calls the callback (KafkaProducer.doSend catches the ApiException) instead of throwing
                producer.send(new ProducerRecord<>(topic, 0, null, value), (metadata, e) -> {
                    if (e != null) failure.compareAndSet(null, e); else delivered.incrementAndGet();
                });
                double ms = (System.nanoTime() - start) / 1e6;
                Exception e = failure.get();
                if (e != null) {
                    System.out.println("ACCEPTED " + accepted + " " + longest);
                    System.out.println("FAILED " + ms + " " + e.getClass().getName() + " "
                                       + (e instanceof TimeoutException) + " " + e.getMessage());
                    break;
                }
                accepted++;
                longest = Math.max(longest, ms);
            }
            System.out.flush();
            stdin.readLine();
            producer.flush();
            System.out.println("DELIVERED " + delivered.get());
        }
    }
}
