package mkinterop;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One named thing the driver can do with the Java client: it reads its arguments, may emit events while it
 * runs, and returns its result (a JSON value the Python side asserts on). An exception fails the request;
 * the Python side raises it as a JavaFailure with the exception's class and message.
 */
@FunctionalInterface
interface Scenario {
    JsonNode run(Ctx ctx) throws Exception;
}
