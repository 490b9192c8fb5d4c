package dev.stoatflow.peers;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * CreateTopics BOOTSTRAP PARTITIONS TOPIC...: creates the topics (replication factor 1) in one
 * JVM and one request; kafka_topic_create starts a JVM per topic (~3 s each).
 */
public final class CreateTopics {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CreateTopics BOOTSTRAP PARTITIONS TOPIC...");
            System.exit(2);
        }
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        int partitions = Integer.parseInt(args[1]);
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            topics.add(new NewTopic(args[i], partitions, (short) 1));
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]))) {
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
        }
    }
}
