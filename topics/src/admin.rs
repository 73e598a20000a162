//! Creates the catalogue's topics when absent, at start-up of every service that uses them, with
//! the cluster's configured replication (`replication.factor`, and `min.insync.replicas` as the
//! topic's own setting, so `acks=all` means that many copies whatever the brokers' default).

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::util::Timeout;

use crate::client_log::Reporter;
use crate::{Cluster, Error, Topic};

const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Creates each topic of `topics` that the cluster does not have. Existing topics are left as
/// they are: a partition count or replication other than the configured one is logged, not
/// changed (Kafka cannot take partitions away, adding some moves keys to other partitions, and
/// moving replicas is an operator's reassignment).
pub async fn ensure_topics(cluster: &Cluster, topics: &[Topic]) -> Result<(), Error> {
    let admin: AdminClient<Reporter> = cluster
        .client_config("topics-admin")
        .create_with_context(Reporter)?;
    let existing = existing_topics(&admin)?;
    let replication = cluster.replication;
    for topic in topics {
        let Some(found) = existing.iter().find(|t| t.name == topic.name) else {
            continue;
        };
        if found.partitions != topic.partitions {
            tracing::warn!(
                topic = topic.name,
                partitions = found.partitions,
                catalogue = topic.partitions,
                "the topic's partition count differs from the catalogue's; kept as it is"
            );
        }
        if found.replicas != i32::from(replication.factor) {
            tracing::warn!(
                topic = topic.name,
                replicas = found.replicas,
                configured = replication.factor,
                "the topic's replication factor differs from the configured one; kept as it is"
            );
        }
    }
    let min_insync = replication.min_insync.to_string();
    let missing: Vec<NewTopic<'_>> = topics
        .iter()
        .filter(|t| !existing.iter().any(|found| found.name == t.name))
        .map(|t| {
            NewTopic::new(
                t.name,
                t.partitions,
                TopicReplication::Fixed(i32::from(replication.factor)),
            )
            .set("min.insync.replicas", &min_insync)
        })
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

/// A topic the cluster has.
struct Existing {
    name: String,
    partitions: i32,
    /// Replicas of its first partition.
    replicas: i32,
}

/// The cluster's topics with their partition counts and replication. Runs at start-up only, so
/// the short blocking metadata call is acceptable here.
fn existing_topics(admin: &AdminClient<Reporter>) -> Result<Vec<Existing>, Error> {
    let metadata = admin
        .inner()
        .fetch_metadata(None, Timeout::After(ADMIN_TIMEOUT))?;
    Ok(metadata
        .topics()
        .iter()
        // A topic the broker could not describe says nothing about its partitions.
        .filter(|t| t.error().is_none())
        .map(|t| Existing {
            name: t.name().to_owned(),
            partitions: t.partitions().len() as i32,
            replicas: t
                .partitions()
                .first()
                .map_or(0, |p| p.replicas().len() as i32),
        })
        .collect())
}
