//! The public listener (`API_PORT`): its routes, and the path every request takes: route →
//! count against the caller's rate limit → authenticate → authorise → body limit → handler,
//! with the envelope, request id and cache headers on every answer. Health and metrics are
//! answered before any of that: not counted, not traced, not logged.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use service::health::{self, OperationalRoute};
use service::http::observe::{self, Caller as SpanCaller};
use service::http::{Body, Route, Routed, Router, bearer, request_id, response};
use tracing::Instrument;

use crate::auth::claims::Kind;
use crate::auth::{Permission, Principal};
use crate::body;
use crate::commands::Origin;
use crate::error::{AuthFailure, Error};
use crate::rate_limit::{Caller, Decision};
use crate::routes;
use crate::routes::app_versions::Verdict;

use crate::state::State;

/// Every route of the public listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PublicRoute {
    /// Health and metrics: no token, not counted, not traced.
    Operational(OperationalRoute),
    /// The API's description (OpenAPI 3.1): no token, not counted.
    OpenApi,
    /// The API: a token, counted against its caller.
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

/// The routes of the API proper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiRoute {
    ListInvocations,
    ListCallbacks,
    GetInvocation,
    ListApps,
    ListAppApprovals,
    AppsHealth,
    UploadApp,
    GetApp,
    ListAppVersions,
    AppUsage,
    PublishVersion,
    ApproveVersion,
    RejectVersion,
    WithdrawVersion,
    PutInstall,
    DeleteInstall,
    StoreSecret,
    RevokeSecret,
    TestApp,
    GetApprovalSettings,
    PutApprovalSettings,
    CreateDefinitionVersion,
    GetDefinition,
    GetDefinitionVersion,
    PublishDefinition,
    ListApprovals,
    GetApproval,
    ApproveRequest,
    RejectRequest,
    WithdrawRequest,
    CommentOnRequest,
    ListUsers,
    OpenCase,
    ListCases,
    GetCase,
    DecideCase,
    StartBacktest,
    ListBacktests,
    GetBacktest,
    Activity,
    AuditEvents,
    ExportAuditEvents,
    GetAuditExportSchedule,
    PutAuditExportSchedule,
    ListAuditExportRuns,
    StartRun,
    GetRun,
    CancelRun,
    AddDocument,
    ListDocuments,
    GetDocument,
    OpenSubmission,
    SubmissionStatus,
    SubmissionHandoff,
    ListWebhookEndpoints,
    CreateWebhookEndpoint,
    GetWebhookEndpoint,
    UpdateWebhookEndpoint,
    DeleteWebhookEndpoint,
    RotateWebhookSecret,
    ListWebhookEventTypes,
    ListWebhookDeliveries,
    GetWebhookDelivery,
    RetryWebhookDelivery,
    ListNotifications,
    MarkNotificationsRead,
}

