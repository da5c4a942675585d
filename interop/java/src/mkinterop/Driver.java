package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.protocol.Errors;

/**
 * The interop suite's Java driver: runs named scenarios with the official Kafka client.
 *
 * <pre>
 *   java mkinterop.Driver serve               # requests on stdin, one JSON object per line
 *   java mkinterop.Driver run NAME 'JSON'     # one scenario; stdin is its control channel (`stop`)
 * </pre>
 *
 * A serve request is {"id": N, "scenario": NAME, "args": {...}}; it is answered by the scenario's events and
 * then one line {"id": N, "ev": "result", "result": ...} or {"id": N, "ev": "error", "error": "Class: message",
 * "failure": {type, class, code, message, causes, trace}}.
 * Requests run one after the other. In run mode the last line is the result or the failure, and the exit
 * code is 0 or 1. Client logs go to stderr (log4j2), never to stdout.
 */
public final class Driver {
    private Driver() {}

    public static void main(String[] argv) throws Exception {
        Map<String, Scenario> scenarios = Scenarios.all();
        Out out = new Out(System.out);
        if (argv.length == 1 && argv[0].equals("serve")) {
            serve(scenarios, out);
        } else if (argv.length == 3 && argv[0].equals("run")) {
            System.exit(runOnce(scenarios, out, argv[1], argv[2]) ? 0 : 1);
        } else {
            System.err.println("usage: mkinterop.Driver serve | mkinterop.Driver run SCENARIO JSON-ARGS");
            System.exit(2);
        }
    }

    private static void serve(Map<String, Scenario> scenarios, Out out) throws Exception {
        Map<String, AutoCloseable> state = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.emit("ready");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode request = Json.parse(line);
            out.setRequestId(request.path("id").asLong());
            JsonNode args = request.path("args");
            Ctx ctx = new Ctx(
                    new Args(args.isObject() ? (ObjectNode) args : Json.obj()), out, state, new AtomicBoolean());
            execute(scenarios, request.path("scenario").asText(), ctx);
            out.setRequestId(null);
        }
        for (AutoCloseable held : state.values()) {
            held.close();
        }
    }

    private static boolean runOnce(Map<String, Scenario> scenarios, Out out, String name, String args)
            throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        Thread control = new Thread(() -> readControl(stop), "mk-control");
        control.setDaemon(true);
        control.start();
        Ctx ctx = new Ctx(new Args(Json.parse(args)), out, new HashMap<>(), stop);
        boolean ok = execute(scenarios, name, ctx);
        for (AutoCloseable held : ctx.state.values()) {
            held.close();
        }
        return ok;
    }

    /** `stop` on stdin, or stdin closing, asks a run-mode scenario to stop. */
    private static void readControl(AtomicBoolean stop) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
                // Anything else on the control channel is ignored.
            }
        } catch (java.io.IOException e) {
            // A broken stdin means the test process is gone: stop.
        }
        stop.set(true);
    }

    /** Runs one scenario and reports its result or failure; true when it succeeded. */
    private static boolean execute(Map<String, Scenario> scenarios, String name, Ctx ctx) {
        Scenario scenario = scenarios.get(name);
        try {
            if (scenario == null) {
                throw new IllegalArgumentException("unknown scenario `" + name + "`; known: " + scenarios.keySet());
            }
            JsonNode result = scenario.run(ctx);
            ObjectNode done = ctx.out.event("result");
            done.set("result", result == null ? Json.obj() : result);
            ctx.out.emit(done);
            return true;
        } catch (Throwable e) {
            ObjectNode failed = ctx.out.event("error");
            ObjectNode failure = describe(e);
            failed.put("error", failure.get("type").asText() + ": " + failure.get("message").asText());
            failed.set("failure", failure);
            ctx.out.emit(failed);
            return false;
        }
    }

    /** A failure as data: the class and message of the real cause (futures' wrappers peeled), the chain, the trace. */
    static ObjectNode describe(Throwable e) {
        Throwable cause = unwrap(e);
        ObjectNode error = Json.obj();
        error.put("type", cause.getClass().getSimpleName());
        error.put("class", cause.getClass().getName());
        error.put("code", Errors.forException(cause).name());
        error.put("message", String.valueOf(cause.getMessage()));
        ArrayNode chain = error.putArray("causes");
        for (Throwable c = cause.getCause(); c != null && chain.size() < 8; c = c.getCause()) {
            chain.add(c.getClass().getName() + ": " + c.getMessage());
        }
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        error.put("trace", trace.toString());
        return error;
    }

    static Throwable unwrap(Throwable e) {
        Throwable cause = e;
        while ((cause instanceof ExecutionException || cause instanceof CompletionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    /** Just the class name of a failure's real cause, for per-item errors answered as data. */
    static String errorName(Throwable e) {
        return unwrap(e).getClass().getSimpleName();
    }
}
