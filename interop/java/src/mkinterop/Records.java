package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Records as JSON: {key, value, partition, timestamp, headers: [[name, value], ...]}, keys, values and
 * header values in base64 (null stays null), so every byte and every null crosses exactly.
 */
final class Records {
    private Records() {}

    static ProducerRecord<byte[], byte[]> toProducer(String topic, JsonNode rec) {
        RecordHeaders headers = new RecordHeaders();
        for (JsonNode header : rec.path("headers")) {
            headers.add(header.get(0).asText(), Json.bytes(header.get(1)));
        }
        Integer partition = rec.hasNonNull("partition") ? rec.get("partition").asInt() : null;
        Long timestamp = rec.hasNonNull("timestamp") ? rec.get("timestamp").asLong() : null;
        return new ProducerRecord<>(
                topic, partition, timestamp, Json.bytes(rec.get("key")), Json.bytes(rec.get("value")), headers);
    }

    static ObjectNode toJson(ConsumerRecord<byte[], byte[]> rec) {
        ObjectNode out = Json.obj();
        out.put("partition", rec.partition());
        out.put("offset", rec.offset());
        out.put("key", Json.b64(rec.key()));
        out.put("value", Json.b64(rec.value()));
        out.put("timestamp", rec.timestamp());
        out.put("timestamp_type", rec.timestampType().name);
        rec.leaderEpoch().ifPresent(epoch -> out.put("leader_epoch", epoch));
        ArrayNode headers = out.putArray("headers");
        for (Header header : rec.headers()) {
            headers.add(Json.arr().add(header.key()).add(Json.b64(header.value())));
        }
        return out;
    }

    static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }
}
