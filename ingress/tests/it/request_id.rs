use uuid::Uuid;

use crate::support::{StackUrls, admin, client, stack};

async fn echoed(
    path: &str,
    sent: Option<&str>,
    token: Option<&str>,
) -> (u16, String, serde_json::Value) {
    let mut request = client().get(stack().api(path));
    if let Some(id) = sent {
        request = request.header("x-request-id", id);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let header = response.headers()["x-request-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let body = response.json().await.unwrap_or(serde_json::Value::Null);
    (status, header, body)
}

#[tokio::test]
async fn an_acceptable_request_id_is_kept_on_every_status() {
    let token = admin(Uuid::new_v4());
    let id = "trace-abc_123.XYZ";
    for (path, token, status) in [
        ("/app-invocations", Some(token.as_str()), 200),
        ("/nowhere", None, 404),
        ("/app-invocations", None, 401),
        ("/app-invocations?limit=0", Some(token.as_str()), 400),
        ("/health", None, 200),
    ] {
        let (got, header, body) = echoed(path, Some(id), token).await;
        assert_eq!(got, status, "{path}");
        assert_eq!(header, id, "{path}");
        if status >= 400 {
            assert_eq!(body["error"]["requestId"], id, "{path}");
        }
    }
}

#[tokio::test]
async fn an_unacceptable_request_id_is_replaced_by_a_uuid() {
    let too_long = "a".repeat(129);
    for sent in ["has space", "semi;colon", "slash/ed", too_long.as_str(), ""] {
        let (_, header, body) = echoed("/nowhere", Some(sent), None).await;
        assert!(Uuid::parse_str(&header).is_ok(), "{sent:?} → {header}");
        assert_eq!(body["error"]["requestId"], header.as_str());
    }
    let (_, header, _) = echoed("/nowhere", None, None).await;
    assert!(Uuid::parse_str(&header).is_ok());
    let longest = "b".repeat(128);
    let (_, header, _) = echoed("/nowhere", Some(&longest), None).await;
    assert_eq!(header, longest);
}
