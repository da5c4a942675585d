package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A share-group member (KIP-932's KafkaShareConsumer, run mode): subscribes, polls, and emits each poll's
 * records with their delivery counts, until stopped or killed.
 *
 * <p>Arguments: group, topics, mode ("implicit": every record of a poll is accepted by the next poll;
 * "explicit": each record is acknowledged and the acknowledgements committed with commitSync), and in explicit
 * mode `release_prefix` (records whose value starts with it are released: handed out again, until the
 * delivery limit archives them), `reject_prefix` (rejected: never delivered again) and `hold` (acknowledge
 * nothing: the records stay acquired until the member dies and their lock runs out).
 *
 * <p>Events: started; records {recs: [[partition, offset, value, delivery count], ...]}; acked {results:
 * {partition: error or null}}; ack_failed {error}; closed.
 */
final class ShareMember {
    private ShareMember() {}

    @Scenario.Named("share-member")
    static JsonNode run(Ctx ctx) {
        Args args = ctx.args;
        Map<String, Object> d = new HashMap<>();
        d.put("group.id", args.str("group"));
        String mode = args.str("mode", "implicit");
        d.put("share.acknowledgement.mode", mode);
        d.put("max.poll.records", args.str("batch", "100"));
        boolean explicit = mode.equals("explicit");
        boolean hold = args.has("hold") && args.get("hold").asBoolean();
        String release = args.str("release_prefix", "\u0000none");
        String reject = args.str("reject_prefix", "\u0000none");
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(
                args.props(d), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<String> topics = args.strings("topics");
            consumer.subscribe(topics);
            ctx.out.emit("started");
            while (!ctx.stop.get()) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(200));
                if (polled.isEmpty()) {
                    continue;
                }
                emitRecords(ctx.out, polled);
                if (!explicit || hold) {
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> rec : polled) {
                    String value = rec.value() == null ? "" : new String(rec.value(), StandardCharsets.UTF_8);
                    AcknowledgeType type = value.startsWith(release) ? AcknowledgeType.RELEASE
                            : value.startsWith(reject) ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
                    consumer.acknowledge(rec, type);
                }
                commit(ctx.out, consumer);
            }
        } finally {
            ctx.out.emit("closed");
        }
        return Json.obj();
    }

    private static void emitRecords(Out out, ConsumerRecords<byte[], byte[]> polled) {
        ObjectNode ev = out.event("records");
        ArrayNode recs = ev.putArray("recs");
        for (ConsumerRecord<byte[], byte[]> rec : polled) {
            String value = rec.value() == null ? null : new String(rec.value(), StandardCharsets.UTF_8);
            Optional<Short> count = rec.deliveryCount();
            recs.add(Json.arr().add(rec.partition()).add(rec.offset()).add(value).add(count.map(Short::intValue).orElse(-1)));
        }
        out.emit(ev);
    }

    private static void commit(Out out, KafkaShareConsumer<byte[], byte[]> consumer) {
        try {
            Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync();
            ObjectNode ev = out.event("acked");
            ObjectNode shown = ev.putObject("results");
            results.forEach((tp, error) -> shown.put(String.valueOf(tp.partition()),
                    error.map(e -> e.getClass().getSimpleName() + ": " + e.getMessage()).orElse(null)));
            out.emit(ev);
        } catch (KafkaException e) {
            ObjectNode ev = out.event("ack_failed");
            ev.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            out.emit(ev);
        }
    }
}
