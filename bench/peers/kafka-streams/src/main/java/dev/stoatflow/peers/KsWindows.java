package dev.stoatflow.peers;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.RocksDbTimeOrderedSessionBytesStoreSupplier;

/**
 * The seed's Kafka Streams topology, for side-by-side runs with stoatflow.
 *
 * <p>Input: JSON records {"user_id": ..., "ts": epoch ms, "amount": integer}, keyed by user_id (the
 * Kafka message key, so that groupByKey needs no repartition topic). Event time is "ts" (a
 * TimestampExtractor). groupByKey, windowedBy(TimeWindows.ofSizeAndGrace[.advanceBy] |
 * SessionWindows.ofInactivityGapAndGrace), aggregate count + sum(amount),
 * emitStrategy(EmitStrategy.onWindowClose()). One JSON line per final window goes to the output
 * topic: {"topic","window","key","window_start","window_end","count","sum"}, with window_end as
 * Kafka Streams reports it (exclusive for time windows, the last record's time, inclusive, for
 * sessions).
 *
 * <pre>
 * KsWindows --bootstrap HOST:PORT --output TOPIC --input TOPIC[,TOPIC...]
 *           --window tumbling SIZE_MS GRACE_MS | hopping SIZE_MS ADVANCE_MS GRACE_MS
 *                  | session GAP_MS GRACE_MS     (repeatable)
 *           [--run-seconds N] [--idle-seconds N] [--expect-records N] [--app-id ID]
 *           [--state-dir DIR] [--no-changelog] [--keep-until-emitted] [--config KEY=VALUE]...
 *           [--flush-topic TOPIC --flush-ts MS]
 * </pre>
 *
 * Every input topic is a sub-topology of its own, hence a task of its own with its own stream time
 * (and every windowed aggregation tracks its own): several streams can be compared in one JVM
 * without influencing each other.
 * The program exits (after a clean close, which flushes the output) when --run-seconds have
 * passed, or when it has read at least one record and none for --idle-seconds, or when it has
 * read --expect-records records in all and nothing for a second. --no-changelog: state stores
 * without changelog topics (not fault tolerant; fewer topics to create for short runs).
 *
 * <p>--keep-until-emitted: with its default stores, Kafka Streams 4.1's onWindowClose loses final
 * results when stream time moves far in one step. The aggregation puts the record into the store
 * first (which advances the store's own clock and expires what lies beyond its retention) and only
 * then fetches the closed windows to emit: a time window is fetched only while its start is within
 * retention (size + grace) of the newest window start put, and a session only while the store
 * segment (60 s or retention / 2) holding its end is alive, so a window that closes and expires
 * in the same step is never emitted. The flag gives the time-window stores a retention of 365 days
 * (no effect on results: records are judged late by grace alone) and the session stores their
 * default retention (gap + grace, which decides which sessions a record can merge with) in one
 * segment that never expires. State is then never expired: for test streams only.
 *
 * <p>--config KEY=VALUE (repeatable): a Kafka Streams setting applied last, over the program's own
 * (e.g. processing.guarantee=exactly_once_v2, statestore.cache.max.bytes=10485760).
 *
 * <p>--flush-topic TOPIC --flush-ts MS (one --input only): onWindowClose looks for closed windows
 * only while it processes a record, and at most once per emit interval of wall clock, so with the
 * default interval the windows the input's last records close would never be emitted. TOPIC (as
 * many partitions as the input, created beforehand) is read by the same tasks as the input; once
 * --expect-records input records are read and an emit interval has passed without one, the
 * program writes one record per partition to it (key zz-flush-P, event time MS: a window of its
 * own key that stays open), which makes each task look again. It stops once those are read and no
 * window was written for two seconds. Flush records are not counted as records read.
 */
public final class KsWindows {
    /** count + sum(amount): the aggregate, 16 bytes on the wire. */
    record Agg(long count, long sum) {
        Agg add(long amount) {
            return new Agg(count + 1, sum + amount);
        }

