package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * One named thing the driver can do with the Java client: it reads its arguments, may emit events while it
 * runs, and returns its result (a JSON value the Python side asserts on). An exception fails the request;
 * the Python side raises it as a JavaFailure with the exception's class and message.
 */
@FunctionalInterface
interface Scenario {
    JsonNode run(Ctx ctx) throws Exception;

    /**
     * Names a scenario (what pytest passes) on the method that runs it: a static method taking a {@link Ctx}
     * and returning a JsonNode, in one of the classes {@link Scenarios} reads.
     */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.METHOD)
    @interface Named {
        String value();
    }
}
