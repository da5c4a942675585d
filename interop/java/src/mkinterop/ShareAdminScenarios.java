package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * The Admin client on share groups (KIP-932): describe, and the share-partition start offsets (list, alter,
 * delete).
 */
final class ShareAdminScenarios {
    private ShareAdminScenarios() {}

    /** describeShareGroups for `groups`: per group {state, group_epoch, members: [{member_id, epoch, assignment}]}. */
    @Scenario.Named("describe-share-groups")
    private static JsonNode describe(Ctx ctx) {
        return GroupAdminScenarios.perGroup(
                ctx, (admin, groups) -> admin.describeShareGroups(groups).describedGroups(), ShareAdminScenarios::fields);
    }

    private static void fields(ObjectNode node, ShareGroupDescription d) {
        node.put("state", d.groupState().name());
        node.put("group_epoch", d.groupEpoch());
        ArrayNode members = node.putArray("members");
        d.members().stream().sorted(Comparator.comparing(ShareMemberDescription::consumerId)).forEach(m -> {
            ObjectNode mn = members.addObject();
            mn.put("member_id", m.consumerId());
            mn.put("member_epoch", m.memberEpoch());
            ArrayNode parts = mn.putArray("assignment");
            m.assignment().topicPartitions().stream()
                    .sorted(Comparator.comparing(TopicPartition::topic).thenComparing(TopicPartition::partition))
                    .forEach(tp -> parts.add(Json.arr().add(tp.topic()).add(tp.partition())));
        });
    }

    /** listShareGroupOffsets of `group`: {offsets: [[topic, partition, start offset], ...]}. */
    @Scenario.Named("share-group-offsets")
    private static JsonNode offsets(Ctx ctx) throws Exception {
        String group = ctx.args.str("group");
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            Map<String, ListShareGroupOffsetsSpec> specs = Map.of(group, new ListShareGroupOffsetsSpec());
            Map<TopicPartition, SharePartitionOffsetInfo> got =
                    AdminScenarios.get(admin.listShareGroupOffsets(specs).partitionsToOffsetInfo(group));
            ObjectNode out = Json.obj();
            ArrayNode list = out.putArray("offsets");
            got.entrySet().stream()
                    .sorted(Comparator.comparing((Map.Entry<TopicPartition, SharePartitionOffsetInfo> e) -> e.getKey().topic())
                            .thenComparing(e -> e.getKey().partition()))
                    .forEach(e -> list.add(Json.arr().add(e.getKey().topic()).add(e.getKey().partition())
                            .add(e.getValue() == null ? -1 : e.getValue().startOffset())));
            return out;
        }
    }

    /** alterShareGroupOffsets of `group` to `offsets` [[topic, partition, offset], ...]. */
    @Scenario.Named("alter-share-group-offsets")
    private static JsonNode alterOffsets(Ctx ctx) {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (JsonNode row : ctx.args.get("offsets")) {
            offsets.put(new TopicPartition(row.get(0).asText(), row.get(1).asInt()), row.get(2).asLong());
        }
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.of(admin.alterShareGroupOffsets(ctx.args.str("group"), offsets).all());
        }
    }

    /** deleteShareGroupOffsets of `group` for `topics`. */
    @Scenario.Named("delete-share-group-offsets")
    private static JsonNode deleteOffsets(Ctx ctx) {
        Set<String> topics = new HashSet<>(ctx.args.strings("topics"));
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.of(admin.deleteShareGroupOffsets(ctx.args.str("group"), topics).all());
        }
    }
}
