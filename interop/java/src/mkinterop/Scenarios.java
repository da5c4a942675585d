package mkinterop;

import java.util.Map;
import java.util.TreeMap;

/** Every scenario the driver knows, by name (what pytest passes). */
final class Scenarios {
    private Scenarios() {}

    static Map<String, Scenario> all() {
        Map<String, Scenario> all = new TreeMap<>();
        ClientScenarios.register(all);
        AdminScenarios.register(all);
        TxnScenarios.register(all);
        ShareAdminScenarios.register(all);
        SurfaceScenarios.register(all);
        all.put("member", GroupMember::run);
        all.put("share-member", ShareMember::run);
        all.put("eos-processor", EosProcessor::run);
        return all;
    }
}
