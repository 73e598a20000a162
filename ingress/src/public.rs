//! The public request path: route → count (rate limit) → authenticate → authorise → size
//! check → handler, with the envelope, request id and cache headers on every answer.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use http::{Request, Response};
use hyper::body::Incoming;
use tracing::Instrument;

use crate::auth::Principal;
use crate::auth::claims::Kind;
use crate::auth::verifier::bearer_token;
use crate::body;
use crate::error::Error;
use crate::health;
use crate::observe;
use crate::rate_limit::{Caller, Decision};
use crate::response::{self, Body};
use crate::router::{Access, Lookup, Params, RouteId, RouteSpec, Router};
use crate::routes;
use crate::state::State;
use telemetry::request_id;

/// Serves one request of the public listener. Never fails: every error is an envelope.
pub async fn handle(
    state: State,
    router: Arc<Router>,
    peer: IpAddr,
    request: Request<Incoming>,
) -> Response<Body> {
    let request_id = request_id::from_header(request.headers().get(request_id::HEADER));
    let lookup = router.lookup(request.method(), request.uri().path());
    if let Lookup::Found(spec, _) = &lookup
        && spec.access == Access::Operational
    {
        let mut answer = operational(&state, spec.id)
            .await
            .unwrap_or_else(|e| response::error(&e, &request_id));
        response::finish(&mut answer, &request_id);
        return answer;
    }

    let route = match &lookup {
        Lookup::Found(spec, _) => spec.pattern,
        Lookup::MethodNotAllowed { pattern, .. } => pattern,
        Lookup::NotFound => "unmatched",
    };
    let method = request.method().clone();
    let span = observe::request_span(&method, route, &request_id, request.headers());
    let started = Instant::now();
    let (result, decision) = counted(&state, lookup, peer, request, &span)
        .instrument(span.clone())
        .await;
    let mut answer = match result {
        Ok(answer) => answer,
        Err(error) => {
            if error.is_server_fault() {
                let _entered = span.enter();
                tracing::error!(%error, "request failed");
            }
            response::error(&error, &request_id)
        }
    };
    if let Some(decision) = decision {
        decision.write_headers(answer.headers_mut());
    }
    response::finish(&mut answer, &request_id);
    observe::finish_request(&span, &method, route, answer.status(), started.elapsed());
    answer
}

/// Health and metrics: not counted, not traced.
async fn operational(state: &State, id: RouteId) -> Result<Response<Body>, Error> {
    match id {
        RouteId::Health => Ok(health::live()),
        RouteId::Ready => health::ready(state).await,
        RouteId::Metrics => Ok(response::text(
            state.metrics.render(),
            "text/plain; version=0.0.4; charset=utf-8",
        )),
        RouteId::ListInvocations | RouteId::GetInvocation | RouteId::FetchModule => {
            Err(Error::NotFound)
        }
    }
}

/// A request that counts against its caller's rate limit.
async fn counted(
    state: &State,
    lookup: Lookup<'_>,
    peer: IpAddr,
    request: Request<Incoming>,
    span: &tracing::Span,
) -> (Result<Response<Body>, Error>, Option<Decision>) {
    let (spec, params, unrouted) = match lookup {
        Lookup::Found(spec, params) => (Some(spec), params, Error::NotFound),
        Lookup::MethodNotAllowed { allow, .. } => {
            (None, Params::default(), Error::MethodNotAllowed { allow })
        }
        Lookup::NotFound => (None, Params::default(), Error::NotFound),
    };
    let authenticated = match spec.map(|s| s.access) {
        Some(Access::Token(_)) => Some(
            bearer_token(request.headers().get(http::header::AUTHORIZATION))
                .and_then(|token| state.verifier.verify(token)),
        ),
        _ => None,
    };
    let caller = match &authenticated {
        Some(Ok(principal)) => caller_of(principal),
        _ => Caller::Address(peer),
    };
    let decision = state.limiter.check(&caller);
    if let Some(Decision::Limited {
        retry_after_seconds,
        ..
    }) = decision
    {
        return (
            Err(Error::RateLimited {
                retry_after_seconds,
            }),
            decision,
        );
    }
    let Some(spec) = spec else {
        return (Err(unrouted), decision);
    };
    let principal = match authenticated {
        Some(Ok(principal)) => {
            observe::record_principal(span, &principal);
            Some(principal)
        }
        Some(Err(failure)) => {
            tracing::info!(reason = failure.as_str(), "token refused");
            return (Err(Error::Unauthorized(failure)), decision);
        }
        None => None,
    };
    (
        authorised(state, spec, params, principal, request).await,
        decision,
    )
}

/// The caller a principal's requests count against (SPEC §8 rule 3).
fn caller_of(principal: &Principal) -> Caller {
    match (principal.kind, principal.submission) {
        (Kind::Applicant, Some(submission)) => Caller::Submission(submission),
        _ => Caller::User {
            tenant: principal.tenant,
            sub: principal.sub.clone(),
        },
    }
}

async fn authorised(
    state: &State,
    spec: &RouteSpec,
    params: Params,
    principal: Option<Principal>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    if let (Access::Token(permission), Some(principal)) = (spec.access, &principal)
        && !principal.has(permission)
    {
        return Err(Error::Forbidden {
            permission: permission.as_str(),
        });
    }
    let (parts, mut body) = request.into_parts();
    body::refuse_declared_oversize(&parts.headers, &mut body, spec.body_limit).await?;
    let request = Request::from_parts(parts, body);
    let principal = principal.ok_or(Error::Unauthorized(crate::error::AuthFailure::Missing));
    match spec.id {
        RouteId::ListInvocations => {
            routes::app_invocations::list(state, &principal?, request.uri().query()).await
        }
        RouteId::GetInvocation => {
            let id = params.get("id").unwrap_or_default();
            routes::app_invocations::get(state, &principal?, id).await
        }
        RouteId::Health | RouteId::Ready | RouteId::Metrics | RouteId::FetchModule => {
            Err(Error::NotFound)
        }
    }
}
