package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The consume-transform-produce loop of mkinterop/txn_processor.py in Java (run mode, same config keys and
 * events): a read_committed group consumer on `input`; per poll one transaction that writes `out:<value>` to
 * the same partition of `output` and adds the consumed offsets with sendOffsetsToTransaction. With
 * `hold_after`, once that many records are committed the next transaction is written, flushed and left open
 * until the process is killed.
 */
final class EosProcessor {
    private EosProcessor() {}

    @Scenario.Named("eos-processor")
    static JsonNode run(Ctx ctx) throws Exception {
        Args args = ctx.args;
        Map<String, Object> pd = new HashMap<>();
        pd.put("transactional.id", args.str("transactional_id"));
        pd.put("linger.ms", "5");
        pd.put("max.block.ms", "30000");
        Map<String, Object> cd = GroupMember.settings(args);
        cd.put("isolation.level", "read_committed");
        try (KafkaProducer<byte[], byte[]> producer = ClientScenarios.producer(args.props(pd));
                KafkaConsumer<byte[], byte[]> consumer = ClientScenarios.consumer(args.props(cd))) {
            long started = System.nanoTime();
            producer.initTransactions();
            ObjectNode init = ctx.out.event("initialized");
            init.put("took", (System.nanoTime() - started) / 1e9);
            ctx.out.emit(init);
            consumer.subscribe(List.of(args.str("input")), listener(ctx.out));
            ctx.out.emit("started");
            long committed = 0;
            Long holdAfter = args.has("hold_after") ? args.longValue("hold_after") : null;
            while (!ctx.stop.get()) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(200));
                if (polled.isEmpty()) {
                    continue;
                }
                boolean hold = holdAfter != null && committed >= holdAfter;
                transact(ctx, args, producer, consumer, polled, hold);
                committed += polled.count();
            }
        }
        ctx.out.emit("closed");
        return Json.obj();
    }

    private static void transact(Ctx ctx, Args args, KafkaProducer<byte[], byte[]> producer,
            KafkaConsumer<byte[], byte[]> consumer, ConsumerRecords<byte[], byte[]> polled, boolean hold)
            throws InterruptedException {
        String input = args.str("input");
        String output = args.str("output");
        producer.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        ObjectNode shown = Json.obj();
        for (ConsumerRecord<byte[], byte[]> rec : polled) {
            byte[] value = ("out:" + new String(rec.value(), StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
            producer.send(new ProducerRecord<>(output, rec.partition(), rec.key(), value));
            offsets.put(new TopicPartition(input, rec.partition()), new OffsetAndMetadata(rec.offset() + 1));
            shown.put(String.valueOf(rec.partition()), rec.offset() + 1);
        }
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        if (hold) {
            // Written and open: the test kills the process now, so the next run's initTransactions has
            // to abort this transaction.
            producer.flush();
            emitTxn(ctx.out, "open", polled.count(), shown);
            while (true) {
                Thread.sleep(1000);
            }
        }
        producer.commitTransaction();
        emitTxn(ctx.out, "txn", polled.count(), shown);
    }

    private static void emitTxn(Out out, String ev, int n, ObjectNode offsets) {
        ObjectNode event = out.event(ev);
        event.put("n", n);
        event.set("offsets", offsets);
        out.emit(event);
    }

    private static ConsumerRebalanceListener listener(Out out) {
        return new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                emit(out, "revoked", partitions);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                emit(out, "assigned", partitions);
            }
        };
    }

    private static void emit(Out out, String ev, Collection<TopicPartition> partitions) {
        ObjectNode event = out.event(ev);
        ArrayNode ps = event.putArray("partitions");
        partitions.stream().map(TopicPartition::partition).sorted().forEach(ps::add);
        out.emit(event);
    }
}
