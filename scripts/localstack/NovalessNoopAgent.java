// A Java agent that does nothing, for LocalStack's DynamoDB Local. LocalStack starts DynamoDB Local
// with -javaagent:ddb-local-loader-0.1.jar, its own patch (more than 20 indexes on a table), which
// it downloads from GitHub; this machine reaches no GitHub, and novaless's tables have at most a
// few indexes, so install.sh builds this in its place (docs/localstack.md).
public final class NovalessNoopAgent {
  public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
}
