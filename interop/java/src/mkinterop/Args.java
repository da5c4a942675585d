package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A scenario's arguments (a JSON object) and the client properties they make.
 *
 * <p>Every scenario takes `bootstrap` and an optional `props` object: any Kafka client property (security
 * settings included), applied last, so a test can override what a scenario sets by default.
 */
final class Args {
    private final ObjectNode node;

    Args(ObjectNode node) {
        this.node = node;
    }

    ObjectNode node() {
        return node;
    }

    boolean has(String key) {
        return node.hasNonNull(key);
    }

    JsonNode get(String key) {
        JsonNode value = node.get(key);
        if (value == null || value.isNull()) {
            throw new IllegalArgumentException("missing argument `" + key + "`");
        }
        return value;
    }

    String str(String key) {
        return get(key).asText();
    }

    String str(String key, String fallback) {
        return has(key) ? str(key) : fallback;
    }

    int integer(String key) {
        return get(key).asInt();
    }

    int integer(String key, int fallback) {
        return has(key) ? integer(key) : fallback;
    }

    long longValue(String key) {
        return get(key).asLong();
    }

    boolean bool(String key, boolean fallback) {
        return has(key) ? get(key).asBoolean() : fallback;
    }

    List<String> strings(String key) {
        List<String> out = new ArrayList<>();
        for (JsonNode item : get(key)) {
            out.add(item.asText());
        }
        return out;
    }

    List<Integer> ints(String key) {
        List<Integer> out = new ArrayList<>();
        for (JsonNode item : get(key)) {
            out.add(item.asInt());
        }
        return out;
    }

    /** `bootstrap.servers`, then the scenario's defaults, then the caller's `props`. */
    Properties props(Map<String, Object> defaults) {
        Properties props = new Properties();
        props.put("bootstrap.servers", str("bootstrap"));
        props.putAll(defaults);
        if (has("props")) {
            for (Map.Entry<String, JsonNode> field : get("props").properties()) {
                props.put(field.getKey(), field.getValue().asText());
            }
        }
        return props;
    }

    Properties props() {
        return props(Map.of());
    }
}
