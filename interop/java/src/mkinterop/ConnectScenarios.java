package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.runtime.Worker;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.runtime.distributed.DistributedHerder;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.KafkaConfigBackingStore;
import org.apache.kafka.connect.storage.KafkaOffsetBackingStore;
import org.apache.kafka.connect.storage.KafkaStatusBackingStore;
import org.apache.kafka.connect.util.ConnectUtils;
import org.apache.kafka.connect.util.FutureCallback;
import org.apache.kafka.connect.util.SharedTopicAdmin;

/**
 * A Kafka Connect distributed worker (connect-runtime 4.3.0): its herder, worker, group membership and the
 * Kafka-backed config, offset and status stores, assembled as `ConnectDistributed` assembles them but
 * without the REST server, whose Jetty 12 security jar is not among the jars this suite can get. Connectors
 * are created through the herder, as the REST resource does.
 */
final class ConnectScenarios {
    private ConnectScenarios() {}

    /** How long a run may wait for its connectors to move the input through. */
    private static final long DEADLINE_MS = 60_000;

    /**
     * Runs one worker of group `group` (internal topics `<group>-configs`, `-offsets`, `-status`) until
     * the file `output` holds `lines` lines and every connector and task is RUNNING, then stops it. With
     * `create`, it first creates `src` (FileStreamSource of `input` into topic `<group>-data`) and `sink`
     * (FileStreamSink of that topic into `output`); without, the worker finds them in the config topic.
     * `exactly_once` is the worker's `exactly.once.source.support` (default `disabled`).
     * Result: {connectors: [names], states: {name: [connector state, task states...]}, output_lines}.
     */
    @Scenario.Named("connect-worker")
    private static JsonNode connectWorker(Ctx ctx) throws Exception {
        String group = ctx.args.str("group");
        Path output = Path.of(ctx.args.str("output"));
        Map<String, String> props = workerProps(ctx.args.str("bootstrap"), group);
        props.put("exactly.once.source.support", ctx.args.str("exactly_once", "disabled"));
        DistributedHerder herder = herder(props);
        herder.start();
        try {
            if (ctx.args.bool("create", false)) {
                create(herder, "src", Map.of(
                        "connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector",
                        "file", ctx.args.str("input"), "topic", group + "-data"));
                create(herder, "sink", Map.of(
                        "connector.class", "org.apache.kafka.connect.file.FileStreamSinkConnector",
                        "file", output.toString(), "topics", group + "-data"));
            }
            int lines = ctx.args.integer("lines");
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (!(lineCount(output) >= lines && allRunning(herder)) && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            ObjectNode out = Json.obj();
            FutureCallback<java.util.Collection<String>> names = new FutureCallback<>();
            herder.connectors(names);
            List<String> connectors = new ArrayList<>(names.get(30, TimeUnit.SECONDS));
            connectors.sort(null);
            connectors.forEach(out.putArray("connectors")::add);
            ObjectNode states = out.putObject("states");
            for (String name : connectors) {
                ConnectorStateInfo info = herder.connectorStatus(name);
                var each = states.putArray(name);
                each.add(info.connector().state());
                info.tasks().forEach(t -> each.add(t.state()));
            }
            out.put("output_lines", lineCount(output));
            return out;
        } finally {
            herder.stop();
        }
    }

    private static Map<String, String> workerProps(String bootstrap, String group) {
        Map<String, String> props = new HashMap<>();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        props.put("config.storage.topic", group + "-configs");
        props.put("offset.storage.topic", group + "-offsets");
        props.put("status.storage.topic", group + "-status");
        // -1: the broker's default (KIP-464), what README.md advises on one broker.
        for (String store : List.of("config", "offset", "status")) {
            props.put(store + ".storage.replication.factor", "-1");
        }
        props.put("offset.flush.interval.ms", "500");
        props.put("plugin.discovery", "service_load");
        return props;
    }

    /** What `ConnectDistributed.createHerder` builds, with no REST server or client. */
    private static DistributedHerder herder(Map<String, String> props) {
        DistributedConfig config = new DistributedConfig(props);
        Plugins plugins = new Plugins(props);
        String clusterId = config.kafkaClusterId();
        String clientIdBase = ConnectUtils.clientIdBase(config);
        Map<String, Object> adminProps = new HashMap<>(config.originals());
        adminProps.put("client.id", clientIdBase + "shared-admin");
        SharedTopicAdmin admin = new SharedTopicAdmin(adminProps);
        ConnectorClientConfigOverridePolicy policy = new AllConnectorClientConfigOverridePolicy();
        Converter offsetConverter = plugins.newInternalConverter(true, JsonConverter.class.getName(),
                Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"));
        KafkaOffsetBackingStore offsets = new KafkaOffsetBackingStore(admin, () -> clientIdBase, offsetConverter);
        offsets.configure(config);
        Worker worker = new Worker("mk-interop-" + props.get("group.id"), Time.SYSTEM, plugins, config, offsets, policy);
        Converter internal = worker.getInternalValueConverter();
        KafkaStatusBackingStore status = new KafkaStatusBackingStore(Time.SYSTEM, internal, admin, clientIdBase);
        status.configure(config);
        KafkaConfigBackingStore configs = new KafkaConfigBackingStore(internal, config, worker.configTransformer(),
                admin, clientIdBase);
        return new DistributedHerder(config, Time.SYSTEM, worker, clusterId, status, configs, "http://127.0.0.1:0/",
                null, policy, List.of(), admin);
    }

    private static void create(DistributedHerder herder, String name, Map<String, String> config) throws Exception {
        Map<String, String> withName = new HashMap<>(config);
        withName.put("name", name);
        withName.put("tasks.max", "1");
        FutureCallback<Object> done = new FutureCallback<>();
        herder.putConnectorConfig(name, withName, false, done::onCompletion);
        done.get(30, TimeUnit.SECONDS);
    }

    private static boolean allRunning(DistributedHerder herder) {
        for (String name : List.of("src", "sink")) {
            ConnectorStateInfo info;
            try {
                info = herder.connectorStatus(name);
            } catch (RuntimeException notYetKnown) {
                return false;
            }
            if (!info.connector().state().equals("RUNNING") || info.tasks().isEmpty()
                    || !info.tasks().stream().allMatch(t -> t.state().equals("RUNNING"))) {
                return false;
            }
        }
        return true;
    }

    private static int lineCount(Path file) throws Exception {
        return Files.exists(file) ? Files.readAllLines(file).size() : 0;
    }
}
