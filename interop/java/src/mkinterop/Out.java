package mkinterop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;

/**
 * The driver's stdout: one JSON object per line. Events carry `ev` and `t` (seconds since the epoch, like
 * Python's time.time()); in serve mode every line also carries the request's `id`. Callbacks of client
 * threads emit too, so writes are serialized.
 */
final class Out {
    private final PrintStream stream;
    private volatile Long requestId;

    Out(PrintStream stream) {
        this.stream = stream;
    }

    void setRequestId(Long id) {
        this.requestId = id;
    }

    /** A new event object with `ev` and `t` set; fill it, then {@link #emit}. */
    ObjectNode event(String ev) {
        ObjectNode node = Json.obj();
        node.put("ev", ev);
        node.put("t", System.currentTimeMillis() / 1000.0);
        return node;
    }

    void emit(ObjectNode event) {
        Long id = requestId;
        if (id != null) {
            event.put("id", id);
        }
        String line = Json.write(event);
        synchronized (this) {
            stream.println(line);
            stream.flush();
        }
    }

    void emit(String ev) {
        emit(event(ev));
    }
}
