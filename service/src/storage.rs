//! Object storage (`STORAGE_*`, ARCHITECTURE "Storage"): the settings and the S3 client every
//! service that stores objects builds the same way (ingress: modules and documents; pipeline:
//! scheduled audit exports).

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};

use crate::config::Env;

/// Object storage settings.
#[derive(Clone)]
pub struct StorageConfig {
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageConfig")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl StorageConfig {
    /// `STORAGE_ENDPOINT` (none: no object storage), `STORAGE_BUCKET` (`app-modules`),
    /// `STORAGE_REGION` (`us-east-1`), `STORAGE_ACCESS_KEY`, `STORAGE_SECRET_KEY`.
    pub fn read(env: &mut Env) -> Option<Self> {
        let endpoint = env.text("STORAGE_ENDPOINT");
        let bucket = env.text_or("STORAGE_BUCKET", "app-modules");
        let region = env.text_or("STORAGE_REGION", "us-east-1");
        let access_key = env.text("STORAGE_ACCESS_KEY").unwrap_or_default();
        let secret_key = env.text("STORAGE_SECRET_KEY").unwrap_or_default();
        endpoint.map(|endpoint| Self {
            endpoint,
            bucket,
            region,
            access_key,
            secret_key,
        })
    }

    /// An S3 client of the endpoint (path-style addressing, as S3-compatible servers want).
    pub fn client(&self) -> Client {
        let credentials = Credentials::new(
            self.access_key.clone(),
            self.secret_key.clone(),
            None,
            None,
            "config",
        );
        let s3 = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(Region::new(self.region.clone()))
            .credentials_provider(credentials)
            .force_path_style(true)
            .build();
        Client::from_conf(s3)
    }
}
