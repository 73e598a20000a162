//! The public listener (`API_PORT`): its routes, and the path every request takes: route →
//! count against the caller's rate limit → authenticate → authorise → body limit → handler,
//! with the envelope, request id and cache headers on every answer. Health and metrics are
//! answered before any of that: not counted, not traced, not logged.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use service::health::{self, OperationalRoute};
use service::http::observe::{self, Caller as SpanCaller};
use service::http::{Body, Route, Routed, Router, bearer, request_id, response};
use tracing::Instrument;

use crate::auth::{Permission, Principal};
use crate::body;
use crate::error::{AuthFailure, Error};
use crate::rate_limit::{Caller, Decision};
use crate::routes;
use crate::state::State;

/// Every route of the public listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PublicRoute {
    /// Health and metrics: no token, not counted, not traced.
    Operational(OperationalRoute),
    /// The API: a token, counted against its caller.
    Api(ApiRoute),
}

/// The routes of the API proper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiRoute {
    ListInvocations,
    GetInvocation,
}

impl Route for PublicRoute {
    const ALL: &'static [Self] = &[
        PublicRoute::Operational(OperationalRoute::Live),
        PublicRoute::Operational(OperationalRoute::Ready),
        PublicRoute::Operational(OperationalRoute::Metrics),
        PublicRoute::Api(ApiRoute::ListInvocations),
        PublicRoute::Api(ApiRoute::GetInvocation),
    ];

    fn method(self) -> Method {
        match self {
            PublicRoute::Operational(route) => route.method(),
            PublicRoute::Api(ApiRoute::ListInvocations | ApiRoute::GetInvocation) => Method::GET,
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            PublicRoute::Operational(route) => route.pattern(),
            PublicRoute::Api(ApiRoute::ListInvocations) => "/app-invocations",
            PublicRoute::Api(ApiRoute::GetInvocation) => "/app-invocations/{id}",
        }
    }
}

impl ApiRoute {
    /// The permission a caller's token must hold.
    fn permission(self) -> Permission {
        match self {
            ApiRoute::ListInvocations | ApiRoute::GetInvocation => Permission::AppsRead,
        }
    }

    fn body_limit(self) -> usize {
        body::JSON_LIMIT
    }
}

/// The path parameters of a matched route.
#[derive(Debug, Default)]
struct PathParams<'r>(Vec<(&'r str, String)>);

impl PathParams<'_> {
    fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

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
            let answer = health::answer(route, &state.readiness, &state.metrics).await;
            let mut answer = answer.unwrap_or_else(|e| response::error(&e, &request_id));
            response::finish(&mut answer, &request_id);
            return answer;
        }
        Routed::Found(PublicRoute::Api(route), params) => {
            let params = params.iter().map(|(k, v)| (k, v.to_owned())).collect();
            (Ok(route), PathParams(params))
        }
        Routed::MethodNotAllowed { allow, .. } => (
            Err(Error::MethodNotAllowed { allow }),
            PathParams::default(),
        ),
        Routed::NotFound => (Err(Error::NotFound), PathParams::default()),
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
    let (result, decision) = counted(&state, authenticated, params, peer, request)
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

/// A route with its caller's token checked, or why there is no route.
type Authenticated = Result<(ApiRoute, Result<Principal, AuthFailure>), Error>;

/// A request that counts against its caller's rate limit: the token's principal, or the
/// client address when there is no valid token (or no route).
async fn counted(
    state: &State,
    authenticated: Authenticated,
    params: PathParams<'_>,
    peer: IpAddr,
    request: Request<Incoming>,
) -> (Result<Response<Body>, Error>, Option<Decision>) {
    let caller = match &authenticated {
        Ok((_, Ok(principal))) => caller_of(principal),
        _ => Caller::Address(peer),
    };
    let decision = state.limiter.check(&caller);
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
    let answer = authorised(state, route, &params, principal, request).await;
    (answer, decision)
}

fn authenticate(state: &State, request: &Request<Incoming>) -> Result<Principal, AuthFailure> {
    let token = bearer::token(request.headers()).map_err(AuthFailure::from)?;
    state.verifier.verify(token)
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
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    let permission = route.permission();
    if !principal.has(permission) {
        return Err(Error::Forbidden {
            permission: permission.as_str(),
        });
    }
    let (parts, mut body) = request.into_parts();
    body::refuse_declared_oversize(&parts.headers, &mut body, route.body_limit()).await?;
    match route {
        ApiRoute::ListInvocations => {
            routes::app_invocations::list(state, &principal, parts.uri.query()).await
        }
        ApiRoute::GetInvocation => {
            routes::app_invocations::get(state, &principal, params.get("id")).await
        }
    }
}
