package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Base64;

/** JSON for the driver's protocol: one mapper, node builders, and bytes as base64 (null stays null). */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}

    static ObjectNode obj() {
        return MAPPER.createObjectNode();
    }

    static ArrayNode arr() {
        return MAPPER.createArrayNode();
    }

    static ObjectNode parse(String text) throws IOException {
        JsonNode node = MAPPER.readTree(text);
        if (node == null || !node.isObject()) {
            throw new IllegalArgumentException("expected a JSON object, got: " + text);
        }
        return (ObjectNode) node;
    }

    static String write(JsonNode node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write JSON", e);
        }
    }

    /** Bytes as standard base64, or null for null. */
    static String b64(byte[] bytes) {
        return bytes == null ? null : Base64.getEncoder().encodeToString(bytes);
    }

    /** The bytes of a base64 string node; null for a missing or null node. */
    static byte[] bytes(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        return Base64.getDecoder().decode(node.asText());
    }
}
