package mkinterop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.protocol.Errors;

/**
 * Per-item Admin results as data: each item becomes {"error": null, ...its fields} or {"error": CLASS,
 * "code": KAFKA_ERROR_NAME, "message": ...}, so a test asserts on a refusal as on any other answer (a whole-call failure still fails
 * the request).
 */
final class Outcomes {
    private Outcomes() {}

    static ObjectNode failure(Throwable e) {
        Throwable cause = Driver.unwrap(e);
        ObjectNode node = Json.obj();
        node.put("error", cause.getClass().getSimpleName());
        node.put("code", Errors.forException(cause).name());
        node.put("message", String.valueOf(cause.getMessage()));
        return node;
    }

    /** One future's outcome; `fill` adds the fields of a success. */
    static <V> ObjectNode of(KafkaFuture<V> future, BiConsumer<ObjectNode, V> fill) {
        V value;
        try {
            value = future.get(ClientScenarios.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            return failure(e);
        }
        ObjectNode node = Json.obj();
        node.putNull("error");
        fill.accept(node, value);
        return node;
    }

    static <V> ObjectNode of(KafkaFuture<V> future) {
        return of(future, (node, value) -> {});
    }

    /** Every future of a keyed result, under `name(key)`. */
    static <K, V> ObjectNode each(
            Map<K, KafkaFuture<V>> futures, Function<K, String> name, BiConsumer<ObjectNode, V> fill) {
        ObjectNode out = Json.obj();
        futures.forEach((key, future) -> out.set(name.apply(key), of(future, fill)));
        return out;
    }
}
