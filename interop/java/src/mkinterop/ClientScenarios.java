package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * The plain producer and consumer: `version`, `produce`, `read`, `offsets-for-times`, `seek`. Producers keep
 * the Java client's defaults (acks=all, enable.idempotence=true) unless the caller's props say otherwise.
 */
final class ClientScenarios {
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    private ClientScenarios() {}

    /**
     * Loads what a scenario's JVM loads, without a broker: an Admin, a producer and a group consumer pointed at
     * a port nothing listens on, each making one attempt and closed. xtask runs it once to record the class
     * data sharing archive that makes every later driver JVM start faster.
     */
    @Scenario.Named("warmup")
    private static JsonNode warmup(Ctx ctx) {
        Map<String, Object> quick = new HashMap<>();
        quick.put("bootstrap.servers", "127.0.0.1:9");
        quick.put("request.timeout.ms", "200");
        quick.put("default.api.timeout.ms", "300");
        quick.put("max.block.ms", "200");
        quick.put("reconnect.backoff.max.ms", "100");
        Properties props = new Properties();
        props.putAll(quick);
        try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(props)) {
            admin.listTopics().names();
        }
        try (KafkaProducer<byte[], byte[]> producer = producer(props)) {
            producer.partitionsFor("warmup");
        } catch (org.apache.kafka.common.KafkaException e) {
            // Nothing listens: the attempt is the point.
        }
        props.put("group.id", "warmup");
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(props)) {
            consumer.subscribe(List.of("warmup"));
            consumer.poll(Duration.ofMillis(100));
        }
        return Json.obj();
    }

    static KafkaProducer<byte[], byte[]> producer(Properties props) {
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static KafkaConsumer<byte[], byte[]> consumer(Properties props) {
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** A consumer without a group (assign only) that never commits. */
    static KafkaConsumer<byte[], byte[]> plainConsumer(Args args, Map<String, Object> extra) {
        Map<String, Object> defaults = new HashMap<>(extra);
        defaults.put("enable.auto.commit", "false");
        return consumer(args.props(defaults));
    }

    @Scenario.Named("version")
    private static JsonNode version(Ctx ctx) {
        ObjectNode out = Json.obj();
        out.put("kafka_clients", AppInfoParser.getVersion());
        out.put("commit", AppInfoParser.getCommitId());
        out.put("java", System.getProperty("java.version"));
        return out;
    }

    /**
     * Sends `records` to `topic` (optionally with `compression`), flushes, and answers where each was
     * acknowledged ([partition, offset, timestamp] in send order) and the producer's effective acks,
     * idempotence and compression settings.
     */
    @Scenario.Named("produce")
    private static JsonNode produce(Ctx ctx) throws Exception {
        Args args = ctx.args;
        Map<String, Object> defaults = new HashMap<>();
        if (args.has("compression")) {
            defaults.put("compression.type", args.str("compression"));
        }
        Properties props = args.props(defaults);
        String topic = args.str("topic");
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer(props)) {
            for (JsonNode rec : args.get("records")) {
                sent.add(producer.send(Records.toProducer(topic, rec)));
            }
            producer.flush();
            ArrayNode acks = Json.arr();
            for (Future<RecordMetadata> future : sent) {
                RecordMetadata md = future.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                acks.add(Json.arr().add(md.partition()).add(md.offset()).add(md.timestamp()));
            }
            ObjectNode out = Json.obj();
            out.set("acks", acks);
            Properties resolved = new Properties();
            resolved.putAll(props);
            resolved.put("key.serializer", ByteArraySerializer.class.getName());
            resolved.put("value.serializer", ByteArraySerializer.class.getName());
            ProducerConfig config = new ProducerConfig(resolved);
            out.put("acks_config", config.getString(ProducerConfig.ACKS_CONFIG));
            out.put("idempotence", config.getBoolean(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG));
            out.put("compression", config.getString(ProducerConfig.COMPRESSION_TYPE_CONFIG));
            return out;
        }
    }

    /**
     * Reads every partition of `topic` from the beginning up to the end offsets it lists first (for
     * read_committed, the last stable offsets), with `isolation` (default read_uncommitted) and optional
     * `max_fetch_bytes` limits. Answers {records: [...], ends: {partition: offset}}.
     */
    @Scenario.Named("read")
    private static JsonNode read(Ctx ctx) throws Exception {
        Args args = ctx.args;
        Map<String, Object> extra = new HashMap<>();
        extra.put("isolation.level", args.str("isolation", "read_uncommitted"));
        extra.put("auto.offset.reset", "none");
        if (args.has("max_fetch_bytes")) {
            extra.put("fetch.max.bytes", args.str("max_fetch_bytes"));
            extra.put("max.partition.fetch.bytes", args.str("max_fetch_bytes"));
        }
        String topic = args.str("topic");
        try (KafkaConsumer<byte[], byte[]> consumer = plainConsumer(args, extra)) {
            List<TopicPartition> tps = partitions(consumer, topic);
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, TIMEOUT);
            ArrayNode records = Json.arr();
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (!reached(consumer, ends)) {
                if (System.nanoTime() > deadline) {
                    throw new TimeoutException("read timed out at positions " + positions(consumer, tps)
                            + ", end offsets " + ends);
                }
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(200))) {
                    records.add(Records.toJson(rec));
                }
            }
            ObjectNode out = Json.obj();
            out.set("records", records);
            ObjectNode endsOut = out.putObject("ends");
            ends.forEach((tp, end) -> endsOut.put(String.valueOf(tp.partition()), end));
            return out;
        }
    }

    static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> consumer, String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        for (PartitionInfo info : consumer.partitionsFor(topic, TIMEOUT)) {
            tps.add(new TopicPartition(topic, info.partition()));
        }
        tps.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
        return tps;
    }

    private static boolean reached(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            if (consumer.position(end.getKey(), TIMEOUT) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    private static Map<Integer, Long> positions(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> tps) {
        Map<Integer, Long> out = new HashMap<>();
        for (TopicPartition tp : tps) {
            out.put(tp.partition(), consumer.position(tp, TIMEOUT));
        }
        return out;
    }

    /** ListOffsets by `timestamp` for partitions 0..`partitions`-1: {partition: offset or null}. */
    @Scenario.Named("offsets-for-times")
    private static JsonNode offsetsForTimes(Ctx ctx) {
        Args args = ctx.args;
        String topic = args.str("topic");
        Map<TopicPartition, Long> query = new HashMap<>();
        for (int p = 0; p < args.integer("partitions"); p++) {
            query.put(new TopicPartition(topic, p), args.longValue("timestamp"));
        }
        try (KafkaConsumer<byte[], byte[]> consumer = plainConsumer(args, Map.of())) {
            ObjectNode out = Json.obj();
            consumer.offsetsForTimes(query, TIMEOUT).forEach((tp, found) -> {
                if (found == null) {
                    out.putNull(String.valueOf(tp.partition()));
                } else {
                    out.put(String.valueOf(tp.partition()), found.offset());
                }
            });
            return out;
        }
    }

    /**
     * Moves a consumer around one partition and answers what it saw: `count` records read after
     * seek(`offset`) and the position after them, seekToEnd's and seekToBeginning's positions, the offset
     * found for `timestamp` and the record read there, and where a position past the end goes with
     * auto.offset.reset=earliest (reset) and none (the error).
     */
    @Scenario.Named("seek")
    private static JsonNode seek(Ctx ctx) throws Exception {
        Args args = ctx.args;
        TopicPartition tp = new TopicPartition(args.str("topic"), args.integer("partition", 0));
        ObjectNode out = Json.obj();
        try (KafkaConsumer<byte[], byte[]> consumer =
                plainConsumer(args, Map.of("auto.offset.reset", "earliest", "max.poll.records", "1"))) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, args.longValue("offset"));
            out.set("read_after_seek", offsetsRead(consumer, args.integer("count")));
            out.put("position_after_read", consumer.position(tp, TIMEOUT));
            consumer.seekToEnd(List.of(tp));
            long end = consumer.position(tp, TIMEOUT);
            out.put("end", end);
            consumer.seekToBeginning(List.of(tp));
            out.put("beginning", consumer.position(tp, TIMEOUT));
            OffsetAndTimestamp found =
                    consumer.offsetsForTimes(Map.of(tp, args.longValue("timestamp")), TIMEOUT).get(tp);
            out.put("offset_for_time", found == null ? null : found.offset());
            if (found != null) {
                consumer.seek(tp, found.offset());
                out.set("read_at_time", offsetsRead(consumer, 1));
            }
            consumer.seek(tp, end + 100);
            out.set("read_past_end_reset_earliest", offsetsRead(consumer, 1));
        }
        try (KafkaConsumer<byte[], byte[]> strict = plainConsumer(args, Map.of("auto.offset.reset", "none"))) {
            strict.assign(List.of(tp));
            strict.seek(tp, out.get("end").asLong() + 100);
            try {
                out.put("past_end_reset_none", "polled " + offsetsRead(strict, 1));
            } catch (RuntimeException e) {
                out.put("past_end_reset_none", Driver.errorName(e));
            }
        }
        return out;
    }

    /** The offsets of the next `count` records polled (at most one partition is assigned). */
    private static ArrayNode offsetsRead(KafkaConsumer<byte[], byte[]> consumer, int count) throws TimeoutException {
        ArrayNode offsets = Json.arr();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (offsets.size() < count) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("read " + offsets + ", wanted " + count + " records");
            }
            for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(200))) {
                if (offsets.size() < count) {
                    offsets.add(rec.offset());
                }
            }
        }
        return offsets;
    }
}
