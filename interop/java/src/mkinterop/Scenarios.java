package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Every scenario the driver knows, by name (what pytest passes). */
final class Scenarios {
    /** The classes whose {@link Scenario.Named} methods are scenarios. */
    private static final List<Class<?>> HOMES = List.of(ClientScenarios.class, AdminScenarios.class,
            GroupAdminScenarios.class, PendingAdminScenarios.class, ShareAdminScenarios.class,
            SurfaceScenarios.class, TxnScenarios.class, GroupMember.class, ShareMember.class, EosProcessor.class,
            ConnectScenarios.class);

    private Scenarios() {}

    static Map<String, Scenario> all() {
        Map<String, Scenario> all = new TreeMap<>();
        for (Class<?> home : HOMES) {
            for (Method method : home.getDeclaredMethods()) {
                Scenario.Named named = method.getAnnotation(Scenario.Named.class);
                if (named != null) {
                    add(all, named.value(), scenario(method));
                }
            }
        }
        TxnScenarios.steps().forEach((name, scenario) -> add(all, name, scenario));
        return all;
    }

    private static void add(Map<String, Scenario> all, String name, Scenario scenario) {
        if (all.put(name, scenario) != null) {
            throw new IllegalStateException("two scenarios are called `" + name + "`");
        }
    }

    /** A named method as a Scenario; what it throws is thrown as it is, not wrapped by the reflective call. */
    private static Scenario scenario(Method method) {
        boolean shaped = Modifier.isStatic(method.getModifiers()) && method.getReturnType() == JsonNode.class
                && Arrays.equals(method.getParameterTypes(), new Class<?>[] {Ctx.class});
        if (!shaped) {
            throw new IllegalStateException("scenario method " + method + " is not `static JsonNode name(Ctx)`");
        }
        method.setAccessible(true);
        return ctx -> {
            try {
                return (JsonNode) method.invoke(null, ctx);
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof Exception cause) {
                    throw cause;
                }
                if (e.getCause() instanceof Error cause) {
                    throw cause;
                }
                throw e;
            }
        };
    }
}
