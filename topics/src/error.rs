use rdkafka::error::KafkaError;

/// Errors of the wire layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kafka: {0}")]
    Kafka(#[from] KafkaError),
    #[error("envelope does not decode: {0}")]
    Decode(#[source] serde_json::Error),
    #[error("envelope does not encode: {0}")]
    Encode(#[source] serde_json::Error),
    #[error("topic {topic}: {message}")]
    Topic { topic: String, message: String },
    #[error("broker did not answer within {0:?}")]
    Timeout(std::time::Duration),
    #[error("handler failed fatally: {0}")]
    Fatal(String),
}
