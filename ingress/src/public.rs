//! The public listener (`API_PORT`): the path every request takes: route → count against the
//! caller's rate limit → authenticate → authorise → body limit → handler, with the envelope,
//! request id and cache headers on every answer. Its routes by rate-limit class: health and
//! metrics answered before any of that (not counted, not traced, not logged), the document
//! (not counted), vendor webhooks (counted against the client address) and the API's, one row
//! each in `routes::API` (counted against the token's caller).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use service::health::{self, OperationalRoute};
use service::http::observe::{self, Caller as SpanCaller};
use service::http::{Body, Route, Routed, Router, bearer, request_id, response};
use tracing::Instrument;

use crate::auth::Principal;
use crate::auth::claims::Kind;
use crate::body;
use crate::call::Call;
use crate::error::{AuthFailure, Error};
use crate::rate_limit::{Caller, Decision};
use crate::routes::{self, API, Access, Endpoint};
use crate::state::State;

/// Every route of the public listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PublicRoute {
    /// Health and metrics: no token, not counted, not traced.
    Operational(OperationalRoute),
    /// The API's description (OpenAPI 3.1): no token, not counted.
    OpenApi,
    /// The API (a row of `routes::API`): a token, counted against its caller.
    Api(ApiRoute),
    /// Vendor webhooks: no token, counted against the client address.
    Webhook(WebhookRoute),
}

/// The vendor webhook routes (SPEC §4.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WebhookRoute {
    /// `POST /webhooks/apps/:app`: a platform app's.
    Platform,
    /// `POST /webhooks/apps/:app/tenants/:tenantId`: a tenant's own app's.
    Tenant,
}

/// A route of the API proper: its row in `routes::API`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ApiRoute(usize);

impl ApiRoute {
    fn endpoint(self) -> &'static Endpoint {
        &API[self.0]
    }

    /// Who may call the route.
    #[cfg(test)]
    pub(crate) fn access(self) -> Access {
        self.endpoint().access
    }
}

impl Route for PublicRoute {
    fn all() -> Vec<Self> {
        let fixed = [
            PublicRoute::Operational(OperationalRoute::Live),
            PublicRoute::Operational(OperationalRoute::Ready),
            PublicRoute::Operational(OperationalRoute::Metrics),
            PublicRoute::OpenApi,
            PublicRoute::Webhook(WebhookRoute::Platform),
            PublicRoute::Webhook(WebhookRoute::Tenant),
        ];
        let api = (0..API.len()).map(|row| PublicRoute::Api(ApiRoute(row)));
        fixed.into_iter().chain(api).collect()
    }

    fn method(self) -> Method {
        match self {
            PublicRoute::Operational(route) => route.method(),
            PublicRoute::OpenApi => Method::GET,
            PublicRoute::Api(route) => route.endpoint().method.clone(),
            PublicRoute::Webhook(_) => Method::POST,
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            PublicRoute::Operational(route) => route.pattern(),
            PublicRoute::OpenApi => "/openapi.json",
            PublicRoute::Api(route) => route.endpoint().path,
            PublicRoute::Webhook(WebhookRoute::Platform) => "/webhooks/apps/{app}",
            PublicRoute::Webhook(WebhookRoute::Tenant) => "/webhooks/apps/{app}/tenants/{tenantId}",
        }
    }
}

/// The path parameters of a matched route.
type PathParams<'r> = Vec<(&'r str, String)>;

/// Serves one request of the public listener. Never fails: every failure is an envelope.
pub(crate) async fn handle(
    state: State,
    router: Arc<Router<PublicRoute>>,
    peer: IpAddr,
    request: Request<Incoming>,
) -> Response<Body> {
    let request_id = request_id::from_header(request.headers().get(request_id::HEADER));
    let routed = router.route(request.method(), request.uri().path());
    let label = routed.label();
    let (route, params) = match routed {
        Routed::Found(PublicRoute::Operational(route), _) => {
            let answer =
                health::answer(route, &state.listener.readiness, &state.listener.metrics).await;
            let mut answer = answer.unwrap_or_else(|e| response::error(&e, &request_id));
            response::finish(&mut answer, &request_id);
            return answer;
        }
        Routed::Found(PublicRoute::OpenApi, _) => {
            let mut answer = routes::openapi::document();
            response::finish(&mut answer, &request_id);
            return answer;
        }
        Routed::Found(PublicRoute::Webhook(_), params) => {
            let app = params.get("app").unwrap_or_default().to_owned();
            let tenant = params.get("tenantId").map(str::to_owned);
            let route = (label, app.as_str(), tenant.as_deref());
            // On the heap, as every route's future (`authorised`).
            return Box::pin(webhook(&state, route, peer, &request_id, request)).await;
        }
        Routed::Found(PublicRoute::Api(route), params) => {
            let params = params.iter().map(|(k, v)| (k, v.to_owned())).collect();
            (Ok(route), params)
        }
        Routed::MethodNotAllowed { allow, .. } => {
            (Err(Error::MethodNotAllowed { allow }), Vec::new())
        }
        Routed::NotFound => (Err(Error::NotFound), Vec::new()),
    };

    // The token is checked before the span starts, so the span (and every line in it) names
    // the caller from the first line on.
    let authenticated = route.map(|route| (route, authenticate(&state, &request)));
    let principal = match &authenticated {
        Ok((_, Ok(principal))) => Some(principal),
        _ => None,
    };
    let telemetry_id = principal.map(Principal::telemetry_id);
    let caller = principal
        .zip(telemetry_id.as_deref())
        .map(|(principal, id)| SpanCaller {
            tenant: principal.tenant,
            kind: principal.kind.as_str(),
            id,
        });
    let method = request.method().clone();
    let span = observe::request_span(&method, label, &request_id, request.headers(), caller);
    let started = Instant::now();
    let (result, decision) = counted(&state, authenticated, params, peer, &request_id, request)
        .instrument(span.clone())
        .await;
    let mut answer = result.unwrap_or_else(|error| {
        if error.is_server_fault() {
            tracing::error!(parent: &span, %error, "request failed");
        }
        response::error(&error, &request_id)
    });
    if let Some(decision) = decision {
        decision.write_headers(answer.headers_mut());
    }
    response::finish(&mut answer, &request_id);
    observe::finish(&span, &method, label, answer.status(), started.elapsed());
    answer
}

