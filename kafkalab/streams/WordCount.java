// kafkalab's word count on Kafka Streams: the topology of Kafka's WordCountDemo, written for the lab.
//
// Run by kafkalab.streams.word_count() (see app.py and jvm.py), which compiles this file against the
// kafka-streams jars it fetched from the Maven repository and runs it as a child process:
//
//     java -cp CLASSES:LIBS/* WordCount streams.properties INPUT_TOPIC OUTPUT_TOPIC
//
// (without a javac: java -cp LIBS/* WordCount.java ..., Java's source-file mode).
//
// streams.properties holds the StreamsConfig (bootstrap.servers, application.id, state.dir, ...).
// Lines starting with "kafkalab:" on stdout are for the Python side: the application's state
// ("kafkalab: state RUNNING") and its end ("kafkalab: exit 0"). The topology is written to
// topology.txt in the working directory.

import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;

public final class WordCount {

    private WordCount() {
    }

    /** Lines in, a changelog of counts out: String keys (the word), Long values (its count so far). */
    static Topology topology(String inputTopic, String outputTopic) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(inputTopic, Consumed.with(Serdes.String(), Serdes.String()));
        KTable<String, Long> counts = lines
            // lower-case, split on runs of non-word characters; a line that starts with one would give an empty
            // first word, which is dropped here (as lesson 06's Spark query drops it) rather than by a filter(),
            // which would add a processor and renumber the internal topics that WordCountDemo's topology has
            .flatMapValues(line -> Arrays.stream(line.toLowerCase(Locale.ROOT).split("\\W+"))
                .filter(word -> !word.isEmpty())
                .collect(Collectors.toList()))
            // the word becomes the key: Kafka Streams writes the records to a repartition topic and reads them back
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            // a state store (RocksDB), backed by a changelog topic
            .count();
        counts.toStream().to(outputTopic, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static void say(String what) {
        System.out.println("kafkalab: " + what);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: WordCount STREAMS_PROPERTIES INPUT_TOPIC OUTPUT_TOPIC");
            System.exit(2);
        }
        Properties config = new Properties();
        try (Reader reader = Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            config.load(reader);
        }
        Topology topology = topology(args[1], args[2]);
        Path described = Paths.get("topology.txt");
        try (Writer writer = Files.newBufferedWriter(described, StandardCharsets.UTF_8)) {
            writer.write(topology.describe().toString());
        }

        KafkaStreams streams = new KafkaStreams(topology, config);
        CountDownLatch ended = new CountDownLatch(1);
        streams.setStateListener((newState, oldState) -> {
            say("state " + newState);
            if (newState == KafkaStreams.State.ERROR || newState == KafkaStreams.State.NOT_RUNNING) {
                ended.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(error -> {
            System.err.println("kafkalab: a stream thread failed:");
            error.printStackTrace();
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        // SIGTERM (close() from Python, or the watchdog): a clean shutdown, which commits what was processed.
        // leaveGroup(true) removes static members (group.instance.id) from the group at once. Dynamic members send
        // no LeaveGroup on close (Kafka Streams sets its consumer's internal.leave.group.on.close=false): the
        // coordinator notices they are gone after session.timeout.ms
        KafkaStreams.CloseOptions closing = new KafkaStreams.CloseOptions().timeout(Duration.ofSeconds(20))
            .leaveGroup(true);
        Thread hook = new Thread(() -> {
            if (streams.close(closing)) {
                // close() returns as soon as the state is NOT_RUNNING, but Kafka Streams calls the state listener
                // after that, outside its state lock, from its own daemon thread: wait until the listener has
                // said so, or the JVM may halt first and "state NOT_RUNNING" never reaches the log
                try {
                    ended.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            ended.countDown();
        }, "kafkalab-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        streams.start();
        ended.await();
        boolean failed = streams.state() == KafkaStreams.State.ERROR;
        streams.close(closing);
        say("exit " + (failed ? 1 : 0));
        System.exit(failed ? 1 : 0);
    }
}
