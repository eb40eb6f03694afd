package skein.interop;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Interop checks of Apache Kafka's Java client (kafka-clients) against a
 * skein node. Usage: Main HOST:PORT [SECTION...] (runAll names the
 * sections; every one runs when none is named). Prints one line a check, "ok NAME" or
 * "FAIL NAME: REASON", and exits 1 if any failed. Every wait is a poll with
 * a deadline; tests/interop/run.sh bounds the whole run as well.
 */
public final class Main {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long ADMIN_TIMEOUT_S = 30;

    private final String bootstrap;
    private final String run; // makes topic and group names unique
    private Admin admin;
    private int failed;

    private Main(String bootstrap) {
        this.bootstrap = bootstrap;
        this.run = Long.toString(System.currentTimeMillis(), 36) + "-"
                + Integer.toString(ThreadLocalRandom.current().nextInt(1 << 20), 36);
    }

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: Main HOST:PORT [SECTION...]");
            System.exit(2);
        }
        Main m = new Main(args[0]);
        m.runAll(List.of(args).subList(1, args.length));
        System.exit(m.failed > 0 ? 1 : 0);
    }

    @FunctionalInterface
    interface Check {
        void run() throws Exception;
    }

    /** Thrown by a check for a wrong answer; its message is the reason. */
    static final class Mismatch extends Exception {
        Mismatch(String msg) {
            super(msg);
        }
    }

    static void require(boolean cond, String why) throws Mismatch {
        if (!cond) {
            throw new Mismatch(why);
        }
    }

    private void check(String what, Check c) {
        String name = "java " + what;
        try {
            c.run();
            System.out.println("ok " + name);
        } catch (Throwable t) {
            failed++;
            Throwable cause = t;
            while (cause instanceof ExecutionException && cause.getCause() != null) {
                cause = cause.getCause();
            }
            String why = cause instanceof Mismatch ? cause.getMessage()
                    : cause.getClass().getSimpleName() + ": " + cause.getMessage();
            System.out.println("FAIL " + name + ": " + String.valueOf(why).replace('\n', ' '));
            cause.printStackTrace(System.err);
        }
        System.out.flush();
    }

    private String name(String what) {
        return "interop-java-" + what + "-" + run;
    }

    /**
     * Runs the sections named (every one when none is): admin, producer,
     * offsets, classic, transactions, consumer, share.
     */
    private void runAll(List<String> only) {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        admin = Admin.create(ap);
        Map<String, Runnable> sections = new LinkedHashMap<>();
        sections.put("admin", this::adminChecks);
        sections.put("producer", () -> {
            for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
                idempotentProducer(codec);
            }
        });
        sections.put("offsets", this::offsetsByTimeAndDeleteRecords);
        sections.put("classic", () -> {
            classicGroup("range", "org.apache.kafka.clients.consumer.RangeAssignor", false);
            classicGroup("cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor", false);
            classicGroup("static", "org.apache.kafka.clients.consumer.RangeAssignor", true);
            groupAdmin();
        });
        sections.put("transactions", this::transactions);
        sections.put("consumer", this::consumerProtocolGroup);
        sections.put("share", this::shareGroup);
        // Sections that need a cluster, run only when named.
        Map<String, Runnable> cluster = Map.of("rack", this::rackAwareConsumer);
        try {
            for (String s : only) {
                if (!sections.containsKey(s) && !cluster.containsKey(s)) {
                    throw new IllegalArgumentException("no section " + s + "; sections: " + sections.keySet()
                            + ", on a cluster: " + cluster.keySet());
                }
            }
            sections.forEach((s, r) -> {
                if (only.isEmpty() || only.contains(s)) {
                    r.run();
                }
            });
            cluster.forEach((s, r) -> {
                if (only.contains(s)) {
                    r.run();
                }
            });
        } finally {
            admin.close(Duration.ofSeconds(5));
        }
    }

    // --- Fetch from follower (KIP-392) -----------------------------------------

    /**
     * Against three brokers in racks a, b and c (ids 1, 2, 3) whose leaders
     * run the RackAwareReplicaSelector (tests/interop/run.sh starts them so):
     * a partition on brokers 1, 2 and 3, led by broker 1 in rack a, read by a
     * KafkaConsumer with client.rack=b: every record once, in order, and the
     * consumer's preferred-read-replica metric names broker 2. run.sh then
     * checks on broker 2's /metrics that it served them.
     */
    private void rackAwareConsumer() {
        String topic = name("rack");
        int n = 300;
        check("KafkaConsumer with client.rack=b reads all " + n + " records of a partition led in rack a,"
                + " its preferred read replica the broker in rack b", () -> {
            admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(1, 2, 3)))))
                    .all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                TopicPartitionInfo pi = admin.describeTopics(List.of(topic)).allTopicNames()
                        .get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).get(topic).partitions().get(0);
                if (pi.leader() != null && pi.leader().id() == 1 && pi.isr().size() == 3) {
                    break;
                }
                require(System.nanoTime() < deadline, "partition 0 of " + topic + ": leader " + pi.leader()
                        + ", ISR " + pi.isr() + "; want broker 1 leading, three in sync");
                Thread.sleep(100);
            }
            Properties pp = producerProps();
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            List<Rec> recs = records("rack", n, System.currentTimeMillis());
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                produce(p, topic, recs);
            }
            Properties cp = consumerProps(null);
            cp.put(ConsumerConfig.CLIENT_RACK_CONFIG, "b");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                TopicPartition tp = new TopicPartition(topic, 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                List<String> keys = new ArrayList<>();
                deadline = System.nanoTime() + WAIT.toNanos();
                while (keys.size() < n) {
                    require(System.nanoTime() < deadline, "read " + keys.size() + " of " + n + " records in "
                            + WAIT.toSeconds() + " s");
                    c.poll(Duration.ofMillis(200)).forEach(r -> keys.add(r.key()));
                }
                List<String> want = recs.stream().map(Rec::key).toList();
                require(keys.equals(want), "read " + keys.size() + " records, not each of the " + n
                        + " once in order: " + keys.subList(0, Math.min(5, keys.size())) + "...");
                Object replica = null;
                for (var e : c.metrics().entrySet()) {
                    if (e.getKey().name().equals("preferred-read-replica") && topic.equals(e.getKey().tags().get("topic"))) {
                        replica = e.getValue().metricValue();
                    }
                }
                require(replica instanceof Number r && r.intValue() == 2,
                        "the consumer's preferred-read-replica metric for " + topic + "-0 is " + replica + ", want 2");
            }
        });
    }

    // --- AdminClient ---------------------------------------------------------

    private void createTopic(String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
                .all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
    }

    private Set<String> listTopics() throws Exception {
        return admin.listTopics().names().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
    }

    private Config topicConfig(String topic) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        return admin.describeConfigs(List.of(res)).all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).get(res);
    }

    private void adminChecks() {
        String topic = name("admin");
        String doomed = name("admin-deleted");

        check("AdminClient createTopics: a topic with 3 partitions", () -> {
            int n = admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1)))
                    .numPartitions(topic).get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            require(n == 3, "createTopics answered " + n + " partitions, want 3");
        });

        check("AdminClient describeTopics: 3 partitions, each with a leader and 1 in-sync replica", () -> {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
                    .get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).get(topic);
            require(d != null, "no description of " + topic);
            require(d.name().equals(topic), "name " + d.name());
            require(!d.isInternal(), "described as internal");
            require(d.partitions().size() == 3, d.partitions().size() + " partitions, want 3");
            for (int i = 0; i < 3; i++) {
                TopicPartitionInfo p = d.partitions().get(i);
                require(p.partition() == i, "partition " + i + " is numbered " + p.partition());
                require(p.leader() != null && !p.leader().isEmpty() && p.leader().id() >= 0,
                        "partition " + i + " has no leader: " + p.leader());
                require(p.replicas().size() == 1 && p.isr().size() == 1,
                        "partition " + i + " replicas " + p.replicas() + " isr " + p.isr());
            }
            require(d.topicId() != null && !d.topicId().equals(org.apache.kafka.common.Uuid.ZERO_UUID),
                    "no topic id: " + d.topicId());
        });

        check("AdminClient listTopics: contains the topic", () -> {
            Set<String> names = listTopics();
            require(names.contains(topic), topic + " not in " + names);
        });

        check("AdminClient describeCluster: nodes, controller and cluster id", () -> {
            DescribeClusterResult r = admin.describeCluster();
            Collection<Node> nodes = r.nodes().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            String id = r.clusterId().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            Node controller = r.controller().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            require(!nodes.isEmpty(), "no nodes");
            require(id != null && !id.isEmpty(), "no cluster id");
            require(controller != null && !controller.isEmpty(), "no controller");
            String hostPort = bootstrap;
            boolean found = false;
            for (Node n : nodes) {
                found |= (n.host() + ":" + n.port()).equals(hostPort);
            }
            require(found, "no node at " + hostPort + " in " + nodes);
        });

        check("AdminClient describeConfigs: the topic has cleanup.policy=delete and retention.ms", () -> {
            Config c = topicConfig(topic);
            require(c != null, "no config for " + topic);
            ConfigEntry cp = c.get("cleanup.policy");
            require(cp != null, "no cleanup.policy in " + c.entries().size() + " entries");
            require("delete".equals(cp.value()), "cleanup.policy=" + cp.value());
            ConfigEntry rm = c.get("retention.ms");
            require(rm != null && rm.value() != null, "no retention.ms");
        });

        check("AdminClient incrementalAlterConfigs: retention.ms=3600000 reads back", () -> {
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                    new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET))))
                    .all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            // The change goes through the metadata log; poll briefly for it.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            ConfigEntry e;
            do {
                e = topicConfig(topic).get("retention.ms");
                if (e != null && "3600000".equals(e.value())) {
                    break;
                }
                Thread.sleep(100);
            } while (System.nanoTime() < deadline);
            require(e != null && "3600000".equals(e.value()), "retention.ms=" + (e == null ? null : e.value()));
            require(e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "source " + e.source());
            require(!e.isDefault(), "retention.ms still reported as a default");
        });

        check("AdminClient deleteTopics: a second topic is listed, deleted, then not listed", () -> {
            createTopic(doomed, 1);
            require(listTopics().contains(doomed), doomed + " not listed after createTopics");
            admin.deleteTopics(List.of(doomed)).all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (listTopics().contains(doomed)) {
                require(System.nanoTime() < deadline, doomed + " still listed 15 s after deleteTopics");
                Thread.sleep(100);
            }
            require(listTopics().contains(topic), topic + " gone too");
        });
    }

    /**
     * Ten records a second apart on one partition: listOffsets by
     * timestamp finds the first at or after it (none after the last),
     * maxTimestamp the newest; deleteRecords moves the log start, which
     * listOffsets earliest then reports.
     */
    private void offsetsByTimeAndDeleteRecords() {
        String topic = name("times");
        TopicPartition tp = new TopicPartition(topic, 0);
        check("AdminClient listOffsets by timestamp and maxTimestamp, then deleteRecords and listOffsets earliest", () -> {
            createTopic(topic, 1);
            long t0 = System.currentTimeMillis() - 60_000;
            try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps())) {
                for (int i = 0; i < 10; i++) {
                    p.send(new ProducerRecord<>(topic, 0, t0 + i * 1000L, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
                }
            }
            Map<String, OffsetSpec> specs = new TreeMap<>();
            specs.put("t0+3.5s", OffsetSpec.forTimestamp(t0 + 3500));
            specs.put("t0", OffsetSpec.forTimestamp(t0));
            specs.put("after the last", OffsetSpec.forTimestamp(t0 + 10_000));
            specs.put("maxTimestamp", OffsetSpec.maxTimestamp());
            Map<String, Long> want = Map.of("t0+3.5s", 4L, "t0", 0L, "after the last", -1L, "maxTimestamp", 9L);
            for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
                long got = admin.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp)
                        .get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).offset();
                require(got == want.get(e.getKey()), "listOffsets " + e.getKey() + ": " + got + ", want " + want.get(e.getKey()));
            }
            long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(5))).lowWatermarks().get(tp)
                    .get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).lowWatermark();
            require(low == 5, "deleteRecords before 5: low watermark " + low);
            long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp)
                    .get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).offset();
            require(earliest == 5, "listOffsets earliest after deleteRecords: " + earliest);
        });
    }

    // --- producing and reading back ------------------------------------------

    /** What a check remembers of a record it produced or consumed. */
    record Rec(String key, String value, String header, long timestamp) {
    }

    private Properties producerProps() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        return p;
    }

    private Properties consumerProps(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return p;
    }

    private static String header(ConsumerRecord<String, String> r) {
        Header h = r.headers().lastHeader("interop");
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    /** Sends the records, flushes, and waits for every acknowledgement. */
    private static void produce(KafkaProducer<String, String> p, String topic, List<Rec> recs) throws Exception {
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (Rec r : recs) {
            ProducerRecord<String, String> pr = new ProducerRecord<>(topic, null, r.timestamp(), r.key(), r.value());
            if (r.header() != null) {
                pr.headers().add("interop", r.header().getBytes(StandardCharsets.UTF_8));
            }
            acks.add(p.send(pr));
        }
        p.flush();
        for (Future<RecordMetadata> f : acks) {
            RecordMetadata md = f.get(30, TimeUnit.SECONDS);
            require(md.hasOffset() && md.offset() >= 0, "no offset in the acknowledgement: " + md);
        }
    }

    private static List<Rec> records(String prefix, int n, long ts0) {
        List<Rec> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            // Repetitive values, so that every codec has something to squeeze.
            out.add(new Rec(prefix + "-key-" + i, prefix + " value " + i + " " + "v".repeat(i * 7 % 500),
                    prefix + "-header-" + i, ts0 + i));
        }
        return out;
    }

    /**
     * Reads the whole topic with an assign()ed consumer from the beginning
     * up to the end offsets (the last stable offsets under read_committed).
     */
    private List<ConsumerRecord<String, String>> readAll(String topic, String isolation) throws Exception {
        Properties cp = consumerProps(null);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            c.partitionsFor(topic, WAIT).forEach(pi -> tps.add(new TopicPartition(topic, pi.partition())));
            require(!tps.isEmpty(), "no partitions for " + topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, WAIT);
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    done &= c.position(tp, WAIT) >= end.get(tp);
                }
                if (done) {
                    return got;
                }
                require(System.nanoTime() < deadline, "read " + got.size() + " records in " + WAIT.toSeconds()
                        + " s without reaching the end offsets " + end);
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
        }
    }

    private void idempotentProducer(String codec) {
        String topic = name("idempotent-" + codec);
        int n = 200;
        check("idempotent producer (acks=all) compression.type=" + codec + ": " + n
                + " records read back with key, value, header and timestamp", () -> {
            createTopic(topic, 3);
            long ts0 = System.currentTimeMillis() - 3_600_000; // an hour ago: clearly not the broker's clock
            List<Rec> want = records(codec, n, ts0);
            Properties pp = producerProps();
            pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            pp.put(ProducerConfig.LINGER_MS_CONFIG, "5");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                produce(p, topic, want);
            }
            List<ConsumerRecord<String, String>> got = readAll(topic, "read_uncommitted");
            require(got.size() == n, got.size() + " records read, want " + n);
            Map<String, Rec> byKey = new HashMap<>();
            for (Rec r : want) {
                byKey.put(r.key(), r);
            }
            Map<TopicPartition, Long> next = new HashMap<>();
            for (ConsumerRecord<String, String> r : got) {
                Rec w = byKey.remove(r.key());
                require(w != null, "unexpected or repeated key " + r.key());
                Rec g = new Rec(r.key(), r.value(), header(r), r.timestamp());
                require(g.equals(w), "got " + g + ", want " + w);
                require(r.timestampType() == TimestampType.CREATE_TIME, "timestamp type " + r.timestampType());
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                long o = next.getOrDefault(tp, 0L);
                require(r.offset() == o, tp + " offset " + r.offset() + ", want " + o + " (no gaps)");
                next.put(tp, o + 1);
            }
            require(next.size() == 3, "records in " + next.size() + " partitions, want 3");
        });
    }

    // --- classic consumer group ----------------------------------------------

    private Map<TopicPartition, Long> latestOffsets(Collection<TopicPartition> tps) throws Exception {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (TopicPartition tp : tps) {
            req.put(tp, OffsetSpec.latest());
        }
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> res =
                admin.listOffsets(req).all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
        Map<TopicPartition, Long> out = new TreeMap<>(Main::compareTp);
        res.forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    private Map<TopicPartition, Long> groupOffsets(String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> res = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
        Map<TopicPartition, Long> out = new TreeMap<>(Main::compareTp);
        res.forEach((tp, om) -> out.put(tp, om == null ? null : om.offset()));
        return out;
    }

    private static int compareTp(TopicPartition a, TopicPartition b) {
        int c = a.topic().compareTo(b.topic());
        return c != 0 ? c : Integer.compare(a.partition(), b.partition());
    }

    /**
     * Two members of one group, polled in turn from this thread, until they
     * own disjoint, non-empty sets of partitions covering all of them; then
     * records are produced, and together the members consume every record,
     * each only from partitions it owns; both commit, and the group's
     * committed offsets equal the end offsets.
     */
    private void twoMemberGroup(String topic, String group, Properties common, int partitions, boolean staticMembers)
            throws Exception {
        Set<TopicPartition> all = new HashSet<>();
        for (int i = 0; i < partitions; i++) {
            all.add(new TopicPartition(topic, i));
        }
        List<KafkaConsumer<String, String>> cs = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                Properties cp = consumerProps(group);
                cp.putAll(common);
                cp.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + i);
                if (staticMembers) {
                    cp.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-" + i);
                }
                KafkaConsumer<String, String> c = new KafkaConsumer<>(cp);
                cs.add(c);
            }
            cs.get(0).subscribe(List.of(topic));
            cs.get(1).subscribe(List.of(topic));

            long deadline = System.nanoTime() + WAIT.toNanos();
            int polledBefore = 0;
            while (true) {
                for (KafkaConsumer<String, String> c : cs) {
                    polledBefore += c.poll(Duration.ofMillis(100)).count();
                }
                Set<TopicPartition> a = cs.get(0).assignment(), b = cs.get(1).assignment();
                Set<TopicPartition> union = new HashSet<>(a);
                union.addAll(b);
                boolean disjoint = a.stream().noneMatch(b::contains);
                if (!a.isEmpty() && !b.isEmpty() && disjoint && union.equals(all)) {
                    break;
                }
                require(System.nanoTime() < deadline, "members did not split the " + partitions
                        + " partitions within " + WAIT.toSeconds() + " s: " + a + " and " + b);
            }
            require(polledBefore == 0, polledBefore + " records consumed from an empty topic");

            int n = 300;
            List<Rec> want = records("group", n, System.currentTimeMillis());
            try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps())) {
                produce(p, topic, want);
            }
            Set<String> wantKeys = new TreeSet<>();
            want.forEach(r -> wantKeys.add(r.key()));

            Set<String> got = new TreeSet<>();
            int[] per = new int[2];
            deadline = System.nanoTime() + WAIT.toNanos();
            while (got.size() < n) {
                require(System.nanoTime() < deadline, "consumed " + got.size() + " of " + n + " records in "
                        + WAIT.toSeconds() + " s");
                for (int i = 0; i < 2; i++) {
                    KafkaConsumer<String, String> c = cs.get(i);
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                        require(c.assignment().contains(tp), "member " + i + " got a record of " + tp
                                + ", not among its partitions " + c.assignment());
                        require(got.add(r.key()), "key " + r.key() + " consumed twice");
                        per[i]++;
                    }
                }
            }
            require(got.equals(wantKeys), "consumed keys differ from the produced ones");
            require(per[0] > 0 && per[1] > 0, "records per member: " + per[0] + " and " + per[1]);

            for (KafkaConsumer<String, String> c : cs) {
                c.commitSync(WAIT);
            }
            Map<TopicPartition, Long> end = latestOffsets(all);
            Map<TopicPartition, Long> committed = groupOffsets(group);
            require(committed.equals(end), "committed offsets " + committed + ", end offsets " + end);
            if (staticMembers) {
                // describeConsumerGroups names each member's instance id.
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                        .get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).get(group);
                Set<String> ids = new TreeSet<>();
                for (MemberDescription m : d.members()) {
                    ids.add(m.groupInstanceId().orElse("none"));
                }
                require(d.groupState() == GroupState.STABLE && ids.equals(Set.of("static-0", "static-1")),
                        "describeConsumerGroups: " + d.groupState() + ", instance ids " + ids);
            }
        } finally {
            for (KafkaConsumer<String, String> c : cs) {
                c.close(Duration.ofSeconds(10));
            }
        }
    }

    private void classicGroup(String label, String assignor, boolean staticMembers) {
        String topic = name("classic-" + label);
        String group = name("classic-group-" + label);
        check("classic group (" + label + "): two consumers consume every record of 3 partitions,"
                + " commitSync, listConsumerGroupOffsets equals the end offsets"
                + (staticMembers ? "; describeConsumerGroups names both members' group.instance.id" : ""), () -> {
            createTopic(topic, 3);
            Properties common = new Properties();
            common.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            common.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
            twoMemberGroup(topic, group, common, 3, staticMembers);
        });
    }

    /**
     * The classic groups above, once their members left: listed and
     * described as Empty classic groups; one loses a partition's offset
     * with deleteConsumerGroupOffsets, the other is deleted with
     * deleteConsumerGroups and is neither listed nor has offsets after.
     */
    private void groupAdmin() {
        String range = name("classic-group-range");
        String sticky = name("classic-group-cooperative-sticky");
        check("AdminClient listGroups and describeConsumerGroups: the classic groups, Empty once their members left",
                () -> {
            Map<String, GroupListing> listed = new HashMap<>();
            for (GroupListing g : admin.listGroups().all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS)) {
                listed.put(g.groupId(), g);
            }
            for (String g : List.of(range, sticky)) {
                GroupListing l = listed.get(g);
                require(l != null, g + " not listed: " + listed.keySet());
                require(l.type().equals(Optional.of(GroupType.CLASSIC)) && l.groupState().equals(Optional.of(GroupState.EMPTY)),
                        g + " listed as " + l);
            }
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(range)).all()
                    .get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS).get(range);
            require(d.groupState() == GroupState.EMPTY && d.members().isEmpty() && d.type() == GroupType.CLASSIC,
                    "described as " + d);
        });
        check("AdminClient deleteConsumerGroupOffsets: partition 0's offset gone, the others kept", () -> {
            TopicPartition p0 = new TopicPartition(name("classic-cooperative-sticky"), 0);
            admin.deleteConsumerGroupOffsets(sticky, Set.of(p0)).all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            Map<TopicPartition, Long> left = groupOffsets(sticky);
            require(!left.containsKey(p0) && left.size() == 2, "offsets left: " + left);
        });
        check("AdminClient deleteConsumerGroups: the group is no longer listed and has no offsets", () -> {
            admin.deleteConsumerGroups(List.of(range)).all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            for (GroupListing g : admin.listGroups().all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS)) {
                require(!g.groupId().equals(range), range + " still listed");
            }
            Map<TopicPartition, Long> left = groupOffsets(range);
            require(left.isEmpty(), "offsets left: " + left);
        });
    }

    // --- transactions --------------------------------------------------------

    private void transactions() {
        String topic = name("txn");
        check("transactions: read_committed sees exactly the committed records,"
                + " read_uncommitted the aborted ones too", () -> {
            createTopic(topic, 3);
            long ts0 = System.currentTimeMillis();
            List<Rec> committed1 = records("committed-a", 20, ts0);
            List<Rec> aborted = records("aborted", 20, ts0);
            List<Rec> committed2 = records("committed-b", 10, ts0);
            Properties pp = producerProps();
            pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, name("txn-id"));
            pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                p.initTransactions();
                p.beginTransaction();
                produce(p, topic, committed1);
                p.commitTransaction();
                p.beginTransaction();
                produce(p, topic, aborted);
                p.abortTransaction();
                p.beginTransaction();
                produce(p, topic, committed2);
                p.commitTransaction();
            }
            Set<String> wantCommitted = new TreeSet<>();
            committed1.forEach(r -> wantCommitted.add(r.key()));
            committed2.forEach(r -> wantCommitted.add(r.key()));
            Set<String> wantAll = new TreeSet<>(wantCommitted);
            aborted.forEach(r -> wantAll.add(r.key()));

            List<ConsumerRecord<String, String>> rc = readAll(topic, "read_committed");
            Set<String> gotRc = new TreeSet<>();
            rc.forEach(r -> gotRc.add(r.key()));
            require(rc.size() == wantCommitted.size() && gotRc.equals(wantCommitted), "read_committed: "
                    + rc.size() + " records, keys differ from the committed ones: " + diff(gotRc, wantCommitted));

            List<ConsumerRecord<String, String>> ru = readAll(topic, "read_uncommitted");
            Set<String> gotRu = new TreeSet<>();
            ru.forEach(r -> gotRu.add(r.key()));
            require(ru.size() == wantAll.size() && gotRu.equals(wantAll), "read_uncommitted: "
                    + ru.size() + " records, keys differ from all produced: " + diff(gotRu, wantAll));
        });
    }

    private static String diff(Set<String> got, Set<String> want) {
        Set<String> missing = new TreeSet<>(want);
        missing.removeAll(got);
        Set<String> extra = new TreeSet<>(got);
        extra.removeAll(want);
        return "missing " + head(missing) + ", unexpected " + head(extra);
    }

    private static String head(Set<String> s) {
        List<String> l = new ArrayList<>(s);
        return l.size() <= 5 ? l.toString() : l.subList(0, 5) + " and " + (l.size() - 5) + " more";
    }

    // --- KIP-848 consumer group protocol -------------------------------------

    private void consumerProtocolGroup() {
        String prefix = name("kip848");
        String t1 = prefix + "-a", t2 = prefix + "-b", other = name("kip848x");
        String group = name("kip848-group");
        check("group.protocol=consumer (KIP-848): subscribe(Pattern) consumes every record of the"
                + " matching topics, commitSync, listConsumerGroupOffsets equals the end offsets", () -> {
            createTopic(t1, 3);
            createTopic(t2, 2);
            createTopic(other, 1);
            int n = 100;
            List<Rec> w1 = records("a", n, System.currentTimeMillis());
            List<Rec> w2 = records("b", n, System.currentTimeMillis());
            try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps())) {
                produce(p, t1, w1);
                produce(p, t2, w2);
                produce(p, other, records("x", 10, System.currentTimeMillis()));
            }
            Set<String> want = new TreeSet<>();
            w1.forEach(r -> want.add(t1 + r.key()));
            w2.forEach(r -> want.add(t2 + r.key()));
            Properties cp = consumerProps(group);
            cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            Set<TopicPartition> all = new HashSet<>();
            for (int i = 0; i < 3; i++) {
                all.add(new TopicPartition(t1, i));
            }
            for (int i = 0; i < 2; i++) {
                all.add(new TopicPartition(t2, i));
            }
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                c.subscribe(Pattern.compile(Pattern.quote(prefix) + "-.*"));
                Set<String> got = new TreeSet<>();
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (got.size() < 2 * n) {
                    require(System.nanoTime() < deadline, "consumed " + got.size() + " of " + 2 * n
                            + " records in " + WAIT.toSeconds() + " s; assignment " + c.assignment());
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        require(r.topic().equals(t1) || r.topic().equals(t2), "a record of " + r.topic());
                        require(got.add(r.topic() + r.key()), "record " + r.topic() + "/" + r.key() + " twice");
                    }
                }
                require(got.equals(want), "consumed records differ from the produced ones");
                require(c.assignment().equals(all), "assignment " + c.assignment() + ", want " + all);
                c.commitSync(WAIT);
                Map<TopicPartition, Long> end = latestOffsets(all);
                Map<TopicPartition, Long> committed = groupOffsets(group);
                require(committed.equals(end), "committed offsets " + committed + ", end offsets " + end);
            }
        });
    }
    // --- share groups (KIP-932) ----------------------------------------------

    /** One delivery of a record to a share consumer, and what it did with it. */
    record Delivery(int consumer, long offset, short count, AcknowledgeType ack) {
    }

    /**
     * What the share consumers of shareGroup have in common. Each key's last
     * digit says what a consumer does with it: 3 is released on its first
     * delivery (and accepted on the next), 7 rejected, the rest accepted.
     */
    private final class SharedRun {
        final int n, consumers;
        final String topic, group;
        final long deadline = System.nanoTime() + WAIT.toNanos();
        final Map<String, List<Delivery>> deliveries = new ConcurrentHashMap<>();
        final AtomicInteger accepted = new AtomicInteger();
        final AtomicIntegerArray got;
        final List<String> errors = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch everyoneHasRecords, finished, mayClose;

        SharedRun(String topic, String group, int n, int consumers) {
            this.topic = topic;
            this.group = group;
            this.n = n;
            this.consumers = consumers;
            got = new AtomicIntegerArray(consumers);
            everyoneHasRecords = new CountDownLatch(consumers);
            finished = new CountDownLatch(consumers);
            mayClose = new CountDownLatch(1);
        }

        static String key(int i) {
            return "share-key-" + i;
        }

        AcknowledgeType decide(String key, short count) {
            int last = Integer.parseInt(key.substring(key.length() - 1));
            return last == 7 ? AcknowledgeType.REJECT
                    : last == 3 && count == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
        }

        int toAccept() {
            return n - (int) IntStream.range(0, n).filter(i -> i % 10 == 7).count();
        }

        long left() {
            return deadline - System.nanoTime();
        }

        /** The group as describeShareGroups has it, for a failure's message. */
        String describe() {
            try {
                return "describeShareGroups: " + admin.describeShareGroups(List.of(group)).describedGroups()
                        .get(group).get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            } catch (Exception e) {
                return "describeShareGroups failed: " + e;
            }
        }

        /**
         * Consumer me's poll loop, until every record to accept is. A
         * consumer holds its first records, unacknowledged, until every
         * consumer has some: what it holds is locked to it, so the others
         * must be handed other records, and the partition is seen shared
         * rather than drained by whoever fetched first.
         */
        void consume(KafkaShareConsumer<String, String> sc, int me) throws Exception {
            while (accepted.get() < toAccept()) {
                require(left() > 0, "consumer " + me + ": " + accepted.get() + " of " + toAccept()
                        + " records accepted in " + WAIT.toSeconds() + " s");
                ConsumerRecords<String, String> recs = sc.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    continue;
                }
                if (got.getAndAdd(me, recs.count()) == 0) {
                    everyoneHasRecords.countDown();
                    require(everyoneHasRecords.await(left(), TimeUnit.NANOSECONDS),
                            "consumer " + me + " holds records, but not every consumer got some (records got by each: "
                                    + got + "); " + describe());
                }
                for (ConsumerRecord<String, String> r : recs) {
                    require(r.deliveryCount().isPresent(), "no deliveryCount on offset " + r.offset());
                    short count = r.deliveryCount().get();
                    AcknowledgeType ack = decide(r.key(), count);
                    deliveries.computeIfAbsent(r.key(), k -> Collections.synchronizedList(new ArrayList<>()))
                            .add(new Delivery(me, r.offset(), count, ack));
                    sc.acknowledge(r, ack);
                    if (ack == AcknowledgeType.ACCEPT) {
                        accepted.incrementAndGet();
                    }
                }
                sc.commitSync(WAIT).forEach((tip, e) -> e.ifPresent(
                        x -> errors.add("consumer " + me + ": commitSync " + tip + ": " + x)));
            }
        }

        /** The deliveries of every key against what each kind of key should have had. */
        void verify() throws Mismatch {
            require(errors.isEmpty(), "acknowledgement errors: " + errors);
            for (int c = 0; c < consumers; c++) {
                require(got.get(c) > 0, "consumer " + c + " got no records: " + got);
            }
            for (int i = 0; i < n; i++) {
                String k = key(i);
                List<Delivery> ds = deliveries.getOrDefault(k, List.of());
                require(!ds.isEmpty(), k + " never delivered");
                long accepts = ds.stream().filter(d -> d.ack() == AcknowledgeType.ACCEPT).count();
                switch (decide(k, (short) 1)) {
                    case REJECT -> require(ds.size() == 1, k + " rejected, then delivered again: " + ds);
                    case RELEASE -> require(ds.size() == 2 && ds.get(0).ack() == AcknowledgeType.RELEASE
                            && ds.get(1).count() > ds.get(0).count() && accepts == 1,
                            k + " released: want it delivered again with a higher deliveryCount, then accepted: " + ds);
                    default -> require(ds.size() == 1 && accepts == 1, k + ": want one delivery, accepted: " + ds);
                }
            }
        }
    }

    /**
     * Three KafkaShareConsumers with share.acknowledgement.mode=explicit in
     * one share group read a one-partition topic together, accepting,
     * releasing and rejecting records by key (SharedRun).
     */
    private void shareGroup() {
        String topic = name("share");
        String group = name("share-group");
        int n = 300, consumers = 3;
        check("KafkaShareConsumer (KIP-932): three explicit-acknowledgement consumers of one partition in a share"
                + " group (share.auto.offset.reset=earliest by incrementalAlterConfigs) all get records; of "
                + n + " records each is accepted once but the rejected, released ones are delivered again with a"
                + " higher deliveryCount, rejected ones never again; commitSync and its callbacks without errors;"
                + " describeShareGroups Stable with 3 members; listShareGroupOffsets start offset " + n, () -> {
            createTopic(topic, 1);
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                    .all().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            List<Rec> recs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                recs.add(new Rec(SharedRun.key(i), "value " + i, null, System.currentTimeMillis()));
            }
            // One record per batch: a ShareFetch in the consumers' default
            // batch-optimized mode acquires whole batches (as Kafka does, past
            // max.poll.records), and the three consumers must each get some.
            Properties pp = producerProps();
            pp.put(ProducerConfig.BATCH_SIZE_CONFIG, "1");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                produce(p, topic, recs);
            }
            SharedRun run = new SharedRun(topic, group, n, consumers);
            ExecutorService pool = Executors.newFixedThreadPool(consumers);
            List<Future<?>> runs = new ArrayList<>();
            for (int c = 0; c < consumers; c++) {
                int me = c;
                runs.add(pool.submit(() -> {
                    boolean counted = false;
                    try (KafkaShareConsumer<String, String> sc = new KafkaShareConsumer<>(shareConsumerProps(group, me))) {
                        sc.setAcknowledgementCommitCallback((offsets, e) -> {
                            if (e != null) {
                                run.errors.add("consumer " + me + ": acknowledgement callback " + offsets + ": " + e);
                            }
                        });
                        sc.subscribe(List.of(topic));
                        run.consume(sc, me);
                        run.finished.countDown();
                        counted = true;
                        // Still a member until the group has been described.
                        run.mayClose.await(run.left() + WAIT.toNanos(), TimeUnit.NANOSECONDS);
                    } finally {
                        if (!counted) {
                            run.finished.countDown();
                        }
                    }
                    return null;
                }));
            }
            pool.shutdown();
            TopicPartition tp = new TopicPartition(topic, 0);
            try {
                require(run.finished.await(run.left(), TimeUnit.NANOSECONDS), "the consumers did not finish");
                failures(runs);
                ShareGroupDescription d = admin.describeShareGroups(List.of(group)).describedGroups()
                        .get(group).get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
                require(d.groupState() == GroupState.STABLE && d.members().size() == consumers
                        && d.members().stream().allMatch(m -> m.assignment().topicPartitions().equals(Set.of(tp))),
                        "describeShareGroups: want Stable, 3 members each assigned " + tp + ": " + d);
            } finally {
                run.mayClose.countDown();
                pool.awaitTermination(WAIT.toSeconds(), TimeUnit.SECONDS);
                pool.shutdownNow();
            }
            failures(runs);
            run.verify();
            // Every record acknowledged for good: the share-partition starts
            // at the log's end, nothing (no rejected record) left to deliver.
            long until = System.nanoTime() + WAIT.toNanos();
            while (true) {
                Map<TopicPartition, SharePartitionOffsetInfo> offs = admin
                        .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                        .partitionsToOffsetInfo(group).get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
                SharePartitionOffsetInfo info = offs.get(tp);
                if (info != null && info.startOffset() == n) {
                    break;
                }
                require(System.nanoTime() < until, "listShareGroupOffsets: " + offs + ", want start offset " + n);
                Thread.sleep(100);
            }
        });
    }

    /** Throws the failures of the finished runs, every one's in one message. */
    private static void failures(List<Future<?>> runs) throws Exception {
        List<String> why = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            if (!runs.get(i).isDone()) {
                continue;
            }
            try {
                runs.get(i).get();
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                why.add(c instanceof Mismatch ? c.getMessage() : "consumer " + i + ": " + c);
                if (!(c instanceof Mismatch)) {
                    c.printStackTrace(System.err);
                }
            }
        }
        require(why.isEmpty(), String.join("; ", why));
    }

    private Properties shareConsumerProps(String group, int i) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "interop-share-" + i);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        // Small acquisitions (ShareFetch MaxRecords), so that there are
        // records left for the others while one consumer holds some.
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "20");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        return p;
    }
}
