package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * A transactional producer driven step by step across serve requests (the test decides when to init,
 * begin, send, flush, commit or abort, so it can interleave two producers): `txn-open` makes one under a
 * `name`, the other scenarios act on it, `txn-close` closes it. Every wait is bounded by max.block.ms (30 s).
 */
final class TxnScenarios {
    private TxnScenarios() {}

    /** The steps that are one call on the named producer each. */
    static Map<String, Scenario> steps() {
        Map<String, Scenario> all = new HashMap<>();
        all.put("txn-init", ctx -> step(ctx, p -> p.producer.initTransactions()));
        all.put("txn-begin", ctx -> step(ctx, p -> p.producer.beginTransaction()));
        all.put("txn-commit", ctx -> step(ctx, p -> p.producer.commitTransaction()));
        all.put("txn-abort", ctx -> step(ctx, p -> p.producer.abortTransaction()));
        return all;
    }

    /** An open transactional producer and the sends not yet flushed. */
    static final class TxnProducer implements AutoCloseable {
        final KafkaProducer<byte[], byte[]> producer;
        final List<Future<RecordMetadata>> unflushed = new ArrayList<>();

        TxnProducer(KafkaProducer<byte[], byte[]> producer) {
            this.producer = producer;
        }

        @Override
        public void close() {
            producer.close(Duration.ofSeconds(10));
        }
    }

    private interface Step {
        void apply(TxnProducer producer) throws Exception;
    }

    private static JsonNode step(Ctx ctx, Step step) throws Exception {
        step.apply(ctx.held(ctx.args.str("name"), TxnProducer.class));
        return Json.obj();
    }

    /** `name`, `transactional_id`, optional `transaction_timeout_ms` and `props`. */
    @Scenario.Named("txn-open")
    private static JsonNode open(Ctx ctx) {
        String name = ctx.args.str("name");
        if (ctx.state.containsKey(name)) {
            throw new IllegalArgumentException("a client called `" + name + "` is already open");
        }
        Map<String, Object> defaults = new HashMap<>();
        defaults.put("transactional.id", ctx.args.str("transactional_id"));
        defaults.put("linger.ms", "5");
        defaults.put("max.block.ms", "30000");
        if (ctx.args.has("transaction_timeout_ms")) {
            defaults.put("transaction.timeout.ms", ctx.args.str("transaction_timeout_ms"));
        }
        ctx.state.put(name, new TxnProducer(ClientScenarios.producer(ctx.args.props(defaults))));
        return Json.obj();
    }

    /** `records` to `topic` (each with value, partition and optional key), not waited for. */
    @Scenario.Named("txn-send")
    private static JsonNode send(Ctx ctx) {
        TxnProducer p = ctx.held(ctx.args.str("name"), TxnProducer.class);
        String topic = ctx.args.str("topic");
        for (JsonNode rec : ctx.args.get("records")) {
            ProducerRecord<byte[], byte[]> record = Records.toProducer(topic, rec);
            p.unflushed.add(p.producer.send(record));
        }
        return Json.obj();
    }

    /** flush(), then every send since the last flush must be acknowledged: {acks: [[partition, offset]]}. */
    @Scenario.Named("txn-flush")
    private static JsonNode flush(Ctx ctx) throws Exception {
        TxnProducer p = ctx.held(ctx.args.str("name"), TxnProducer.class);
        p.producer.flush();
        ArrayNode acks = Json.arr();
        try {
            for (Future<RecordMetadata> f : p.unflushed) {
                RecordMetadata md = f.get(ClientScenarios.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                acks.add(Json.arr().add(md.partition()).add(md.offset()));
            }
        } finally {
            p.unflushed.clear();
        }
        ObjectNode out = Json.obj();
        out.set("acks", acks);
        return out;
    }

    @Scenario.Named("txn-close")
    private static JsonNode close(Ctx ctx) throws Exception {
        AutoCloseable held = ctx.state.remove(ctx.args.str("name"));
        if (held != null) {
            held.close();
        }
        return Json.obj();
    }
}
