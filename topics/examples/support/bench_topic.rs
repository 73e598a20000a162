//! A fresh topic for one benchmark run, shared by the broker and consumer benchmarks.

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;

/// Creates `<prefix>-<uuid>` with 4 partitions (the platform's awaited topics'); answers the
/// admin client that deletes it afterwards, and its name.
pub(crate) async fn fresh(
    brokers: &str,
    prefix: &str,
) -> Result<(AdminClient<DefaultClientContext>, String), Box<dyn std::error::Error>> {
    let topic = format!("{prefix}-{}", uuid::Uuid::new_v4().simple());
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()?;
    admin
        .create_topics(
            &[NewTopic::new(&topic, 4, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await?;
    Ok((admin, topic))
}