        Agg merge(Agg o) {
            return new Agg(count + o.count, sum + o.sum);
        }
    }

    static final class AggSerde implements Serde<Agg> {
        @Override
        public Serializer<Agg> serializer() {
            return (topic, a) -> a == null ? null
                    : ByteBuffer.allocate(16).putLong(a.count()).putLong(a.sum()).array();
        }

        @Override
        public Deserializer<Agg> deserializer() {
            return (topic, b) -> {
                if (b == null) {
                    return null;
                }
                ByteBuffer bb = ByteBuffer.wrap(b);
                return new Agg(bb.getLong(), bb.getLong());
            };
        }
    }

    /** A window spec from the command line. */
    record Spec(String kind, long size, long advance, long grace) {
        String label() {
            return kind;
        }
    }

    /** The numeric value of top-level field NAME in a flat JSON object (no JSON library needed). */
    static long jsonLong(String json, String name) {
        String needle = "\"" + name + "\"";
        int i = json.indexOf(needle);
        if (i < 0) {
            throw new IllegalArgumentException("no field " + name + " in " + json);
        }
        i = json.indexOf(':', i + needle.length()) + 1;
        while (i < json.length() && Character.isWhitespace(json.charAt(i))) {
            i++;
        }
        int j = i;
        if (j < json.length() && (json.charAt(j) == '-' || json.charAt(j) == '+')) {
            j++;
        }
        while (j < json.length() && Character.isDigit(json.charAt(j))) {
            j++;
        }
        return Long.parseLong(json.substring(i, j));
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /** Event time: the record's "ts" field (epoch ms). */
    public static final class TsExtractor implements TimestampExtractor {
        @Override
        public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
            return jsonLong((String) record.value(), "ts");
        }
    }

    static String line(String topic, Spec spec, String key, long start, long end, Agg agg) {
        return "{\"topic\":" + quote(topic) + ",\"window\":" + quote(spec.label()) + ",\"key\":" + quote(key)
                + ",\"window_start\":" + start + ",\"window_end\":" + end + ",\"count\":" + agg.count()
                + ",\"sum\":" + agg.sum() + "}";
    }

    /** The store's changelog topic (Kafka Streams' default) unless --no-changelog. */
    static <S extends org.apache.kafka.streams.processor.StateStore> Materialized<String, Agg, S> logging(
            Materialized<String, Agg, S> m, boolean changelog) {
        return changelog ? m : m.withLoggingDisabled();
    }

    /** Retention of the time-window stores under --keep-until-emitted. */
    static final Duration KEEP_TIME_WINDOWS = Duration.ofDays(365);

    /**
     * Kafka Streams' session store for onWindowClose (time ordered, indexed) with the default
     * retention, but one segment for all times after 1970 (100 years), so no session is expired
     * before it is emitted: retention still bounds which sessions a new record can see.
     */
    static final class OneSegmentSessionStore extends RocksDbTimeOrderedSessionBytesStoreSupplier {
        OneSegmentSessionStore(String name, long retentionMs) {
            super(name, retentionMs, true);
        }

        @Override
        public long segmentIntervalMs() {
            return 100L * 365 * 86_400_000L;
        }
    }

