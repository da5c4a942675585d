package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

/**
 * A consumer-group member (run mode), with the config keys and events of mkinterop/member.py, so the group
 * scenarios of tests/test_groups.py drive it like the Python members.
 *
 * <p>Processing: emit a poll's records, then commit exactly the offsets after them with commitSync before
 * the next poll. A failed commit (a rebalance completing) stays pending and is retried with the next batch,
 * or in the revocation callback, which the Java client runs inside poll() (so revocations are serialized with
 * processing). Lost partitions (the member was expired) are dropped without a commit.
 *
 * <p>With a `pattern` argument (and `group.protocol=consumer` in `props`) the member subscribes with a
 * SubscriptionPattern, which the broker resolves (KIP-848's server-side regular expressions); then it may
 * read several topics, and its events name them: `records` carries `topics` (one per record), `assigned` and
 * `revoked` carry `topic_partitions` ["topic:partition", ...], and `committed` is keyed "topic:partition".
 */
final class GroupMember implements ConsumerRebalanceListener {
    private static final Map<String, String> ASSIGNORS = Map.of(
            "range", "org.apache.kafka.clients.consumer.RangeAssignor",
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
            "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

    private final Out out;
    /** Subscribed by pattern: events name topics. */
    private final boolean multi;
    private KafkaConsumer<byte[], byte[]> consumer;
    /** Processed but not yet committed: partition -> next offset. */
    private final Map<TopicPartition, Long> pending = new TreeMap<>(
            java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
    private long processed;

    private GroupMember(Out out, boolean multi) {
        this.out = out;
        this.multi = multi;
    }

    private String key(TopicPartition tp) {
        return multi ? tp.topic() + ":" + tp.partition() : String.valueOf(tp.partition());
    }

    /**
     * The member's consumer settings: member.py's config keys, then the caller's `props`. The group protocol
     * is the classic one unless `props` say `group.protocol=consumer` (KIP-848); then the session, heartbeat
     * and assignor settings are the coordinator's, and the client refuses them, so none is set.
     */
    static Map<String, Object> settings(Args args) {
        Map<String, Object> d = new HashMap<>();
        d.put("group.id", args.str("group"));
        d.put("enable.auto.commit", "false");
        d.put("auto.offset.reset", "earliest");
        d.put("max.poll.interval.ms", args.str("max_poll_interval_ms", "30000"));
        d.put("max.poll.records", args.str("batch", "100"));
        if (args.has("isolation_level")) {
            d.put("isolation.level", args.str("isolation_level"));
        }
        if (args.has("instance_id")) {
            d.put("group.instance.id", args.str("instance_id"));
        }
        boolean classic = !args.has("props") || args.get("props").path("group.protocol").asText("classic")
                .equalsIgnoreCase("classic");
        if (!classic) {
            return d;
        }
        d.put("group.protocol", "classic");
        d.put("session.timeout.ms", args.str("session_timeout_ms", "6000"));
        d.put("heartbeat.interval.ms", args.str("heartbeat_interval_ms", "1000"));
        if (args.has("assignor")) {
            List<String> classes = new ArrayList<>();
            for (String name : args.str("assignor").split(",")) {
                String cls = ASSIGNORS.get(name.trim());
                if (cls == null) {
                    throw new IllegalArgumentException("unknown assignor " + name + "; known: " + ASSIGNORS.keySet());
                }
                classes.add(cls);
            }
            d.put("partition.assignment.strategy", String.join(",", classes));
        }
        return d;
    }

    @Scenario.Named("member")
    static JsonNode run(Ctx ctx) {
        Args args = ctx.args;
        List<String> topics = args.strings("topics");
        boolean byPattern = args.has("pattern");
        GroupMember member = new GroupMember(ctx.out, byPattern);
        Long limit = args.has("limit") ? args.longValue("limit") : null;
        member.consumer = ClientScenarios.consumer(args.props(settings(args)));
        try {
            if (byPattern) {
                member.consumer.subscribe(new SubscriptionPattern(args.str("pattern")), member);
            } else {
                member.consumer.subscribe(topics, member);
            }
            ctx.out.emit("started");
            while (!ctx.stop.get() && (limit == null || member.processed < limit)) {
                ConsumerRecords<byte[], byte[]> polled = member.consumer.poll(Duration.ofMillis(200));
                if (!polled.isEmpty()) {
                    member.process(polled);
                }
            }
        } finally {
            member.consumer.close();
            ctx.out.emit("closed");
        }
        return Json.obj();
    }

    private void process(ConsumerRecords<byte[], byte[]> polled) {
        ObjectNode ev = out.event("records");
        ArrayNode recs = ev.putArray("recs");
        ArrayNode names = multi ? ev.putArray("topics") : null;
        for (ConsumerRecord<byte[], byte[]> rec : polled) {
            String value = rec.value() == null ? null : new String(rec.value(), StandardCharsets.UTF_8);
            recs.add(Json.arr().add(rec.partition()).add(rec.offset()).add(value));
            if (names != null) {
                names.add(rec.topic());
            }
            pending.merge(new TopicPartition(rec.topic(), rec.partition()), rec.offset() + 1, Math::max);
        }
        out.emit(ev);
        processed += polled.count();
        commitPending(null);
    }

    /** Commits what is pending (of `only`, if given); a failure is an event and stays pending. */
    private void commitPending(Set<TopicPartition> only) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        ObjectNode shown = Json.obj();
        pending.forEach((tp, next) -> {
            if (only == null || only.contains(tp)) {
                offsets.put(tp, new OffsetAndMetadata(next));
                shown.put(key(tp), next);
            }
        });
        if (offsets.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(offsets);
        } catch (KafkaException e) {
            ObjectNode failed = out.event("commit_failed");
            failed.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            failed.set("offsets", shown);
            out.emit(failed);
            return;
        }
        ObjectNode done = out.event("committed");
        done.set("offsets", shown);
        out.emit(done);
        offsets.keySet().forEach(tp -> pending.remove(tp, offsets.get(tp).offset()));
    }

    private static ArrayNode sorted(Collection<TopicPartition> partitions) {
        ArrayNode out = Json.arr();
        partitions.stream().map(TopicPartition::partition).sorted().forEach(out::add);
        return out;
    }

    /** A rebalance event; by pattern it names the topics too. */
    private ObjectNode rebalance(String kind, Collection<TopicPartition> partitions) {
        ObjectNode ev = out.event(kind);
        ev.set("partitions", sorted(partitions));
        if (multi) {
            ArrayNode tps = ev.putArray("topic_partitions");
            partitions.stream().map(this::key).sorted().forEach(tps::add);
        }
        return ev;
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        Set<TopicPartition> revoked = new java.util.HashSet<>(partitions);
        commitPending(revoked);
        revoked.forEach(pending::remove);
        out.emit(rebalance("revoked", partitions));
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        out.emit(rebalance("assigned", partitions));
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        partitions.forEach(pending::remove);
        ObjectNode ev = rebalance("revoked", partitions);
        ev.put("lost", true);
        out.emit(ev);
    }
}
