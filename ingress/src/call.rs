//! One API request on its way to its handler: the caller, authenticated and allowed by the
//! route's row (`routes::API`), the path's parameters and the request itself. A handler takes
//! this one value and asks it for what it reads.

use http::request::Parts;
use hyper::body::Incoming;
use serde::de::DeserializeOwned;

use crate::auth::Principal;
use crate::body;
use crate::commands::Origin;
use crate::error::Error;
use crate::state::State;

pub(crate) struct Call<'a> {
    pub(crate) state: &'a State,
    pub(crate) principal: &'a Principal,
    pub(crate) request_id: &'a str,
    params: &'a [(&'a str, String)],
    pub(crate) parts: Parts,
    pub(crate) body: Incoming,
}

impl<'a> Call<'a> {
    pub(crate) fn new(
        (state, principal, request_id): (&'a State, &'a Principal, &'a str),
        params: &'a [(&'a str, String)],
        (parts, body): (Parts, Incoming),
    ) -> Self {
        Self {
            state,
            principal,
            request_id,
            params,
            parts,
            body,
        }
    }

    /// Who sends the command a handler submits.
    pub(crate) fn origin(&self) -> Origin<'a> {
        Origin {
            caller: self.principal,
            request_id: self.request_id,
        }
    }

    /// A parameter of the route's path (`id` of `/cases/{id}`); the router matched the path,
    /// so a name the pattern holds is always there.
    pub(crate) fn param(&self, name: &str) -> &'a str {
        let params: &'a [(&'a str, String)] = self.params;
        params
            .iter()
            .find(|(key, _)| *key == name)
            .map_or("", |(_, value)| value.as_str())
    }

    /// The query string as sent, undecoded.
    pub(crate) fn query(&self) -> Option<&str> {
        self.parts.uri.query()
    }

    /// The body as the JSON value `T` (SPEC §8's limit and refusals, `body::json`).
    pub(crate) async fn json<T: DeserializeOwned>(self) -> Result<T, Error> {
        body::json(&self.parts.headers, self.body, body::JSON_LIMIT).await
    }
}
