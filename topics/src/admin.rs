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
/// they are (their partition count is not changed).
pub async fn ensure_topics(brokers: &str, topics: &[Topic]) -> Result<(), Error> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()?;
    let existing = existing_topics(&admin)?;
    let missing: Vec<NewTopic<'_>> = topics
        .iter()
        .filter(|t| !existing.iter().any(|name| name == t.name))
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

/// Runs at start-up only, so the short blocking metadata call is acceptable here.
fn existing_topics(admin: &AdminClient<DefaultClientContext>) -> Result<Vec<String>, Error> {
    let metadata = admin
        .inner()
        .fetch_metadata(None, Timeout::After(ADMIN_TIMEOUT))?;
    Ok(metadata
        .topics()
        .iter()
        .map(|t| t.name().to_owned())
        .collect())
}
