//! `GET /openapi.json`: the API's OpenAPI 3.1 document (`schema/openapi.json`), as shipped.
//! A test holds it to the route table: its paths, methods and permissions are exactly the
//! routes served.

use bytes::Bytes;
use http::StatusCode;
use service::http::{Body, response};

pub(crate) fn document() -> http::Response<Body> {
    response::json_bytes(
        StatusCode::OK,
        Bytes::from_static(schema::OPENAPI.as_bytes()),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use service::http::Route;

    use crate::public::PublicRoute;
    use crate::routes::Access;

    /// The document and the table agree on every route and on who may call it
    /// (`x-permission`).
    #[test]
    fn the_document_describes_exactly_the_public_routes() {
        let document: serde_json::Value =
            serde_json::from_str(schema::OPENAPI).expect("openapi.json is JSON");
        assert_eq!(document["openapi"], "3.1.0");
        assert_eq!(document["info"]["version"], "0.0.0", "SPEC §9");
        let mut described = BTreeSet::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("path item") {
                let permission = operation["x-permission"].as_str().map(str::to_owned);
                described.insert((method.to_uppercase(), path.clone(), permission));
            }
        }
        let served: BTreeSet<(String, String, Option<String>)> = PublicRoute::all()
            .into_iter()
            .map(|route| {
                let permission = match route {
                    PublicRoute::Api(api) => match api.access() {
                        Access::Holds(permission) => Some(permission.as_str().to_owned()),
                        Access::Applicant => Some("applicant (the token's submission)".to_owned()),
                        Access::Staff => None,
                    },
                    _ => None,
                };
                (
                    route.method().to_string(),
                    route.pattern().to_owned(),
                    permission,
                )
            })
            .collect();
        assert_eq!(described, served);
    }

    /// Every operation that reads a parameter or a body answers 400 `validation_error` when
    /// one is malformed: the document says so for each (schemathesis holds the server to it).
    #[test]
    fn every_operation_that_reads_input_documents_its_400() {
        let document: serde_json::Value =
            serde_json::from_str(schema::OPENAPI).expect("openapi.json is JSON");
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("path item") {
                let reads_input = operation.get("requestBody").is_some()
                    || operation["parameters"]
                        .as_array()
                        .is_some_and(|parameters| !parameters.is_empty());
                if reads_input {
                    assert!(
                        operation["responses"].get("400").is_some(),
                        "{method} {path} documents no 400"
                    );
                }
            }
        }
    }

    #[test]
    fn every_reference_resolves() {
        let document: serde_json::Value =
            serde_json::from_str(schema::OPENAPI).expect("openapi.json is JSON");
        let text = schema::OPENAPI;
        let references = text.split("\"$ref\": \"#/").skip(1);
        let links = text.split("\"operationRef\": \"#/").skip(1);
        for piece in references.chain(links) {
            let pointer = format!("/{}", &piece[..piece.find('"').expect("closing quote")]);
            assert!(
                document.pointer(&pointer).is_some(),
                "{pointer} does not resolve"
            );
        }
    }
}
