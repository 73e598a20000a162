//! A tenant's administrator calling the apps routes: each call answers its status and JSON
//! body, so tests read as the lifecycle they walk.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{StackUrls, admin, client, stack};

/// One tenant and one of its administrators.
pub struct Tenant {
    pub id: Uuid,
    pub token: String,
}

impl Default for Tenant {
    fn default() -> Self {
        Self::new()
    }
}

impl Tenant {
    /// A fresh tenant with an administrator.
    pub fn new() -> Self {
        let id = Uuid::new_v4();
        Self {
            id,
            token: admin(id),
        }
    }

    /// Another administrator of the same tenant.
    pub fn other_admin(&self) -> Self {
        Self {
            id: self.id,
            token: admin(self.id),
        }
    }

    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        call_with(&self.token, method, path, body).await
    }

    pub async fn upload(&self, module: Vec<u8>) -> (u16, Value) {
        let response = client()
            .post(stack().api("/apps/uploads"))
            .bearer_auth(&self.token)
            .header("content-type", "application/wasm")
            .body(module)
            .send()
            .await
            .expect("request");
        answer(response).await
    }

    /// Uploads and publishes a module; answers the published version.
    pub async fn published(&self, module: Vec<u8>) -> Value {
        let (status, version) = self.upload(module).await;
        assert_eq!(status, 201, "{version}");
        let (status, version) = self.publish(&version).await;
        assert_eq!(status, 200, "{version}");
        version
    }

    pub async fn publish(&self, version: &Value) -> (u16, Value) {
        self.call(
            Method::POST,
            &format!("{}/publish", version_path(version)),
            None,
        )
        .await
    }

    pub async fn install(&self, name: &str, body: Value) -> (u16, Value) {
        self.call(Method::PUT, &format!("/apps/{name}/install"), Some(body))
            .await
    }

    pub async fn store_secret(&self, name: &str, secret: &str, value: &str) -> (u16, Value) {
        let path = format!("/apps/{name}/secrets/{secret}");
        self.call(Method::POST, &path, Some(json!({ "value": value })))
            .await
    }

    pub async fn set_approvals(&self, required: bool, four_eyes: bool) {
        let body = json!({ "required": required, "fourEyes": four_eyes });
        let (status, settings) = self
            .call(Method::PUT, "/approval-settings", Some(body))
            .await;
        assert_eq!(status, 200, "{settings}");
    }
}

/// `/apps/:name/versions/:id` of a version answer.
pub fn version_path(version: &Value) -> String {
    format!(
        "/apps/{}/versions/{}",
        version["appName"].as_str().expect("appName"),
        version["id"].as_str().expect("id")
    )
}

pub async fn call_with(
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    call_url(token, method, stack().api(path), body).await
}

/// `call_with` at a whole URL: an API instance of a test's own.
pub async fn call_url(
    token: &str,
    method: Method,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client().request(method, url).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    answer(request.send().await.expect("request")).await
}

/// A response's status and JSON body (`null` when the body is not JSON).
pub async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}
