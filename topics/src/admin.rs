//! Creates the catalogue's topics when absent, at start-up of every service that uses them.

use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::util::Timeout;

use crate::{Error, Topic};

const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Creates each topic of `topics` that the broker does not have. Existing topics are left as
/// they are: a partition count other than the catalogue's is logged, not changed (Kafka cannot
/// take partitions away, and adding some moves keys to other partitions).
pub async fn ensure_topics(brokers: &str, topics: &[Topic]) -> Result<(), Error> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()?;
    let existing = existing_topics(&admin)?;
    for topic in topics {
        if let Some((_, partitions)) = existing.iter().find(|(name, _)| name == topic.name)
            && *partitions != topic.partitions
        {
            tracing::warn!(
                topic = topic.name,
                partitions,
                catalogue = topic.partitions,
                "the topic's partition count differs from the catalogue's; kept as it is"
            );
        }
    }
    let missing: Vec<NewTopic<'_>> = topics
        .iter()
        .filter(|t| !existing.iter().any(|(name, _)| name == t.name))
        .map(|t| NewTopic::new(t.name, t.partitions, TopicReplication::Fixed(1)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let options = AdminOptions::new().operation_timeout(Some(Timeout::After(ADMIN_TIMEOUT)));
    for result in admin.create_topics(missing.iter(), &options).await? {
        match result {
            Ok(name) => tracing::info!(topic = %name, "topic created"),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((topic, code)) => {
                return Err(Error::Topic {
                    topic,
                    message: code.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The broker's topics with their partition counts. Runs at start-up only, so the short
/// blocking metadata call is acceptable here.
fn existing_topics(admin: &AdminClient<DefaultClientContext>) -> Result<Vec<(String, i32)>, Error> {
    let metadata = admin
        .inner()
        .fetch_metadata(None, Timeout::After(ADMIN_TIMEOUT))?;
    Ok(metadata
        .topics()
        .iter()
        // A topic the broker could not describe says nothing about its partitions.
        .filter(|t| t.error().is_none())
        .map(|t| (t.name().to_owned(), t.partitions().len() as i32))
        .collect())
}
