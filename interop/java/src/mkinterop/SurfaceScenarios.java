package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterClientQuotasOptions;
import org.apache.kafka.clients.admin.AlterPartitionReassignmentsOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

/**
 * The newer client-facing APIs of issue 21 (tests/test_client_surface.py): client telemetry
 * (GetTelemetrySubscriptions, which every 4.x client calls by default), client quotas, leader elections and
 * partition reassignments.
 */
final class SurfaceScenarios {
    private SurfaceScenarios() {}

    private static final Duration ASK = Duration.ofSeconds(30);

    /**
     * An Admin (telemetry on), a producer (which then writes `topic`) and a consumer (telemetry on by
     * default): the instance id each got from the broker, and the produced record's offset.
     */
    @Scenario.Named("client-instance-ids")
    private static JsonNode clientInstanceIds(Ctx ctx) throws Exception {
        ObjectNode out = Json.obj();
        // The Admin client is the one whose default is off.
        try (Admin admin = Admin.create(ctx.args.props(Map.of("enable.metrics.push", "true")))) {
            out.put("admin", admin.clientInstanceId(ASK).toString());
        }
        try (KafkaProducer<byte[], byte[]> producer = ClientScenarios.producer(ctx.args.props())) {
            out.put("producer", producer.clientInstanceId(ASK).toString());
            ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(ctx.args.str("topic"), "v".getBytes());
            out.put("offset", producer.send(record).get().offset());
        }
        // A consumer talks to brokers only while it polls: it reads the record first.
        try (KafkaConsumer<byte[], byte[]> consumer = ClientScenarios.consumer(ctx.args.props())) {
            TopicPartition tp = new TopicPartition(ctx.args.str("topic"), 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + ASK.toNanos();
            int read = 0;
            while (read == 0 && System.nanoTime() < deadline) {
                read = consumer.poll(Duration.ofMillis(200)).count();
            }
            out.put("read", read);
            Uuid id = consumer.clientInstanceId(ASK);
            out.put("consumer", id == null ? null : id.toString());
        }
        return out;
    }

    /** An entity as "type=name,..." in type order, the default entity's name `<default>`. */
    private static String entityName(ClientQuotaEntity entity) {
        return new TreeMap<>(entity.entries()).entrySet().stream()
                .map(e -> e.getKey() + "=" + (e.getValue() == null ? "<default>" : e.getValue()))
                .collect(Collectors.joining(","));
    }

    private static ClientQuotaEntity entity(JsonNode node) {
        Map<String, String> parts = new HashMap<>();
        node.properties().forEach(e -> parts.put(e.getKey(), e.getValue().isNull() ? null : e.getValue().asText()));
        return new ClientQuotaEntity(parts);
    }

    /**
     * `entries`: [{entity: {type: name or null}, ops: {key: value, or null to remove}}], `validate_only`.
     * Per entity (as {@link #entityName}): its outcome.
     */
    @Scenario.Named("alter-client-quotas")
    private static JsonNode alterClientQuotas(Ctx ctx) {
        List<ClientQuotaAlteration> entries = new ArrayList<>();
        for (JsonNode e : ctx.args.get("entries")) {
            List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
            e.get("ops").properties().forEach(op -> ops.add(new ClientQuotaAlteration.Op(
                    op.getKey(), op.getValue().isNull() ? null : op.getValue().asDouble())));
            entries.add(new ClientQuotaAlteration(entity(e.get("entity")), ops));
        }
        AlterClientQuotasOptions options = new AlterClientQuotasOptions().validateOnly(ctx.args.bool("validate_only", false));
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.each(admin.alterClientQuotas(entries, options).values(), SurfaceScenarios::entityName,
                    (node, none) -> {});
        }
    }