    static void usage(String why) {
        System.err.println("KsWindows: " + why);
        System.err.println("usage: KsWindows --bootstrap HOST:PORT --output TOPIC --input TOPIC[,TOPIC...]\n"
                + "    --window tumbling SIZE_MS GRACE_MS | hopping SIZE_MS ADVANCE_MS GRACE_MS | session GAP_MS GRACE_MS\n"
                + "    [--window ...] [--run-seconds N] [--idle-seconds N] [--expect-records N] [--app-id ID] [--state-dir DIR]\n"
                + "    [--no-changelog] [--keep-until-emitted] [--config KEY=VALUE]...\n"
                + "    [--flush-topic TOPIC --flush-ts MS]");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        // slf4j-simple: warnings and errors only, unless -Dorg.slf4j.simpleLogger.defaultLogLevel=...
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        // a WARN line per late record otherwise ("Skipping record for expired window")
        if (System.getProperty("org.slf4j.simpleLogger.log.org.apache.kafka.streams.kstream.internals") == null) {
            System.setProperty("org.slf4j.simpleLogger.log.org.apache.kafka.streams.kstream.internals", "error");
        }
        String bootstrap = null;
        String output = null;
        List<String> inputs = new ArrayList<>();
        List<Spec> specs = new ArrayList<>();
        long runSeconds = 600;
        long idleSeconds = 10;
        long expectRecords = -1;
        String appId = "stoatflow-peer-" + ProcessHandle.current().pid() + "-" + System.currentTimeMillis();
        String stateDir = null;
        boolean changelog = true;
        boolean keepUntilEmitted = false;
        List<String[]> extraConfig = new ArrayList<>();
        String flushTopic = null;
        long flushTs = -1;
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--bootstrap" -> bootstrap = args[++i];
                    case "--output" -> output = args[++i];
                    case "--input" -> {
                        for (String t : args[++i].split(",")) {
                            if (!t.isEmpty()) {
                                inputs.add(t);
                            }
                        }
                    }
                    case "--run-seconds" -> runSeconds = Long.parseLong(args[++i]);
                    case "--idle-seconds" -> idleSeconds = Long.parseLong(args[++i]);
                    case "--expect-records" -> expectRecords = Long.parseLong(args[++i]);
                    case "--app-id" -> appId = args[++i];
                    case "--state-dir" -> stateDir = args[++i];
                    case "--no-changelog" -> changelog = false;
                    case "--keep-until-emitted" -> keepUntilEmitted = true;
                    case "--flush-topic" -> flushTopic = args[++i];
                    case "--flush-ts" -> flushTs = Long.parseLong(args[++i]);
                    case "--config" -> {
                        String kv = args[++i];
                        int eq = kv.indexOf('=');
                        if (eq <= 0) {
                            usage("--config wants KEY=VALUE, got " + kv);
                        }
                        extraConfig.add(new String[] {kv.substring(0, eq), kv.substring(eq + 1)});
                    }
                    case "--window" -> {
                        String kind = args[++i];
                        switch (kind) {
                            case "tumbling" -> {
                                long size = Long.parseLong(args[++i]);
                                specs.add(new Spec(kind, size, size, Long.parseLong(args[++i])));
                            }
                            case "hopping" -> {
                                long size = Long.parseLong(args[++i]);
                                long advance = Long.parseLong(args[++i]);
                                specs.add(new Spec(kind, size, advance, Long.parseLong(args[++i])));
                            }
                            case "session" -> {
                                long gap = Long.parseLong(args[++i]);
                                specs.add(new Spec(kind, gap, 0, Long.parseLong(args[++i])));
                            }
                            default -> usage("unknown window kind " + kind);
                        }
                    }
                    default -> usage("unknown argument " + args[i]);
                }
            }
        } catch (ArrayIndexOutOfBoundsException | NumberFormatException e) {
            usage("bad arguments: " + e.getMessage());
        }
        if (bootstrap == null || output == null || inputs.isEmpty() || specs.isEmpty()) {
            usage("--bootstrap, --output, --input and --window are required");
        }
        if ((flushTopic == null) != (flushTs < 0) || (flushTopic != null && (inputs.size() != 1 || expectRecords < 0))) {
            usage("--flush-topic and --flush-ts go together, with one --input and --expect-records");
        }
        for (Spec s : specs) {
            if (specs.stream().filter(o -> o.label().equals(s.label())).count() > 1) {
                usage("one --window per kind");
            }
        }
        if (stateDir == null) {
            stateDir = Files.createTempDirectory("ks-peer-state").toString();
        }

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, TsExtractor.class);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // onWindowClose checks for closed windows at most once per this wall-clock interval
        // (internal setting, default 1000 ms): with the default, a stream read in under a second
        // would never emit its last closed windows. 0: check after every record.
        props.put(EMIT_INTERVAL, 0L);
        for (String[] kv : extraConfig) {
            props.put(kv[0], kv[1]);
        }

        StreamsBuilder builder = new StreamsBuilder();
        AggSerde aggSerde = new AggSerde();
        AtomicLong recordsRead = new AtomicLong();
        AtomicLong lastReadNanos = new AtomicLong(System.nanoTime());
        AtomicLong windowsOut = new AtomicLong();
        AtomicLong firstReadNanos = new AtomicLong();
        AtomicLong flushRead = new AtomicLong();
        AtomicLong lastWindowNanos = new AtomicLong(System.nanoTime());
        for (String topic : inputs) {
            // one source node per topic (a sub-topology, hence a task, with its own stream time);
            // the Kafka message key is the grouping key, so groupByKey needs no repartition
            List<String> read = flushTopic == null ? List.of(topic) : List.of(topic, flushTopic);
            KStream<String, String> in = builder.stream(read, Consumed.with(Serdes.String(), Serdes.String()))
                    .peek((k, v) -> {
                        if (k != null && k.startsWith(FLUSH_KEY)) {
                            flushRead.incrementAndGet();
                            return;
                        }
                        if (recordsRead.incrementAndGet() == 1) {
                            firstReadNanos.set(System.nanoTime());
                        }
                        lastReadNanos.set(System.nanoTime());
                    });
            KGroupedStream<String, String> grouped = in.groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
            for (Spec spec : specs) {
                String store = "agg-" + topic + "-" + spec.label();
                KStream<String, String> out;
                if (spec.kind().equals("session")) {
                    Materialized<String, Agg, SessionStore<Bytes, byte[]>> m = keepUntilEmitted
                            ? Materialized.<String, Agg>as(new OneSegmentSessionStore(store, spec.size() + spec.grace()))
                            : Materialized.<String, Agg, SessionStore<Bytes, byte[]>>as(store);
                    out = grouped
                            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(spec.size()),
                                    Duration.ofMillis(spec.grace())))
                            .emitStrategy(EmitStrategy.onWindowClose())
                            .aggregate(() -> new Agg(0, 0),
                                    (k, v, agg) -> agg.add(jsonLong(v, "amount")),
                                    (k, a, b) -> a.merge(b),
                                    logging(m.withKeySerde(Serdes.String()).withValueSerde(aggSerde), changelog))
                            .toStream()
                            .filter((w, agg) -> agg != null)
                            .map((Windowed<String> w, Agg agg) -> KeyValue.pair(w.key(),
                                    line(topic, spec, w.key(), w.window().start(), w.window().end(), agg)));
                } else {
                    TimeWindows windows = TimeWindows.ofSizeAndGrace(Duration.ofMillis(spec.size()),
                            Duration.ofMillis(spec.grace()));
                    if (spec.kind().equals("hopping")) {
                        windows = windows.advanceBy(Duration.ofMillis(spec.advance()));
                    }
                    Materialized<String, Agg, WindowStore<Bytes, byte[]>> m =
                            Materialized.<String, Agg, WindowStore<Bytes, byte[]>>as(store);
                    if (keepUntilEmitted) {
                        m = m.withRetention(KEEP_TIME_WINDOWS);
                    }
                    out = grouped.windowedBy(windows)
                            .emitStrategy(EmitStrategy.onWindowClose())
                            .aggregate(() -> new Agg(0, 0),
                                    (k, v, agg) -> agg.add(jsonLong(v, "amount")),
                                    logging(m.withKeySerde(Serdes.String()).withValueSerde(aggSerde), changelog))
                            .toStream()
                            .filter((w, agg) -> agg != null)
                            .map((Windowed<String> w, Agg agg) -> KeyValue.pair(w.key(),
                                    line(topic, spec, w.key(), w.window().start(), w.window().end(), agg)));
                }
                out.peek((k, v) -> {
                            windowsOut.incrementAndGet();
                            lastWindowNanos.set(System.nanoTime());
                        })
                        .to(output, Produced.with(Serdes.String(), Serdes.String()));
            }
        }

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("KsWindows: stream thread failed: " + e);
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(20))));
        long t0 = System.nanoTime();
        streams.start();
        String why = "run-seconds";
        long emitIntervalNanos = emitIntervalMs(props) * 1_000_000L;
        int flushed = 0; // flush records written, 0 before
        while (true) {
            Thread.sleep(100);
            long now = System.nanoTime();
            if (streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.PENDING_ERROR
                    || streams.state() == KafkaStreams.State.NOT_RUNNING) {
                why = "state " + streams.state();
                break;
            }
            if (now - t0 >= runSeconds * 1_000_000_000L) {
                break;
            }
            long read = recordsRead.get();
            long quiet = now - lastReadNanos.get();
            if (flushTopic != null && read >= expectRecords) {
                if (flushed == 0 && quiet >= emitIntervalNanos + 250_000_000L) {
                    flushed = flush(bootstrap, flushTopic, flushTs);
                } else if (flushed > 0 && flushRead.get() >= flushed && now - lastWindowNanos.get() >= 2_000_000_000L
                        && now - lastReadNanos.get() >= 2_000_000_000L) {
                    why = "all expected records read, flushed";
                    break;
                }
                continue;
            }
            if (expectRecords >= 0 && read >= expectRecords && quiet >= 1_000_000_000L) {
                why = "all expected records read";
                break;
            }
            if (read > 0 && quiet >= idleSeconds * 1_000_000_000L) {
                why = "idle";
                break;
            }
        }
        boolean closed = streams.close(Duration.ofSeconds(30));
        System.err.printf("KsWindows: stopped (%s) after %.1f s: %d records read (first after %.1f s, last after %.1f s),"
                + " %d windows written to %s (last after %.1f s)%s%n", why, (System.nanoTime() - t0) / 1e9,
                recordsRead.get(), recordsRead.get() > 0 ? (firstReadNanos.get() - t0) / 1e9 : 0.0,
                recordsRead.get() > 0 ? (lastReadNanos.get() - t0) / 1e9 : 0.0, windowsOut.get(), output,
                windowsOut.get() > 0 ? (lastWindowNanos.get() - t0) / 1e9 : 0.0, closed ? "" : " (close timed out)");
        try {
            deleteTree(Path.of(stateDir));
        } catch (Exception ignored) {
            // the temp dir stays
        }
        System.exit(why.startsWith("state") || !closed ? 1 : 0);
    }

    /** Key prefix of --flush-topic records. */
    static final String FLUSH_KEY = "zz-flush-";

    /** onWindowClose's emit interval as configured (internal setting; Kafka Streams' default 1000 ms). */
    static long emitIntervalMs(Properties props) {
        Object v = props.get(EMIT_INTERVAL);
        return v == null ? 1000L : Long.parseLong(v.toString());
    }

    static final String EMIT_INTERVAL = "__emit.interval.ms.kstreams.windowed.aggregation__";

    /** One flush record per partition of TOPIC; returns how many were written. */
    static int flush(String bootstrap, String topic, long ts) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, Serdes.String().serializer().getClass());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, Serdes.String().serializer().getClass());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            int n = producer.partitionsFor(topic).size();
            for (int i = 0; i < n; i++) {
                String key = FLUSH_KEY + i;
                producer.send(new ProducerRecord<>(topic, i, key,
                        "{\"user_id\": " + quote(key) + ", \"ts\": " + ts + ", \"amount\": 0}"));
            }
            producer.flush();
            return n;
        }
    }

    static void deleteTree(Path p) throws java.io.IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (var walk = Files.walk(p)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(q -> q.toFile().delete());
        }
    }
}
