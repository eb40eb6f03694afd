package skein.interop.streams;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams application with group.protocol=streams (KIP-1071) and
 * exactly_once_v2: it re-keys each record by its value (a repartition
 * topic) and counts by key (a state store with a changelog topic).
 *
 * <pre>
 *   Main produce BOOTSTRAP TOPIC N KEYS      N records, values k0..k(KEYS-1) in turn
 *   Main run BOOTSTRAP APP INPUT OUTPUT DIR  runs until killed; prints "running" once RUNNING
 *   Main verify BOOTSTRAP OUTPUT N KEYS      reads OUTPUT read_committed: each key's last count
 *                                            must be N/KEYS; prints "ok" or the differences
 *   Main group-config BOOTSTRAP GROUP K=V... sets group configs (incrementalAlterConfigs on the
 *                                            GROUP resource, as kafka-configs --entity-type groups)
 * </pre>
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "run" -> run(args[1], args[2], args[3], args[4], args[5]);
            case "verify" -> System.exit(verify(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4])) ? 0 : 1);
            case "group-config" -> groupConfig(args[1], args[2], List.of(args).subList(3, args.length));
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    static void groupConfig(String bootstrap, String group, List<String> settings) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        List<AlterConfigOp> ops = new java.util.ArrayList<>();
        for (String kv : settings) {
            String[] parts = kv.split("=", 2);
            ops.add(new AlterConfigOp(new ConfigEntry(parts[0], parts[1]), AlterConfigOp.OpType.SET));
        }
        try (Admin admin = Admin.create(p)) {
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
        }
        System.out.println("set " + settings);
    }

    static void produce(String bootstrap, String topic, int n, int keys) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < n; i++) {
                prod.send(new ProducerRecord<>(topic, "r" + i, "k" + (i % keys)));
            }
            prod.flush();
        }
        System.out.println("produced " + n);
    }

    static void run(String bootstrap, String app, String input, String output, String dir) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, dir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, -1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((k, v) -> v)
            .groupByKey()
            .count(Materialized.as("counts"))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch dead = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + before + " -> " + now);
            if (now == KafkaStreams.State.RUNNING) {
                System.out.println("running");
            }
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                dead.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(10))));
        streams.start();
        dead.await();
        System.exit(2);
    }

    static boolean verify(String bootstrap, String output, int n, int keys) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "verify-" + System.nanoTime());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        Map<String, Long> last = new HashMap<>();
        long want = n / keys;
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            c.subscribe(List.of(output));
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(500))) {
                    Long prev = last.get(r.key());
                    if (prev != null && r.value() <= prev) {
                        System.out.println("count of " + r.key() + " went from " + prev + " to " + r.value());
                    }
                    last.put(r.key(), r.value());
                }
                if (last.size() == keys && last.values().stream().allMatch(v -> v >= want)) {
                    break;
                }
            }
        }
        boolean ok = last.size() == keys && last.values().stream().allMatch(v -> v == want);
        System.out.println(ok ? "ok" : "counts " + last + ", want " + want + " each");
        return ok;
    }
}