/// A vendor webhook: no token, counted against the client address (SPEC §8 rule 3), traced
/// and logged like every request.
async fn webhook(
    state: &State,
    (label, app, tenant): (&'static str, &str, Option<&str>),
    peer: IpAddr,
    request_id: &str,
    request: Request<Incoming>,
) -> Response<Body> {
    let method = request.method().clone();
    let span = observe::request_span(&method, label, request_id, request.headers(), None);
    let started = Instant::now();
    let client = state.config.trusted_proxies.client(peer, request.headers());
    let decision = state.listener.limiter.check(&Caller::Address(client));
    let received = async {
        if let Some(Decision::Limited {
            retry_after_seconds,
            ..
        }) = decision
        {
            return Err(Error::RateLimited {
                retry_after_seconds,
            });
        }
        let (parts, mut body) = request.into_parts();
        let limit = routes::webhooks::BODY_LIMIT;
        body::refuse_declared_oversize(&parts.headers, &mut body, limit).await?;
        routes::webhooks::receive(state, (app, tenant), &parts, body, request_id).await
    };
    let result = received.instrument(span.clone()).await;
    let mut answer = result.unwrap_or_else(|error| {
        match &error {
            // Shedding load and a vendor's module failing are the vendor's to retry, not ours
            // to page on: the access line counts them.
            Error::Overloaded { .. } => tracing::debug!(parent: &span, "webhook shed"),
            Error::AppWebhookFailed { reason } => {
                tracing::warn!(parent: &span, reason, "the app failed reading a webhook");
            }
            error if error.is_server_fault() => {
                tracing::error!(parent: &span, %error, "webhook failed");
            }
            _ => {}
        }
        response::error(&error, request_id)
    });
    if let Some(decision) = decision {
        decision.write_headers(answer.headers_mut());
    }
    response::finish(&mut answer, request_id);
    observe::finish(&span, &method, label, answer.status(), started.elapsed());
    answer
}

/// A route with its caller's token checked, or why there is no route.
type Authenticated = Result<(ApiRoute, Result<Principal, AuthFailure>), Error>;

/// A request that counts against its caller's rate limit: the token's principal, or the
/// client address when there is no valid token (or no route).
async fn counted(
    state: &State,
    authenticated: Authenticated,
    params: PathParams<'_>,
    peer: IpAddr,
    request_id: &str,
    request: Request<Incoming>,
) -> (Result<Response<Body>, Error>, Option<Decision>) {
    let caller = match &authenticated {
        Ok((_, Ok(principal))) => caller_of(principal),
        _ => Caller::Address(peer),
    };
    let decision = state.listener.limiter.check(&caller);
    if let Some(Decision::Limited {
        retry_after_seconds,
        ..
    }) = decision
    {
        let limited = Error::RateLimited {
            retry_after_seconds,
        };
        return (Err(limited), decision);
    }
    let (route, principal) = match authenticated {
        Ok((route, Ok(principal))) => (route, principal),
        Ok((_, Err(failure))) => {
            tracing::info!(reason = failure.as_str(), "token refused");
            return (Err(Error::Unauthorized(failure)), decision);
        }
        Err(unrouted) => return (Err(unrouted), decision),
    };
    let answer = authorised(state, route, &params, &principal, request_id, request).await;
    (answer, decision)
}

fn authenticate(state: &State, request: &Request<Incoming>) -> Result<Principal, AuthFailure> {
    let token = bearer::token(request.headers()).map_err(AuthFailure::from)?;
    state.listener.verifier.verify(token)
}

/// The caller a principal's requests count against (SPEC §8 rule 3): an applicant's
/// submission (every tab shares it), else the tenant's user.
fn caller_of(principal: &Principal) -> Caller {
    match principal.submission {
        Some(submission) => Caller::Submission(submission),
        None => Caller::User {
            tenant: principal.tenant,
            sub: principal.sub.clone(),
        },
    }
}

async fn authorised(
    state: &State,
    route: ApiRoute,
    params: &PathParams<'_>,
    principal: &Principal,
    request_id: &str,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    let endpoint = route.endpoint();
    match endpoint.access {
        Access::Holds(permission) if !principal.has(permission) => {
            return Err(Error::Forbidden {
                permission: permission.as_str(),
            });
        }
        Access::Applicant if principal.kind != Kind::Applicant => {
            return Err(Error::Forbidden {
                permission: "applicant",
            });
        }
        Access::Staff if principal.kind == Kind::Applicant => {
            return Err(Error::Forbidden {
                permission: "staff",
            });
        }
        _ => {}
    }
    if endpoint.needs_apps() {
        state.apps.ready()?;
    }
    let (parts, mut body) = request.into_parts();
    body::refuse_declared_oversize(&parts.headers, &mut body, endpoint.body_limit).await?;
    let call = Call::new((state, principal, request_id), params, (parts, body));
    (endpoint.handler)(call).await
}