    /**
     * `components`: [[type, "exact" | "default" | "specified", name]], `strict`. {entities: {name: {key: value}}}
     * or the call's error.
     */
    @Scenario.Named("describe-client-quotas")
    private static JsonNode describeClientQuotas(Ctx ctx) {
        List<ClientQuotaFilterComponent> components = new ArrayList<>();
        for (JsonNode c : ctx.args.get("components")) {
            String type = c.get(0).asText();
            components.add(switch (c.get(1).asText()) {
                case "exact" -> ClientQuotaFilterComponent.ofEntity(type, c.get(2).asText());
                case "default" -> ClientQuotaFilterComponent.ofDefaultEntity(type);
                default -> ClientQuotaFilterComponent.ofEntityType(type);
            });
        }
        ClientQuotaFilter filter = ctx.args.bool("strict", false)
                ? ClientQuotaFilter.containsOnly(components) : ClientQuotaFilter.contains(components);
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.of(admin.describeClientQuotas(filter).entities(), (node, entities) -> {
                ObjectNode out = node.putObject("entities");
                entities.forEach((entity, values) -> {
                    ObjectNode v = out.putObject(entityName(entity));
                    values.forEach(v::put);
                });
            });
        }
    }

    /**
     * `type`: "preferred" or "unclean"; `partitions`: [[topic, partition]] or absent (all). Per partition the
     * outcome (the client reports ELECTION_NOT_NEEDED as an error of the partition).
     */
    @Scenario.Named("elect-leaders")
    private static JsonNode electLeaders(Ctx ctx) throws Exception {
        ElectionType type = "unclean".equals(ctx.args.str("type")) ? ElectionType.UNCLEAN : ElectionType.PREFERRED;
        Set<TopicPartition> partitions = null;
        if (ctx.args.has("partitions")) {
            partitions = new HashSet<>();
            for (JsonNode pair : ctx.args.get("partitions")) {
                partitions.add(new TopicPartition(pair.get(0).asText(), pair.get(1).asInt()));
            }
        }
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            Map<TopicPartition, Optional<Throwable>> outcomes = AdminScenarios.get(admin.electLeaders(type, partitions).partitions());
            ObjectNode out = Json.obj();
            outcomes.forEach((tp, failure) -> out.set(tp.topic() + ":" + tp.partition(),
                    failure.map(Outcomes::failure).orElseGet(() -> Json.obj().putNull("error"))));
            return out;
        }
    }

    private static String partitionName(TopicPartition tp) {
        return tp.topic() + ":" + tp.partition();
    }

    private static ArrayNode ints(List<Integer> values) {
        ArrayNode out = Json.arr();
        values.forEach(out::add);
        return out;
    }

    /**
     * `moves`: [[topic, partition, [broker, ...] or null to cancel]], `allow_rf_change` (default true). Per
     * partition (as "topic:partition") its outcome.
     */
    @Scenario.Named("alter-partition-reassignments")
    private static JsonNode alterPartitionReassignments(Ctx ctx) {
        Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
        for (JsonNode m : ctx.args.get("moves")) {
            TopicPartition tp = new TopicPartition(m.get(0).asText(), m.get(1).asInt());
            if (m.get(2).isNull()) {
                moves.put(tp, Optional.empty());
            } else {
                List<Integer> replicas = new ArrayList<>();
                m.get(2).forEach(b -> replicas.add(b.asInt()));
                moves.put(tp, Optional.of(new NewPartitionReassignment(replicas)));
            }
        }
        AlterPartitionReassignmentsOptions options = new AlterPartitionReassignmentsOptions()
                .allowReplicationFactorChange(ctx.args.bool("allow_rf_change", true));
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.each(admin.alterPartitionReassignments(moves, options).values(),
                    SurfaceScenarios::partitionName, (node, none) -> {});
        }
    }

    /**
     * `partitions`: [[topic, partition]] or absent (all). {reassignments: {"topic:partition": {replicas, adding,
     * removing}}} or the call's error.
     */
    @Scenario.Named("list-partition-reassignments")
    private static JsonNode listPartitionReassignments(Ctx ctx) {
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            KafkaFuture<Map<TopicPartition, PartitionReassignment>> listed;
            if (ctx.args.has("partitions")) {
                Set<TopicPartition> partitions = new HashSet<>();
                for (JsonNode pair : ctx.args.get("partitions")) {
                    partitions.add(new TopicPartition(pair.get(0).asText(), pair.get(1).asInt()));
                }
                listed = admin.listPartitionReassignments(partitions).reassignments();
            } else {
                listed = admin.listPartitionReassignments().reassignments();
            }
            return Outcomes.of(listed, (node, reassignments) -> {
                ObjectNode out = node.putObject("reassignments");
                reassignments.forEach((tp, r) -> {
                    ObjectNode one = out.putObject(partitionName(tp));
                    one.set("replicas", ints(r.replicas()));
                    one.set("adding", ints(r.addingReplicas()));
                    one.set("removing", ints(r.removingReplicas()));
                });
            });
        }
    }
}
