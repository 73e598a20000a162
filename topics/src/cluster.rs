//! Where the log is and how every client of ours reaches it: the bootstrap servers
//! (`KAFKA_BROKERS`), any librdkafka property an operator adds for their cluster (TLS, SASL, …:
//! `KAFKA_CLIENT_*`), and the replication the platform's topics are created with
//! (`KAFKA_TOPIC_REPLICATION_FACTOR`, `KAFKA_TOPIC_MIN_INSYNC_REPLICAS`). The producer, the
//! consumers and the admin client all start from [`Cluster::client_config`], so a property set
//! once reaches every connection.

use rdkafka::ClientConfig;
use service::config::Env;

/// The variables that carry librdkafka properties.
const CLIENT_PROPERTIES: &str = "KAFKA_CLIENT_*";

/// How the platform's topics are replicated when it creates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replication {
    /// Copies of each partition (`replication.factor`).
    pub factor: i16,
    /// Copies that must have a message before it is acknowledged (`min.insync.replicas`; the
    /// producers send with `acks=all`).
    pub min_insync: i16,
}

impl Replication {
    /// A production cluster's: three copies, two of which acknowledge each message, so one
    /// broker can be lost (or restarted) without refusing writes or losing any.
    pub const PRODUCTION: Replication = Replication {
        factor: 3,
        min_insync: 2,
    };

    /// One broker: the development stack's.
    pub const SINGLE: Replication = Replication {
        factor: 1,
        min_insync: 1,
    };
}

/// The cluster every client of a process talks to.
#[derive(Clone, PartialEq, Eq)]
pub struct Cluster {
    brokers: String,
    /// librdkafka properties from the environment, applied before ours.
    properties: Vec<(String, String)>,
    pub replication: Replication,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Properties may hold credentials (sasl.password, ssl.key.password): names only.
        let names: Vec<&str> = self.properties.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Cluster")
            .field("brokers", &self.brokers)
            .field("properties", &names)
            .field("replication", &self.replication)
            .finish()
    }
}

impl Cluster {
    /// `brokers` (comma separated), with librdkafka's defaults otherwise.
    pub fn new(brokers: impl Into<String>, replication: Replication) -> Self {
        Self {
            brokers: brokers.into(),
            properties: Vec::new(),
            replication,
        }
    }

    /// Reads `KAFKA_BROKERS`, the topics' replication and every `KAFKA_CLIENT_*` variable.
    pub fn read(env: &mut Env) -> Self {
        let brokers = env.required("KAFKA_BROKERS");
        let defaults = Replication::PRODUCTION;
        let replication = Replication {
            factor: env.parsed("KAFKA_TOPIC_REPLICATION_FACTOR", defaults.factor),
            min_insync: env.parsed("KAFKA_TOPIC_MIN_INSYNC_REPLICAS", defaults.min_insync),
        };
        if replication.factor < 1 || replication.min_insync < 1 {
            env.problem(
                "KAFKA_TOPIC_REPLICATION_FACTOR and KAFKA_TOPIC_MIN_INSYNC_REPLICAS: at least 1",
            );
        } else if replication.min_insync > replication.factor {
            env.problem(format!(
                "KAFKA_TOPIC_MIN_INSYNC_REPLICAS ({}) above KAFKA_TOPIC_REPLICATION_FACTOR ({}): no message could ever be acknowledged",
                replication.min_insync, replication.factor
            ));
        }
        let mut properties = Vec::new();
        for (name, value) in env.prefixed(CLIENT_PROPERTIES) {
            match client_property(&name) {
                Some(property) => properties.push((property, value)),
                None => env.problem(format!("{name}: no librdkafka property after the prefix")),
            }
        }
        Self {
            brokers,
            properties,
            replication,
        }
    }

    /// The bootstrap servers.
    pub fn brokers(&self) -> &str {
        &self.brokers
    }

    /// A client configuration for this cluster: the platform's defaults, the operator's
    /// properties over them, then the bootstrap servers and `client.id`. The caller's own
    /// settings, set after, win over the operator's (acknowledgements, idempotence and offset
    /// handling are what the platform's guarantees stand on).
    pub fn client_config(&self, client_id: &str) -> ClientConfig {
        let mut config = ClientConfig::new();
        // A broker that comes back is reconnected to within a second (librdkafka backs off up
        // to 10 s by default), so consumption resumes soon after an outage.
        config.set("reconnect.backoff.max.ms", "1000");
        if crate::client_stats::enabled() {
            let interval = crate::client_stats::INTERVAL_MS.to_string();
            config.set("statistics.interval.ms", interval);
        }
        for (name, value) in &self.properties {
            config.set(name, value);
        }
        config
            .set("bootstrap.servers", &self.brokers)
            .set("client.id", client_id);
        config
    }
}

