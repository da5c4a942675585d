package mkinterop;

import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What a scenario runs with: its arguments, the output, the process's state (client objects that live
 * across requests in serve mode, e.g. an open transactional producer, keyed by a name the caller picks),
 * and `stop`, set when `stop` arrives on stdin or stdin closes (run mode only).
 */
final class Ctx {
    final Args args;
    final Out out;
    final Map<String, AutoCloseable> state;
    final AtomicBoolean stop;

    Ctx(Args args, Out out, Map<String, AutoCloseable> state, AtomicBoolean stop) {
        this.args = args;
        this.out = out;
        this.state = state;
        this.stop = stop;
    }

    /** The state object called `name`, which must exist and be of type `type`. */
    <T> T held(String name, Class<T> type) {
        AutoCloseable value = state.get(name);
        if (value == null) {
            throw new IllegalArgumentException("no client called `" + name + "` is open in this driver");
        }
        return type.cast(value);
    }
}
