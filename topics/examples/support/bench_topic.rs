//! What the broker and consumer benchmarks share: the cluster as the services read it, and a
//! fresh topic for one run.

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use topics::Cluster;

/// The cluster at `brokers`, with the rest of its settings (`KAFKA_CLIENT_*`, the topics'
/// replication) from the environment, as the services read them (`source .stack/env`).
pub(crate) fn cluster(brokers: &str) -> Result<Cluster, Box<dyn std::error::Error>> {
    let vars = std::env::vars().chain([("KAFKA_BROKERS".to_owned(), brokers.to_owned())]);
    let mut env = service::config::Env::from_pairs(vars);
    let cluster = Cluster::read(&mut env);
    Ok(env.finish(cluster)?)
}

/// Creates `<prefix>-<uuid>` with 4 partitions (as the platform's installs and runs); answers
/// the admin client that deletes it afterwards, and its name.
pub(crate) async fn fresh(
    cluster: &Cluster,
    prefix: &str,
) -> Result<(AdminClient<DefaultClientContext>, String), Box<dyn std::error::Error>> {
    let topic = format!("{prefix}-{}", uuid::Uuid::new_v4().simple());
    let admin: AdminClient<DefaultClientContext> = cluster.client_config("bench-admin").create()?;
    let min_insync = cluster.replication.min_insync.to_string();
    let replicas = TopicReplication::Fixed(i32::from(cluster.replication.factor));
    admin
        .create_topics(
            &[NewTopic::new(&topic, 4, replicas).set("min.insync.replicas", &min_insync)],
            &AdminOptions::new(),
        )
        .await?;
    Ok((admin, topic))
}
