package dev.stoatflow.peers;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * CreateTopics BOOTSTRAP PARTITIONS [--config NAME=VALUE]... TOPIC...: creates the topics
 * (replication factor 1) in one JVM and one request; kafka_topic_create starts a JVM per topic
 * (~3 s each). Example: --config retention.ms=-1 for topics whose record timestamps (event
 * times) may be older than the broker's retention.
 */
public final class CreateTopics {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CreateTopics BOOTSTRAP PARTITIONS [--config NAME=VALUE]... TOPIC...");
            System.exit(2);
        }
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        int partitions = Integer.parseInt(args[1]);
        Map<String, String> configs = new java.util.HashMap<>();
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("--config")) {
                String[] kv = args[++i].split("=", 2);
                configs.put(kv[0], kv[1]);
                continue;
            }
            topics.add(new NewTopic(args[i], partitions, (short) 1));
        }
        for (NewTopic t : topics) {
            t.configs(configs);
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]))) {
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
        }
    }
}
