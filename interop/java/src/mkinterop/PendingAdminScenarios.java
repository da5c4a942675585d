package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Admin calls for the partition-log and transaction admin APIs (DeleteRecords, DescribeLogDirs,
 * DescribeProducers, ListTransactions, DescribeTransactions; tests/test_log_admin.py and
 * tests/test_txn_admin.py) and FenceProducers.
 */
final class PendingAdminScenarios {
    private PendingAdminScenarios() {}

    private static TopicPartition tp(JsonNode pair) {
        return new TopicPartition(pair.get(0).asText(), pair.get(1).asInt());
    }

    private static String key(TopicPartition tp) {
        return tp.topic() + ":" + tp.partition();
    }

    /** `before`: [[topic, partition, offset]]. Per partition: {low_watermark} or its error. */
    @Scenario.Named("delete-records")
    private static JsonNode deleteRecords(Ctx ctx) {
        Map<TopicPartition, RecordsToDelete> before = new HashMap<>();
        ctx.args.get("before").forEach(row -> before.put(tp(row), RecordsToDelete.beforeOffset(row.get(2).asLong())));
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.each(admin.deleteRecords(before).lowWatermarks(), PendingAdminScenarios::key,
                    (node, lw) -> node.put("low_watermark", lw.lowWatermark()));
        }
    }

    /** `brokers`: ids. Per broker: {dirs: {path: {error, partitions: {topic:partition: size}}}} or its error. */
    @Scenario.Named("describe-log-dirs")
    private static JsonNode describeLogDirs(Ctx ctx) {
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.each(admin.describeLogDirs(ctx.args.ints("brokers")).descriptions(), String::valueOf,
                    (node, dirs) -> {
                        ObjectNode dn = node.putObject("dirs");
                        dirs.forEach((path, d) -> {
                            ObjectNode one = dn.putObject(path);
                            one.put("error", d.error() == null ? null : d.error().getClass().getSimpleName());
                            ObjectNode parts = one.putObject("partitions");
                            d.replicaInfos().forEach((tp, info) -> parts.put(key(tp), info.size()));
                        });
                    });
        }
    }

    /** `partitions`: [[topic, partition]]. Per partition: {producers: [{id, epoch, last_sequence, last_timestamp, txn_start}]}. */
    @Scenario.Named("describe-producers")
    private static JsonNode describeProducers(Ctx ctx) {
        List<TopicPartition> partitions = new ArrayList<>();
        ctx.args.get("partitions").forEach(pair -> partitions.add(tp(pair)));
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            var result = admin.describeProducers(partitions);
            Map<TopicPartition, KafkaFuture<DescribeProducersResult.PartitionProducerState>> each = new HashMap<>();
            partitions.forEach(tp -> each.put(tp, result.partitionResult(tp)));
            return Outcomes.each(each, PendingAdminScenarios::key,
                    (node, state) -> {
                        ArrayNode producers = node.putArray("producers");
                        for (ProducerState p : state.activeProducers()) {
                            producers.addObject()
                                    .put("id", p.producerId())
                                    .put("epoch", p.producerEpoch())
                                    .put("last_sequence", p.lastSequence())
                                    .put("last_timestamp", p.lastTimestamp())
                                    .put("txn_start", p.currentTransactionStartOffset().orElse(-1));
                        }
                    });
        }
    }

    /** {transactional id: {producer_id, state}}. */
    @Scenario.Named("list-transactions")
    private static JsonNode listTransactions(Ctx ctx) throws Exception {
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            ObjectNode out = Json.obj();
            for (TransactionListing t : AdminScenarios.get(admin.listTransactions().all())) {
                out.putObject(t.transactionalId()).put("producer_id", t.producerId()).put("state", t.state().name());
            }
            return out;
        }
    }

    /** `ids`: transactional ids. Per id: {state, producer_id, epoch, timeout_ms, partitions} or its error. */
    @Scenario.Named("describe-transactions")
    private static JsonNode describeTransactions(Ctx ctx) {
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            var result = admin.describeTransactions(ctx.args.strings("ids"));
            Map<String, KafkaFuture<TransactionDescription>> each = new HashMap<>();
            ctx.args.strings("ids").forEach(id -> each.put(id, result.description(id)));
            return Outcomes.each(each, id -> id,
                    (node, d) -> {
                        node.put("state", d.state().name());
                        node.put("producer_id", d.producerId());
                        node.put("epoch", d.producerEpoch());
                        node.put("timeout_ms", d.transactionTimeoutMs());
                        ArrayNode parts = node.putArray("partitions");
                        d.topicPartitions().forEach(tp -> parts.add(key(tp)));
                    });
        }
    }

    /** Admin.fenceProducers for `ids` (InitProducerId through each id's coordinator). Per id. */
    @Scenario.Named("fence-producers")
    private static JsonNode fenceProducers(Ctx ctx) {
        try (Admin admin = AdminScenarios.admin(ctx.args)) {
            return Outcomes.each(admin.fenceProducers(ctx.args.strings("ids")).fencedProducers(), id -> id,
                    (node, done) -> {});
        }
    }
}