/// The librdkafka property a `KAFKA_CLIENT_*` variable names, spelled as the apache/kafka image
/// spells properties in variables: after the prefix, lower case, `_` for `.`, `__` for `_` and
/// `___` for `-` (`KAFKA_CLIENT_SASL_MECHANISMS` is `sasl.mechanisms`). `None` when nothing
/// follows the prefix.
fn client_property(variable: &str) -> Option<String> {
    let rest = variable.strip_prefix(CLIENT_PROPERTIES.trim_end_matches('*'))?;
    if rest.is_empty() {
        return None;
    }
    let mut property = String::with_capacity(rest.len());
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '_' {
            property.extend(c.to_lowercase());
            continue;
        }
        let mut run = 1;
        while chars.peek() == Some(&'_') && run < 3 {
            chars.next();
            run += 1;
        }
        property.push(match run {
            1 => '.',
            2 => '_',
            _ => '-',
        });
    }
    Some(property)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_name_librdkafka_properties_as_the_kafka_image_does() {
        let cases = [
            ("KAFKA_CLIENT_SECURITY_PROTOCOL", "security.protocol"),
            ("KAFKA_CLIENT_SASL_MECHANISMS", "sasl.mechanisms"),
            ("KAFKA_CLIENT_SASL_USERNAME", "sasl.username"),
            ("KAFKA_CLIENT_SSL_CA_LOCATION", "ssl.ca.location"),
            (
                "KAFKA_CLIENT_SASL_OAUTHBEARER_CLIENT_ID",
                "sasl.oauthbearer.client.id",
            ),
            ("KAFKA_CLIENT_SOME__NAME", "some_name"),
            ("KAFKA_CLIENT_SOME___NAME", "some-name"),
            ("KAFKA_CLIENT_A____B", "a-.b"),
        ];
        for (variable, property) in cases {
            assert_eq!(
                client_property(variable).as_deref(),
                Some(property),
                "{variable}"
            );
        }
        assert_eq!(client_property("KAFKA_CLIENT_"), None);
        assert_eq!(client_property("KAFKA_BROKERS"), None);
    }

    #[test]
    fn the_environment_configures_every_client_and_the_replication() {
        let mut env = Env::from_pairs([
            ("KAFKA_BROKERS", "b1:9092,b2:9092"),
            ("KAFKA_TOPIC_REPLICATION_FACTOR", "1"),
            ("KAFKA_TOPIC_MIN_INSYNC_REPLICAS", "1"),
            ("KAFKA_CLIENT_SECURITY_PROTOCOL", "SASL_SSL"),
            ("KAFKA_CLIENT_SASL_PASSWORD", "canary-0xC0FFEE"),
            // Ours wins over the operator's.
            ("KAFKA_CLIENT_CLIENT_ID", "theirs"),
        ]);
        let cluster = Cluster::read(&mut env);
        env.finish(()).expect("valid");
        assert_eq!(cluster.replication, Replication::SINGLE);
        let config = cluster.client_config("ours");
        assert_eq!(config.get("bootstrap.servers"), Some("b1:9092,b2:9092"));
        assert_eq!(config.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(config.get("sasl.password"), Some("canary-0xC0FFEE"));
        assert_eq!(config.get("client.id"), Some("ours"));
        assert!(!format!("{cluster:?}").contains("canary"), "{cluster:?}");
    }

    #[test]
    fn production_replication_by_default_and_impossible_settings_refused() {
        let mut env = Env::from_pairs([("KAFKA_BROKERS", "b:9092")]);
        assert_eq!(Cluster::read(&mut env).replication, Replication::PRODUCTION);
        env.finish(()).expect("valid");

        let mut env = Env::from_pairs([
            ("KAFKA_BROKERS", "b:9092"),
            ("KAFKA_TOPIC_REPLICATION_FACTOR", "1"),
        ]);
        let _ = Cluster::read(&mut env);
        let problems = env.finish(()).expect_err("2 of 1 copies").0;
        assert!(problems[0].contains("MIN_INSYNC"), "{problems:?}");

        let mut env = Env::from_pairs([("KAFKA_BROKERS", "b:9092"), ("KAFKA_CLIENT_", "x")]);
        let _ = Cluster::read(&mut env);
        assert!(env.finish(()).is_err(), "a bare prefix names nothing");
    }
}