impl Route for PublicRoute {
    const ALL: &'static [Self] = &[
        PublicRoute::Operational(OperationalRoute::Live),
        PublicRoute::Operational(OperationalRoute::Ready),
        PublicRoute::Operational(OperationalRoute::Metrics),
        PublicRoute::OpenApi,
        PublicRoute::Webhook(WebhookRoute::Platform),
        PublicRoute::Webhook(WebhookRoute::Tenant),
        PublicRoute::Api(ApiRoute::ListInvocations),
        PublicRoute::Api(ApiRoute::ListCallbacks),
        PublicRoute::Api(ApiRoute::GetInvocation),
        PublicRoute::Api(ApiRoute::ListApps),
        PublicRoute::Api(ApiRoute::ListAppApprovals),
        PublicRoute::Api(ApiRoute::AppsHealth),
        PublicRoute::Api(ApiRoute::UploadApp),
        PublicRoute::Api(ApiRoute::GetApp),
        PublicRoute::Api(ApiRoute::ListAppVersions),
        PublicRoute::Api(ApiRoute::AppUsage),
        PublicRoute::Api(ApiRoute::PublishVersion),
        PublicRoute::Api(ApiRoute::ApproveVersion),
        PublicRoute::Api(ApiRoute::RejectVersion),
        PublicRoute::Api(ApiRoute::WithdrawVersion),
        PublicRoute::Api(ApiRoute::PutInstall),
        PublicRoute::Api(ApiRoute::DeleteInstall),
        PublicRoute::Api(ApiRoute::StoreSecret),
        PublicRoute::Api(ApiRoute::RevokeSecret),
        PublicRoute::Api(ApiRoute::TestApp),
        PublicRoute::Api(ApiRoute::GetApprovalSettings),
        PublicRoute::Api(ApiRoute::PutApprovalSettings),
        PublicRoute::Api(ApiRoute::CreateDefinitionVersion),
        PublicRoute::Api(ApiRoute::GetDefinition),
        PublicRoute::Api(ApiRoute::GetDefinitionVersion),
        PublicRoute::Api(ApiRoute::PublishDefinition),
        PublicRoute::Api(ApiRoute::ListApprovals),
        PublicRoute::Api(ApiRoute::GetApproval),
        PublicRoute::Api(ApiRoute::ApproveRequest),
        PublicRoute::Api(ApiRoute::RejectRequest),
        PublicRoute::Api(ApiRoute::WithdrawRequest),
        PublicRoute::Api(ApiRoute::CommentOnRequest),
        PublicRoute::Api(ApiRoute::ListUsers),
        PublicRoute::Api(ApiRoute::OpenCase),
        PublicRoute::Api(ApiRoute::ListCases),
        PublicRoute::Api(ApiRoute::GetCase),
        PublicRoute::Api(ApiRoute::DecideCase),
        PublicRoute::Api(ApiRoute::StartBacktest),
        PublicRoute::Api(ApiRoute::ListBacktests),
        PublicRoute::Api(ApiRoute::GetBacktest),
        PublicRoute::Api(ApiRoute::Activity),
        PublicRoute::Api(ApiRoute::AuditEvents),
        PublicRoute::Api(ApiRoute::ExportAuditEvents),
        PublicRoute::Api(ApiRoute::GetAuditExportSchedule),
        PublicRoute::Api(ApiRoute::PutAuditExportSchedule),
        PublicRoute::Api(ApiRoute::ListAuditExportRuns),
        PublicRoute::Api(ApiRoute::StartRun),
        PublicRoute::Api(ApiRoute::GetRun),
        PublicRoute::Api(ApiRoute::CancelRun),
        PublicRoute::Api(ApiRoute::AddDocument),
        PublicRoute::Api(ApiRoute::ListDocuments),
        PublicRoute::Api(ApiRoute::GetDocument),
        PublicRoute::Api(ApiRoute::OpenSubmission),
        PublicRoute::Api(ApiRoute::SubmissionStatus),
        PublicRoute::Api(ApiRoute::SubmissionHandoff),
        PublicRoute::Api(ApiRoute::ListWebhookEndpoints),
        PublicRoute::Api(ApiRoute::CreateWebhookEndpoint),
        PublicRoute::Api(ApiRoute::GetWebhookEndpoint),
        PublicRoute::Api(ApiRoute::UpdateWebhookEndpoint),
        PublicRoute::Api(ApiRoute::DeleteWebhookEndpoint),
        PublicRoute::Api(ApiRoute::RotateWebhookSecret),
        PublicRoute::Api(ApiRoute::ListWebhookEventTypes),
        PublicRoute::Api(ApiRoute::ListWebhookDeliveries),
        PublicRoute::Api(ApiRoute::GetWebhookDelivery),
        PublicRoute::Api(ApiRoute::RetryWebhookDelivery),
        PublicRoute::Api(ApiRoute::ListNotifications),
        PublicRoute::Api(ApiRoute::MarkNotificationsRead),
    ];

    fn method(self) -> Method {
        match self {
            PublicRoute::Operational(route) => route.method(),
            PublicRoute::OpenApi => Method::GET,
            PublicRoute::Api(route) => route.method(),
            PublicRoute::Webhook(_) => Method::POST,
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            PublicRoute::Operational(route) => route.pattern(),
            PublicRoute::OpenApi => "/openapi.json",
            PublicRoute::Api(route) => route.pattern(),
            PublicRoute::Webhook(WebhookRoute::Platform) => "/webhooks/apps/{app}",
            PublicRoute::Webhook(WebhookRoute::Tenant) => "/webhooks/apps/{app}/tenants/{tenantId}",
        }
    }
}

