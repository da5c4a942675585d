package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The Admin client on topics, configs, the cluster and offsets. Each scenario opens its own Admin and closes
 * it; per-item answers come back as data (see {@link Outcomes}).
 */
final class AdminScenarios {
    private AdminScenarios() {}

    static Admin admin(Args args) {
        return Admin.create(args.props());
    }

    static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(ClientScenarios.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * `topics`: [{name, partitions, replication_factor, configs: {k: v}}], `validate_only`. Per topic: the
     * error, or the partitions, replication factor, topic id and configs the broker answered.
     */
    @Scenario.Named("create-topics")
    private static JsonNode createTopics(Ctx ctx) {
        List<NewTopic> topics = new ArrayList<>();
        for (JsonNode t : ctx.args.get("topics")) {
            Optional<Integer> partitions = t.hasNonNull("partitions")
                    ? Optional.of(t.get("partitions").asInt()) : Optional.empty();
            Optional<Short> rf = t.hasNonNull("replication_factor")
                    ? Optional.of((short) t.get("replication_factor").asInt()) : Optional.empty();
            NewTopic topic = new NewTopic(t.get("name").asText(), partitions, rf);
            Map<String, String> configs = new HashMap<>();
            t.path("configs").properties().forEach(e -> configs.put(e.getKey(), e.getValue().asText()));
            topics.add(topic.configs(configs));
        }
        CreateTopicsOptions options = new CreateTopicsOptions().validateOnly(ctx.args.bool("validate_only", false));
        try (Admin admin = admin(ctx.args)) {
            CreateTopicsResult result = admin.createTopics(topics, options);
            ObjectNode out = Json.obj();
            for (Map.Entry<String, KafkaFuture<Void>> topic : result.values().entrySet()) {
                ObjectNode node = Outcomes.of(topic.getValue());
                if (node.get("error").isNull()) {
                    createdFields(result, topic.getKey(), node);
                }
                out.set(topic.getKey(), node);
            }
            return out;
        }
    }

    /** What CreateTopics answered for a created topic (its own errors as `*_error`, should one fail). */
    private static void createdFields(CreateTopicsResult result, String name, ObjectNode node) {
        try {
            node.put("partitions", get(result.numPartitions(name)));
            node.put("replication_factor", get(result.replicationFactor(name)));
            node.put("topic_id", get(result.topicId(name)).toString());
        } catch (Exception e) {
            node.set("fields_error", Outcomes.failure(e));
        }
        try {
            ObjectNode configs = node.putObject("configs");
            for (ConfigEntry e : get(result.config(name)).entries()) {
                configs.put(e.name(), e.value());
            }
        } catch (Exception e) {
            node.set("configs_error", Outcomes.failure(e));
        }
    }

    /** Lists topics: {names: [...], listings: {name: {topic_id, internal}}}; `internal` lists those too. */
    @Scenario.Named("list-topics")
    private static JsonNode listTopics(Ctx ctx) throws Exception {
        ListTopicsOptions options = new ListTopicsOptions().listInternal(ctx.args.bool("internal", false));
        try (Admin admin = admin(ctx.args)) {
            Collection<TopicListing> listings = get(admin.listTopics(options).listings());
            ObjectNode out = Json.obj();
            ArrayNode names = out.putArray("names");
            ObjectNode byName = out.putObject("listings");
            for (TopicListing l : listings) {
                names.add(l.name());
                byName.putObject(l.name()).put("topic_id", l.topicId().toString()).put("internal", l.isInternal());
            }
            return out;
        }
    }

    /**
     * `topics` by name (or `ids`): per topic its id, internal flag and partitions with leader, replicas, ISR.
     * `page_size`: the partitions per DescribeTopicPartitions answer (the client follows the cursor).
     */
    @Scenario.Named("describe-topics")
    private static JsonNode describeTopics(Ctx ctx) {
        try (Admin admin = admin(ctx.args)) {
            if (ctx.args.has("ids")) {
                return Outcomes.each(admin.describeTopics(topicIds(ctx.args)).topicIdValues(),
                        Uuid::toString, AdminScenarios::topicFields);
            }
            DescribeTopicsOptions options = new DescribeTopicsOptions();
            if (ctx.args.has("page_size")) {
                options.partitionSizeLimitPerResponse(ctx.args.get("page_size").asInt());
            }
            return Outcomes.each(admin.describeTopics(ctx.args.strings("topics"), options).topicNameValues(),
                    name -> name, AdminScenarios::topicFields);
        }
    }

    private static void topicFields(ObjectNode node, TopicDescription d) {
        node.put("name", d.name());
        node.put("topic_id", d.topicId().toString());
        node.put("internal", d.isInternal());
        ArrayNode partitions = node.putArray("partitions");
        for (TopicPartitionInfo p : d.partitions()) {
            ObjectNode pn = partitions.addObject();
            pn.put("partition", p.partition());
            pn.put("leader", p.leader() == null ? -1 : p.leader().id());
            pn.set("replicas", ids(p.replicas()));
            pn.set("isr", ids(p.isr()));
        }
    }

    /** The topics named by id in `ids`. */
    private static TopicCollection topicIds(Args args) {
        List<Uuid> ids = new ArrayList<>();
        args.strings("ids").forEach(id -> ids.add(Uuid.fromString(id)));
        return TopicCollection.ofTopicIds(ids);
    }

    private static ArrayNode ids(List<Node> nodes) {
        ArrayNode out = Json.arr();
        nodes.forEach(n -> out.add(n.id()));
        return out;
    }

    /** {cluster_id, controller, nodes: [{id, host, port, rack}]}. */
    @Scenario.Named("describe-cluster")
    private static JsonNode describeCluster(Ctx ctx) throws Exception {
        try (Admin admin = admin(ctx.args)) {
            DescribeClusterResult result = admin.describeCluster();
            ObjectNode out = Json.obj();
            out.put("cluster_id", get(result.clusterId()));
            Node controller = get(result.controller());
            out.put("controller", controller == null ? -1 : controller.id());
            ArrayNode nodes = out.putArray("nodes");
            for (Node n : get(result.nodes())) {
                nodes.addObject().put("id", n.id()).put("host", n.host()).put("port", n.port()).put("rack", n.rack());
            }
            return out;
        }
    }

    static ConfigResource resource(JsonNode r) {
        ConfigResource.Type type = ConfigResource.Type.valueOf(r.path("type").asText("topic").toUpperCase());
        return new ConfigResource(type, r.get("name").asText());
    }

    /**
     * `resources`: [{type: topic|broker, name}]. Per resource name: {configs: {key: {value, source,
     * default, read_only, sensitive}}} or its error.
     */
    @Scenario.Named("describe-configs")
    private static JsonNode describeConfigs(Ctx ctx) {
        List<ConfigResource> resources = new ArrayList<>();
        ctx.args.get("resources").forEach(r -> resources.add(resource(r)));
        try (Admin admin = admin(ctx.args)) {
            return Outcomes.each(admin.describeConfigs(resources).values(), ConfigResource::name, (node, config) -> {
                ObjectNode entries = node.putObject("configs");
                for (ConfigEntry e : config.entries()) {
                    entries.putObject(e.name())
                            .put("value", e.value())
                            .put("source", e.source().name())
                            .put("default", e.isDefault())
                            .put("read_only", e.isReadOnly())
                            .put("sensitive", e.isSensitive());
                }
            });
        }
    }

    /**
     * IncrementalAlterConfigs. `resources`: [{type, name, ops: [[SET|DELETE|APPEND|SUBTRACT, key, value]]}],
     * `validate_only`. Per resource name: null error or the refusal.
     */
    @Scenario.Named("alter-configs")
    private static JsonNode alterConfigs(Ctx ctx) {
        Map<ConfigResource, Collection<AlterConfigOp>> changes = new HashMap<>();
        for (JsonNode r : ctx.args.get("resources")) {
            List<AlterConfigOp> ops = new ArrayList<>();
            for (JsonNode op : r.get("ops")) {
                ConfigEntry entry = new ConfigEntry(op.get(1).asText(), op.path(2).isNull() ? null : op.path(2).asText());
                ops.add(new AlterConfigOp(entry, AlterConfigOp.OpType.valueOf(op.get(0).asText())));
            }
            changes.put(resource(r), ops);
        }
        var options = new org.apache.kafka.clients.admin.AlterConfigsOptions()
                .validateOnly(ctx.args.bool("validate_only", false));
        try (Admin admin = admin(ctx.args)) {
            return Outcomes.each(admin.incrementalAlterConfigs(changes, options).values(),
                    ConfigResource::name, (node, done) -> {});
        }
    }

    /** `partitions`: {topic: new total}. Per topic: null error or the refusal. */
    @Scenario.Named("create-partitions")
    private static JsonNode createPartitions(Ctx ctx) {
        Map<String, NewPartitions> totals = new HashMap<>();
        ctx.args.get("partitions").properties().forEach(
                e -> totals.put(e.getKey(), NewPartitions.increaseTo(e.getValue().asInt())));
        try (Admin admin = admin(ctx.args)) {
            return Outcomes.each(admin.createPartitions(totals).values(), name -> name, (node, done) -> {});
        }
    }

    /** `topics` by name, or `ids` by topic id. Per topic: null error or the refusal. */
    @Scenario.Named("delete-topics")
    private static JsonNode deleteTopics(Ctx ctx) {
        try (Admin admin = admin(ctx.args)) {
            if (ctx.args.has("ids")) {
                return Outcomes.each(admin.deleteTopics(topicIds(ctx.args)).topicIdValues(),
                        Uuid::toString, (node, done) -> {});
            }
            return Outcomes.each(admin.deleteTopics(ctx.args.strings("topics")).topicNameValues(),
                    name -> name, (node, done) -> {});
        }
    }

    /**
     * ListOffsets for `topic` partitions `partitions` with `spec`: earliest, latest, max-timestamp or a
     * timestamp in ms; `isolation` read_uncommitted (default) or read_committed. Per partition: {offset,
     * timestamp, leader_epoch} or its error.
     */
    @Scenario.Named("list-offsets")
    private static JsonNode listOffsets(Ctx ctx) {
        String topic = ctx.args.str("topic");
        String spec = ctx.args.str("spec");
        OffsetSpec offsetSpec = switch (spec) {
            case "earliest" -> OffsetSpec.earliest();
            case "latest" -> OffsetSpec.latest();
            case "max-timestamp" -> OffsetSpec.maxTimestamp();
            default -> OffsetSpec.forTimestamp(Long.parseLong(spec));
        };
        Map<TopicPartition, OffsetSpec> query = new HashMap<>();
        ctx.args.ints("partitions").forEach(p -> query.put(new TopicPartition(topic, p), offsetSpec));
        IsolationLevel isolation = IsolationLevel.valueOf(ctx.args.str("isolation", "read_uncommitted").toUpperCase());
        try (Admin admin = admin(ctx.args)) {
            ListOffsetsResult result = admin.listOffsets(query, new ListOffsetsOptions(isolation));
            Map<TopicPartition, KafkaFuture<ListOffsetsResult.ListOffsetsResultInfo>> each = new HashMap<>();
            query.keySet().forEach(tp -> each.put(tp, result.partitionResult(tp)));
            return Outcomes.each(each, tp -> String.valueOf(tp.partition()), (node, info) -> {
                node.put("offset", info.offset());
                node.put("timestamp", info.timestamp());
                node.put("leader_epoch", info.leaderEpoch().orElse(-1));
            });
        }
    }
}
