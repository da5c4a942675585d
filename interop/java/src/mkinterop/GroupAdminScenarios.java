package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DeleteConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * The Admin client on consumer groups: list, describe, offsets (list, alter, delete) and delete. Partitions
 * travel as [topic, partition] pairs; offsets as [topic, partition, offset, metadata, leader epoch].
 */
final class GroupAdminScenarios {
    private GroupAdminScenarios() {}

    private static TopicPartition tp(JsonNode pair) {
        return new TopicPartition(pair.get(0).asText(), pair.get(1).asInt());
    }

    /** Admin.listGroups (KIP-1043), every type unless `consumer_only`: {group: {type, state, protocol}}. */
    @Scenario.Named("list-groups")
    private static JsonNode listGroups(Ctx ctx) throws Exception {
        ListGroupsOptions options = ctx.args.bool("consumer_only", false)
                ? ListGroupsOptions.forConsumerGroups() : new ListGroupsOptions();
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return listings(AdminScenarios.get(admin.listGroups(options).all()));
        }
    }

    /** The older Admin.listConsumerGroups (deprecated since 4.1, still what most tools call). */
    @SuppressWarnings({"deprecation", "removal"})
    @Scenario.Named("list-consumer-groups")
    private static JsonNode listConsumerGroups(Ctx ctx) throws Exception {
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            ObjectNode out = Json.obj();
            for (var listing : AdminScenarios.get(admin.listConsumerGroups().all())) {
                out.putObject(listing.groupId())
                        .put("state", listing.groupState().map(Enum::name).orElse(null))
                        .put("type", listing.type().map(Enum::name).orElse(null))
                        .put("simple", listing.isSimpleConsumerGroup());
            }
            return out;
        }
    }

    private static ObjectNode listings(Iterable<GroupListing> listings) {
        ObjectNode out = Json.obj();
        for (GroupListing listing : listings) {
            out.putObject(listing.groupId())
                    .put("type", listing.type().map(Enum::name).orElse(null))
                    .put("state", listing.groupState().map(Enum::name).orElse(null))
                    .put("protocol", listing.protocol())
                    .put("simple", listing.isSimpleConsumerGroup());
        }
        return out;
    }

    /**
     * describeConsumerGroups for `groups`: per group {state, type, assignor, coordinator, simple, members:
     * [{member_id, instance_id, client_id, host, member_epoch, assignment: {topic: [partitions]}}], and for a
     * KIP-848 group group_epoch and assignment_epoch (-1 for a classic group)} or its error.
     */
    @Scenario.Named("describe-groups")
    private static JsonNode describeGroups(Ctx ctx) {
        return perGroup(ctx, (admin, groups) -> admin.describeConsumerGroups(groups).describedGroups(),
                GroupAdminScenarios::groupFields);
    }

    /** `ask` a fresh Admin about the `groups` argument: each group's outcome under its id, `fill` adds the fields. */
    static <V> JsonNode perGroup(
            Ctx ctx, BiFunction<Admin, List<String>, Map<String, KafkaFuture<V>>> ask, BiConsumer<ObjectNode, V> fill) {
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.each(ask.apply(admin, ctx.args.strings("groups")), g -> g, fill);
        }
    }

    private static void groupFields(ObjectNode node, ConsumerGroupDescription d) {
        node.put("state", d.groupState().name());
        node.put("type", d.type().name());
        node.put("group_epoch", d.groupEpoch().orElse(-1));
        node.put("assignment_epoch", d.targetAssignmentEpoch().orElse(-1));
        node.put("assignor", d.partitionAssignor());
        node.put("coordinator", d.coordinator() == null ? -1 : d.coordinator().id());
        node.put("simple", d.isSimpleConsumerGroup());
        ArrayNode members = node.putArray("members");
        List<MemberDescription> sorted = d.members().stream()
                .sorted(Comparator.comparing(MemberDescription::consumerId)).toList();
        for (MemberDescription m : sorted) {
            ObjectNode mn = members.addObject();
            mn.put("member_id", m.consumerId());
            mn.put("instance_id", m.groupInstanceId().orElse(null));
            mn.put("client_id", m.clientId());
            mn.put("host", m.host());
            mn.put("member_epoch", m.memberEpoch().orElse(-1));
            Map<String, Set<Integer>> assignment = new TreeMap<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                assignment.computeIfAbsent(tp.topic(), t -> new java.util.TreeSet<>()).add(tp.partition());
            }
            ObjectNode an = mn.putObject("assignment");
            assignment.forEach((topic, parts) -> {
                ArrayNode pn = an.putArray(topic);
                parts.forEach(pn::add);
            });
        }
    }

    /**
     * listConsumerGroupOffsets for every group of `groups` (one request, as the Admin batches them): per
     * group the list of [topic, partition, offset, metadata, leader epoch] it committed, or its error.
     */
    @Scenario.Named("group-offsets")
    private static JsonNode groupOffsets(Ctx ctx) {
        Map<String, ListConsumerGroupOffsetsSpec> specs = new HashMap<>();
        ctx.args.strings("groups").forEach(g -> specs.put(g, new ListConsumerGroupOffsetsSpec()));
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            var result = admin.listConsumerGroupOffsets(specs);
            Map<String, KafkaFuture<Map<TopicPartition, OffsetAndMetadata>>> each = new HashMap<>();
            specs.keySet().forEach(g -> each.put(g, result.partitionsToOffsetAndMetadata(g)));
            return Outcomes.each(each, g -> g, (node, offsets) -> {
                ArrayNode list = node.putArray("offsets");
                offsets.entrySet().stream()
                        .sorted(Comparator.comparing((Map.Entry<TopicPartition, OffsetAndMetadata> e) -> e.getKey().topic())
                                .thenComparing(e -> e.getKey().partition()))
                        .forEach(e -> list.add(offsetRow(e.getKey(), e.getValue())));
            });
        }
    }

    private static ArrayNode offsetRow(TopicPartition tp, OffsetAndMetadata om) {
        ArrayNode row = Json.arr().add(tp.topic()).add(tp.partition());
        if (om == null) {
            return row.add(-1).add((String) null).add(-1);
        }
        return row.add(om.offset()).add(om.metadata()).add(om.leaderEpoch().orElse(-1));
    }

    /** alterConsumerGroupOffsets of `group`: `offsets` [[topic, partition, offset, metadata?]]. Per partition. */
    @Scenario.Named("alter-group-offsets")
    private static JsonNode alterGroupOffsets(Ctx ctx) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (JsonNode row : ctx.args.get("offsets")) {
            offsets.put(tp(row), new OffsetAndMetadata(row.get(2).asLong(), row.path(3).asText("")));
        }
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            var result = admin.alterConsumerGroupOffsets(ctx.args.str("group"), offsets);
            Map<TopicPartition, KafkaFuture<Void>> each = new HashMap<>();
            offsets.keySet().forEach(tp -> each.put(tp, result.partitionResult(tp)));
            return Outcomes.each(each, tp -> tp.topic() + ":" + tp.partition(), (node, done) -> {});
        }
    }

    /** deleteConsumerGroupOffsets of `group` for `partitions` [[topic, partition]]: the call and per partition. */
    @Scenario.Named("delete-group-offsets")
    private static JsonNode deleteGroupOffsets(Ctx ctx) {
        Set<TopicPartition> partitions = new HashSet<>();
        ctx.args.get("partitions").forEach(pair -> partitions.add(tp(pair)));
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            DeleteConsumerGroupOffsetsResult result =
                    admin.deleteConsumerGroupOffsets(ctx.args.str("group"), partitions);
            Map<TopicPartition, KafkaFuture<Void>> each = new HashMap<>();
            partitions.forEach(tp -> each.put(tp, result.partitionResult(tp)));
            ObjectNode out = Json.obj();
            out.set("all", Outcomes.of(result.all()));
            out.set("partitions", Outcomes.each(each, tp -> tp.topic() + ":" + tp.partition(), (node, done) -> {}));
            return out;
        }
    }

    /** deleteConsumerGroups for `groups`: per group null error or the refusal. */
    @Scenario.Named("delete-groups")
    private static JsonNode deleteGroups(Ctx ctx) {
        return perGroup(ctx, (admin, groups) -> admin.deleteConsumerGroups(groups).deletedGroups(), (node, done) -> {});
    }
}