impl ApiRoute {
    fn method(self) -> Method {
        match self {
            ApiRoute::ListInvocations
            | ApiRoute::ListCallbacks
            | ApiRoute::GetInvocation
            | ApiRoute::ListApps
            | ApiRoute::ListAppApprovals
            | ApiRoute::AppsHealth
            | ApiRoute::GetApp
            | ApiRoute::ListAppVersions
            | ApiRoute::AppUsage
            | ApiRoute::GetApprovalSettings
            | ApiRoute::GetDefinition
            | ApiRoute::GetDefinitionVersion
            | ApiRoute::ListApprovals
            | ApiRoute::GetApproval
            | ApiRoute::ListUsers
            | ApiRoute::ListCases
            | ApiRoute::GetCase
            | ApiRoute::ListBacktests
            | ApiRoute::GetBacktest
            | ApiRoute::Activity
            | ApiRoute::AuditEvents
            | ApiRoute::ExportAuditEvents
            | ApiRoute::GetAuditExportSchedule
            | ApiRoute::ListAuditExportRuns
            | ApiRoute::GetRun
            | ApiRoute::ListDocuments
            | ApiRoute::GetDocument
            | ApiRoute::SubmissionStatus
            | ApiRoute::SubmissionHandoff
            | ApiRoute::ListWebhookEndpoints
            | ApiRoute::GetWebhookEndpoint
            | ApiRoute::ListWebhookEventTypes
            | ApiRoute::ListWebhookDeliveries
            | ApiRoute::GetWebhookDelivery
            | ApiRoute::ListNotifications => Method::GET,
            ApiRoute::UploadApp
            | ApiRoute::PublishVersion
            | ApiRoute::ApproveVersion
            | ApiRoute::RejectVersion
            | ApiRoute::StoreSecret
            | ApiRoute::TestApp
            | ApiRoute::CreateDefinitionVersion
            | ApiRoute::PublishDefinition
            | ApiRoute::ApproveRequest
            | ApiRoute::RejectRequest
            | ApiRoute::WithdrawRequest
            | ApiRoute::CommentOnRequest
            | ApiRoute::OpenCase
            | ApiRoute::DecideCase
            | ApiRoute::StartBacktest
            | ApiRoute::StartRun
            | ApiRoute::CancelRun
            | ApiRoute::AddDocument
            | ApiRoute::OpenSubmission
            | ApiRoute::CreateWebhookEndpoint
            | ApiRoute::RotateWebhookSecret
            | ApiRoute::RetryWebhookDelivery
            | ApiRoute::MarkNotificationsRead => Method::POST,
            ApiRoute::UpdateWebhookEndpoint => Method::PATCH,
            ApiRoute::PutInstall
            | ApiRoute::PutApprovalSettings
            | ApiRoute::PutAuditExportSchedule => Method::PUT,
            ApiRoute::WithdrawVersion
            | ApiRoute::DeleteInstall
            | ApiRoute::RevokeSecret
            | ApiRoute::DeleteWebhookEndpoint => Method::DELETE,
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            ApiRoute::ListInvocations => "/app-invocations",
            ApiRoute::ListCallbacks => "/app-callbacks",
            ApiRoute::GetInvocation => "/app-invocations/{id}",
            ApiRoute::ListApps => "/apps",
            ApiRoute::ListAppApprovals => "/apps/approvals",
            ApiRoute::AppsHealth => "/apps/health",
            ApiRoute::UploadApp => "/apps/uploads",
            ApiRoute::GetApp => "/apps/{name}",
            ApiRoute::ListAppVersions => "/apps/{name}/versions",
            ApiRoute::AppUsage => "/apps/{name}/usage",
            ApiRoute::PublishVersion => "/apps/{name}/versions/{id}/publish",
            ApiRoute::ApproveVersion => "/apps/{name}/versions/{id}/approve",
            ApiRoute::RejectVersion => "/apps/{name}/versions/{id}/reject",
            ApiRoute::WithdrawVersion => "/apps/{name}/versions/{id}",
            ApiRoute::PutInstall | ApiRoute::DeleteInstall => "/apps/{name}/install",
            ApiRoute::StoreSecret | ApiRoute::RevokeSecret => "/apps/{name}/secrets/{secret}",
            ApiRoute::TestApp => "/apps/{name}/test",
            ApiRoute::GetApprovalSettings | ApiRoute::PutApprovalSettings => "/approval-settings",
            ApiRoute::CreateDefinitionVersion => "/definitions/{kind}/{key}/versions",
            ApiRoute::GetDefinition => "/definitions/{kind}/{key}",
            ApiRoute::GetDefinitionVersion => "/definitions/{kind}/{key}/versions/{version}",
            ApiRoute::PublishDefinition => "/definitions/{kind}/{key}/versions/{version}/publish",
            ApiRoute::ListApprovals => "/approvals",
            ApiRoute::GetApproval => "/approvals/{id}",
            ApiRoute::ApproveRequest => "/approvals/{id}/approve",
            ApiRoute::RejectRequest => "/approvals/{id}/reject",
            ApiRoute::WithdrawRequest => "/approvals/{id}/withdraw",
            ApiRoute::CommentOnRequest => "/approvals/{id}/comments",
            ApiRoute::ListUsers => "/users",
            ApiRoute::OpenCase | ApiRoute::ListCases => "/cases",
            ApiRoute::GetCase => "/cases/{id}",
            ApiRoute::StartBacktest | ApiRoute::ListBacktests => "/backtests",
            ApiRoute::GetBacktest => "/backtests/{id}",
            ApiRoute::DecideCase => "/cases/{id}/decide",
            ApiRoute::Activity => "/activity",
            ApiRoute::AuditEvents => "/audit-events",
            ApiRoute::ExportAuditEvents => "/audit-events/export",
            ApiRoute::GetAuditExportSchedule | ApiRoute::PutAuditExportSchedule => {
                "/audit-exports/schedule"
            }
            ApiRoute::ListAuditExportRuns => "/audit-exports/runs",
            ApiRoute::StartRun => "/workflow-runs",
            ApiRoute::GetRun => "/workflow-runs/{id}",
            ApiRoute::CancelRun => "/workflow-runs/{id}/cancel",
            ApiRoute::ListWebhookEndpoints | ApiRoute::CreateWebhookEndpoint => {
                "/webhook-endpoints"
            }
            ApiRoute::GetWebhookEndpoint
            | ApiRoute::UpdateWebhookEndpoint
            | ApiRoute::DeleteWebhookEndpoint => "/webhook-endpoints/{id}",
            ApiRoute::RotateWebhookSecret => "/webhook-endpoints/{id}/rotate-secret",
            ApiRoute::ListWebhookEventTypes => "/webhook-event-types",
            ApiRoute::ListWebhookDeliveries => "/webhook-deliveries",
            ApiRoute::GetWebhookDelivery => "/webhook-deliveries/{id}",
            ApiRoute::RetryWebhookDelivery => "/webhook-deliveries/{id}/retry",
            ApiRoute::ListNotifications => "/notifications",
            ApiRoute::MarkNotificationsRead => "/notifications/read",
            ApiRoute::AddDocument | ApiRoute::ListDocuments => "/subjects/{subjectId}/documents",
            ApiRoute::GetDocument => "/subjects/{subjectId}/documents/{id}",
            ApiRoute::OpenSubmission => "/collection-submissions",
            ApiRoute::SubmissionStatus => "/collection-submissions/{id}/status",
            ApiRoute::SubmissionHandoff => "/collection-submissions/{id}/handoff",
        }
    }

