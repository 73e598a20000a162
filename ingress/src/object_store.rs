//! The S3-compatible object store holding app modules and documents, each named by its sha256
//! (a document's under its tenant too).

use aws_sdk_s3::Client;
use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use schema::module::Sha256;
use service::http::Body;
use uuid::Uuid;

use crate::config::StorageConfig;

/// A bucket of the object store.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    client: Client,
    bucket: String,
}

/// Object store failures, as the routes need to tell them apart.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("object not found")]
    NotFound,
    #[error("object store unavailable: {0}")]
    Unavailable(String),
}

/// An object being read.
#[derive(Debug)]
pub struct Object {
    pub length: Option<i64>,
    pub body: ByteStream,
}

impl ObjectStore {
    pub fn new(config: &StorageConfig) -> Self {
        Self {
            client: config.client(),
            bucket: config.bucket.clone(),
        }
    }

    /// The key of a module by its sha256.
    pub fn module_key(sha256: &Sha256) -> String {
        format!("modules/{sha256}.wasm")
    }

    /// The key of a tenant's document bytes by their sha256: the same bytes added twice are
    /// stored once per tenant, and no tenant's object is another's.
    pub fn document_key(tenant: Uuid, sha256: &Sha256) -> String {
        format!("documents/{tenant}/{sha256}")
    }

    /// Readiness: the bucket answers.
    pub async fn probe(&self) -> Result<(), StoreError> {
        self.client
            .head_bucket()
            .bucket(&self.bucket)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| StoreError::Unavailable(describe(&e)))
    }

    /// Stores an object (overwriting one of the same key).
    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| StoreError::Unavailable(describe(&e)))
    }

    /// Opens an object for streaming.
    pub async fn get(&self, key: &str) -> Result<Object, StoreError> {
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(output) => Ok(Object {
                length: output.content_length,
                body: output.body,
            }),
            Err(SdkError::ServiceError(e)) if e.err().is_no_such_key() => Err(StoreError::NotFound),
            Err(e) => Err(StoreError::Unavailable(describe(&e))),
        }
    }
}

impl Object {
    /// The object's bytes as a response body, streamed as the store sends them.
    pub(crate) fn streamed(self) -> Body {
        use http_body_util::{BodyExt, StreamBody};
        let stream = futures::stream::unfold(self.body, |mut body| async move {
            let chunk = body.next().await?;
            Some((
                chunk
                    .map(hyper::body::Frame::data)
                    .map_err(|e| std::io::Error::other(e.to_string())),
                body,
            ))
        });
        BodyExt::boxed(StreamBody::new(stream))
    }
}

fn describe<E: std::fmt::Debug, R: std::fmt::Debug>(error: &SdkError<E, R>) -> String {
    match error {
        SdkError::ServiceError(e) => format!("{:?}", e.err()),
        other => format!("{other:?}").chars().take(300).collect(),
    }
}