    /// Who may call the route (SPEC §4.7, §5).
    fn access(self) -> Access {
        match self {
            ApiRoute::SubmissionStatus | ApiRoute::SubmissionHandoff => Access::Applicant,
            // SPEC §4.1: the feed itself needs no permission; `definitions:read` widens it.
            ApiRoute::Activity => Access::Staff,
            route => route.permission().map_or(Access::Staff, Access::Holds),
        }
    }

    /// The permission a caller's token must hold (SPEC §4.7, §5), for routes that need one.
    fn permission(self) -> Option<Permission> {
        let permission = match self {
            ApiRoute::ListInvocations
            | ApiRoute::ListCallbacks
            | ApiRoute::GetInvocation
            | ApiRoute::ListApps
            | ApiRoute::ListAppApprovals
            | ApiRoute::AppsHealth
            | ApiRoute::GetApp
            | ApiRoute::ListAppVersions
            | ApiRoute::AppUsage => Permission::AppsRead,
            ApiRoute::UploadApp
            | ApiRoute::PublishVersion
            | ApiRoute::ApproveVersion
            | ApiRoute::RejectVersion
            | ApiRoute::WithdrawVersion => Permission::AppsPublish,
            ApiRoute::PutInstall
            | ApiRoute::DeleteInstall
            | ApiRoute::StoreSecret
            | ApiRoute::RevokeSecret
            | ApiRoute::TestApp => Permission::AppsWrite,
            ApiRoute::GetApprovalSettings | ApiRoute::PutApprovalSettings => {
                Permission::ApprovalsConfigure
            }
            ApiRoute::GetDefinition
            | ApiRoute::GetDefinitionVersion
            | ApiRoute::ListApprovals
            | ApiRoute::GetApproval
            | ApiRoute::CommentOnRequest => Permission::DefinitionsRead,
            ApiRoute::CreateDefinitionVersion
            | ApiRoute::PublishDefinition
            | ApiRoute::WithdrawRequest => Permission::DefinitionsWrite,
            ApiRoute::ApproveRequest | ApiRoute::RejectRequest => Permission::ApprovalsDecide,
            ApiRoute::ListUsers => Permission::UsersRead,
            ApiRoute::ListCases | ApiRoute::GetCase => Permission::CasesRead,
            ApiRoute::OpenCase | ApiRoute::DecideCase => Permission::CasesWrite,
            ApiRoute::ListBacktests | ApiRoute::GetBacktest => Permission::BacktestsRead,
            ApiRoute::StartBacktest => Permission::BacktestsRun,
            ApiRoute::GetRun => Permission::RunsRead,
            ApiRoute::StartRun | ApiRoute::CancelRun => Permission::RunsWrite,
            ApiRoute::ListDocuments | ApiRoute::GetDocument => Permission::DocumentsRead,
            ApiRoute::AddDocument => Permission::DocumentsWrite,
            ApiRoute::OpenSubmission => Permission::RunsWrite,
            ApiRoute::AuditEvents
            | ApiRoute::ExportAuditEvents
            | ApiRoute::GetAuditExportSchedule
            | ApiRoute::ListAuditExportRuns => Permission::AuditRead,
            ApiRoute::PutAuditExportSchedule => Permission::AuditExport,
            ApiRoute::ListWebhookEndpoints
            | ApiRoute::CreateWebhookEndpoint
            | ApiRoute::GetWebhookEndpoint
            | ApiRoute::UpdateWebhookEndpoint
            | ApiRoute::DeleteWebhookEndpoint
            | ApiRoute::RotateWebhookSecret
            | ApiRoute::ListWebhookEventTypes
            | ApiRoute::ListWebhookDeliveries
            | ApiRoute::GetWebhookDelivery
            | ApiRoute::RetryWebhookDelivery => Permission::WebhooksManage,
            ApiRoute::ListNotifications | ApiRoute::MarkNotificationsRead => {
                Permission::NotificationsRead
            }
            ApiRoute::SubmissionStatus | ApiRoute::SubmissionHandoff | ApiRoute::Activity => {
                return None;
            }
        };
        Some(permission)
    }

    /// The `/apps` routes need a runner and object storage (SPEC §4.7 rule 9).
    fn needs_apps(self) -> bool {
        self.pattern().starts_with("/apps")
    }

    fn body_limit(self) -> usize {
        match self {
            ApiRoute::UploadApp => schema::module::MAX_MODULE_BYTES,
            ApiRoute::AddDocument => topics::documents::MAX_DOCUMENT_BYTES,
            _ => body::JSON_LIMIT,
        }
    }
}

/// Who may call an API route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// A token holding the permission.
    Holds(Permission),
    /// The applicant of the submission (SPEC §5); nobody else.
    Applicant,
    /// Any human or machine of the tenant; no applicant.
    Staff,
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
    let decision = state.limiter.check(&Caller::Address(client));
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

/// A route's answer, on its way.
type Answering<'a> = Pin<Box<dyn Future<Output = Result<Response<Body>, Error>> + Send + 'a>>;

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
    let answer = authorised(state, route, &params, &principal, request_id, request).await;
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
    principal: &Principal,
    request_id: &str,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    match route.access() {
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
    if route.needs_apps() {
        state.apps()?;
    }
    let (parts, mut body) = request.into_parts();
    body::refuse_declared_oversize(&parts.headers, &mut body, route.body_limit()).await?;
    let origin = Origin {
        caller: principal,
        request_id,
    };
    let query = parts.uri.query();
    let (name, id, secret) = (params.get("name"), params.get("id"), params.get("secret"));
    let (kind, key, version) = (params.get("kind"), params.get("key"), params.get("version"));
    let subject = params.get("subjectId");
    // Each route's future on the heap: inlined here, every route would size this future (and
    // those that await it) to the largest, to be copied on each move of every request.
    let answering: Answering<'_> = match route {
        ApiRoute::ListInvocations => {
            Box::pin(routes::app_invocations::list(state, principal, query))
        }
        ApiRoute::ListCallbacks => Box::pin(routes::app_callbacks::list(state, principal, query)),
        ApiRoute::GetInvocation => Box::pin(routes::app_invocations::get(state, principal, id)),
        ApiRoute::ListApps => Box::pin(routes::apps::list(state, principal)),
        ApiRoute::ListAppApprovals => {
            Box::pin(routes::app_approvals::list(state, principal, query))
        }
        ApiRoute::AppsHealth => Box::pin(routes::apps_health::report(state, principal, query)),
        ApiRoute::UploadApp => Box::pin(routes::app_uploads::upload(state, origin, &parts, body)),
        ApiRoute::GetApp => Box::pin(routes::apps::get(state, principal, name)),
        ApiRoute::ListAppVersions => Box::pin(routes::apps::versions(state, principal, name)),
        ApiRoute::AppUsage => Box::pin(routes::apps::usage(state, principal, name)),
        ApiRoute::PublishVersion => {
            Box::pin(routes::app_versions::publish(state, origin, name, id))
        }
        ApiRoute::ApproveVersion | ApiRoute::RejectVersion => {
            let verdict = match route {
                ApiRoute::ApproveVersion => Verdict::Approve,
                _ => Verdict::Reject,
            };
            Box::pin(routes::app_versions::decide(
                state,
                origin,
                (&parts, body),
                (name, id),
                verdict,
            ))
        }
        ApiRoute::WithdrawVersion => {
            Box::pin(routes::app_versions::withdraw(state, origin, name, id))
        }
        ApiRoute::PutInstall => {
            Box::pin(routes::app_install::put(state, origin, &parts, body, name))
        }
        ApiRoute::DeleteInstall => {
            Box::pin(routes::app_install::delete(state, origin, name, query))
        }
        ApiRoute::StoreSecret => Box::pin(routes::app_secrets::store(
            state,
            origin,
            &parts,
            body,
            (name, secret),
        )),
        ApiRoute::RevokeSecret => {
            Box::pin(routes::app_secrets::revoke(state, origin, (name, secret)))
        }
        ApiRoute::TestApp => Box::pin(routes::app_test::call(state, origin, &parts, body, name)),
        ApiRoute::GetApprovalSettings => Box::pin(routes::approval_settings::get(state, principal)),
        ApiRoute::PutApprovalSettings => {
            Box::pin(routes::approval_settings::put(state, origin, &parts, body))
        }
        ApiRoute::CreateDefinitionVersion => Box::pin(routes::definitions::create_version(
            state,
            origin,
            (&parts, body),
            (kind, key),
        )),
        ApiRoute::GetDefinition => {
            Box::pin(routes::definitions::get(state, principal, (kind, key)))
        }
        ApiRoute::GetDefinitionVersion => Box::pin(routes::definitions::get_version(
            state,
            principal,
            (kind, key, version),
        )),
        ApiRoute::PublishDefinition => Box::pin(routes::definitions::publish(
            state,
            origin,
            (&parts, body),
            (kind, key, version),
        )),
        ApiRoute::ListApprovals => Box::pin(routes::approvals::list(state, principal, query)),
        ApiRoute::GetApproval => Box::pin(routes::approval_detail::get(state, principal, id)),
        ApiRoute::ApproveRequest | ApiRoute::RejectRequest | ApiRoute::WithdrawRequest => {
            let decision = match route {
                ApiRoute::ApproveRequest => topics::definitions::Decision::Approved,
                ApiRoute::RejectRequest => topics::definitions::Decision::Rejected,
                _ => topics::definitions::Decision::Withdrawn,
            };
            Box::pin(routes::approval_decisions::decide(
                state,
                origin,
                (&parts, body),
                id,
                decision,
            ))
        }
        ApiRoute::CommentOnRequest => Box::pin(routes::approval_decisions::comment(
            state,
            origin,
            (&parts, body),
            id,
        )),
        ApiRoute::ListUsers => Box::pin(routes::users::list(state, principal, query)),
        ApiRoute::OpenCase => Box::pin(routes::cases::open(state, origin, (&parts, body))),
        ApiRoute::ListCases => Box::pin(routes::cases::list(state, principal, query)),
        ApiRoute::GetCase => Box::pin(routes::cases::get(state, principal, id)),
        ApiRoute::StartBacktest => {
            Box::pin(routes::backtests::start(state, origin, (&parts, body)))
        }
        ApiRoute::ListBacktests => Box::pin(routes::backtests::list(state, principal, query)),
        ApiRoute::GetBacktest => Box::pin(routes::backtests::get(state, principal, id)),
        ApiRoute::DecideCase => Box::pin(routes::cases::decide(state, origin, (&parts, body), id)),
        ApiRoute::Activity => Box::pin(routes::activity::list(state, principal, query)),
        ApiRoute::AuditEvents => Box::pin(routes::audit_events::list(state, principal, query)),
        ApiRoute::ExportAuditEvents => {
            Box::pin(routes::audit_export::export(state, principal, query))
        }
        ApiRoute::GetAuditExportSchedule => {
            Box::pin(routes::audit_export_schedule::get(state, principal))
        }
        ApiRoute::PutAuditExportSchedule => Box::pin(routes::audit_export_schedule::put(
            state,
            origin,
            (&parts, body),
        )),
        ApiRoute::ListAuditExportRuns => {
            Box::pin(routes::audit_export_schedule::runs(state, principal, query))
        }
        ApiRoute::StartRun => Box::pin(routes::workflow_runs::start(state, origin, (&parts, body))),
        ApiRoute::GetRun => Box::pin(routes::workflow_runs::get(state, principal, id)),
        ApiRoute::CancelRun => Box::pin(routes::workflow_runs::cancel(state, origin, id)),
        ApiRoute::AddDocument => Box::pin(routes::documents::add(
            state,
            origin,
            (&parts, body),
            subject,
        )),
        ApiRoute::ListDocuments => {
            Box::pin(routes::documents::list(state, principal, subject, query))
        }
        ApiRoute::GetDocument => Box::pin(routes::documents::read(state, principal, (subject, id))),
        ApiRoute::OpenSubmission => Box::pin(routes::collection_submissions::open(
            state,
            origin,
            (&parts, body),
        )),
        ApiRoute::SubmissionStatus => {
            Box::pin(routes::collection_submissions::status(state, principal, id))
        }
        ApiRoute::SubmissionHandoff => Box::pin(routes::collection_submissions::handoff(
            state, principal, id, request_id,
        )),
        ApiRoute::ListWebhookEndpoints => {
            Box::pin(routes::webhook_endpoints::list(state, principal))
        }
        ApiRoute::CreateWebhookEndpoint => Box::pin(routes::webhook_endpoints::create(
            state,
            origin,
            (&parts, body),
        )),
        ApiRoute::GetWebhookEndpoint => {
            Box::pin(routes::webhook_endpoints::get(state, principal, id))
        }
        ApiRoute::UpdateWebhookEndpoint => Box::pin(routes::webhook_endpoints::update(
            state,
            origin,
            (&parts, body),
            id,
        )),
        ApiRoute::DeleteWebhookEndpoint => {
            Box::pin(routes::webhook_endpoints::delete(state, origin, id))
        }
        ApiRoute::RotateWebhookSecret => {
            Box::pin(routes::webhook_endpoints::rotate_secret(state, origin, id))
        }
        ApiRoute::ListWebhookEventTypes => {
            Box::pin(std::future::ready(Ok(routes::webhook_event_types::list())))
        }
        ApiRoute::ListWebhookDeliveries => {
            Box::pin(routes::webhook_deliveries::list(state, principal, query))
        }
        ApiRoute::GetWebhookDelivery => {
            Box::pin(routes::webhook_deliveries::get(state, principal, id))
        }
        ApiRoute::RetryWebhookDelivery => {
            Box::pin(routes::webhook_deliveries::retry(state, origin, id))
        }
        ApiRoute::ListNotifications => {
            Box::pin(routes::notifications::list(state, principal, query))
        }
        ApiRoute::MarkNotificationsRead => Box::pin(routes::notifications::mark_read(
            state,
            origin,
            (&parts, body),
        )),
    };
    answering.await
}
