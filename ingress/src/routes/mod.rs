//! The API's routes, declared once: one row each in [`API`] (method, path, who may call it,
//! the largest body it reads, its handler), from which the public listener routes, authorises
//! and dispatches and the OpenAPI document is checked (`openapi::tests`). One file per
//! resource below; each handler takes one [`Call`] and returns a response or an [`Error`].
//! Adding a route is a row here, its handler and its operation in `schema/openapi.json`.

use std::future::Future;
use std::pin::Pin;

use http::{Method, Response};
use service::http::Body;

use crate::auth::Permission::{self, *};
use crate::call::Call;
use crate::error::Error;

pub(crate) mod activity;
pub(crate) mod app_approvals;
pub(crate) mod app_call_documents;
pub(crate) mod app_callbacks;
pub(crate) mod app_install;
pub(crate) mod app_invocations;
pub(crate) mod app_modules;
pub(crate) mod app_secrets;
pub(crate) mod app_test;
pub(crate) mod app_uploads;
pub(crate) mod app_versions;
pub(crate) mod approval_decisions;
pub(crate) mod approval_detail;
pub(crate) mod approval_settings;
pub(crate) mod approvals;
pub(crate) mod apps;
pub(crate) mod apps_health;
pub(crate) mod audit_events;
pub(crate) mod audit_export;
pub(crate) mod audit_export_schedule;
pub(crate) mod backtests;
pub(crate) mod cases;
pub(crate) mod collection_submissions;
pub(crate) mod definitions;
pub(crate) mod documents;
pub(crate) mod notifications;
pub(crate) mod openapi;
pub(crate) mod users;
pub(crate) mod webhook_deliveries;
pub(crate) mod webhook_endpoints;
pub(crate) mod webhook_event_types;
pub(crate) mod webhooks;
pub(crate) mod workflow_runs;

/// Who may call an API route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// A token holding the permission (SPEC §4.7, §5).
    Holds(Permission),
    /// The applicant of the submission (SPEC §5); nobody else.
    Applicant,
    /// Any human or machine of the tenant; no applicant.
    Staff,
}

use Access::{Applicant, Holds, Staff};

/// A route's answer, on its way: on the heap, each its own size (inlined in one `match`, every
/// route's future would be as large as the largest, copied on each move of every request).
pub(crate) type Answering<'a> =
    Pin<Box<dyn Future<Output = Result<Response<Body>, Error>> + Send + 'a>>;

/// One row of the table.
pub(crate) struct Endpoint {
    pub(crate) method: Method,
    pub(crate) path: &'static str,
    pub(crate) access: Access,
    /// The largest body the route reads; a larger one is refused before the handler runs.
    pub(crate) body_limit: usize,
    pub(crate) handler: for<'a> fn(Call<'a>) -> Answering<'a>,
}

impl Endpoint {
    /// The `/apps` routes need a runner and object storage (SPEC §4.7 rule 9).
    pub(crate) fn needs_apps(&self) -> bool {
        self.path.starts_with("/apps")
    }
}

const JSON: usize = crate::body::JSON_LIMIT;
const MODULE: usize = schema::module::MAX_MODULE_BYTES;
const DOCUMENT: usize = topics::documents::MAX_DOCUMENT_BYTES;

macro_rules! table {
    ($($method:ident $path:literal $access:expr, $limit:ident => $handler:path;)*) => {
        &[$(Endpoint {
            method: Method::$method,
            path: $path,
            access: $access,
            body_limit: $limit,
            handler: |call| Box::pin($handler(call)),
        },)*]
    };
}

/// Every route of the API proper, in the document's order of resources. SPEC §4.1: the
/// activity feed needs no permission (`definitions:read` widens it).
#[rustfmt::skip]
pub(crate) static API: &[Endpoint] = table! {
    GET    "/app-invocations"                                   Holds(AppsRead), JSON => app_invocations::list;
    GET    "/app-callbacks"                                     Holds(AppsRead), JSON => app_callbacks::list;
    GET    "/app-invocations/{id}"                              Holds(AppsRead), JSON => app_invocations::get;
    GET    "/apps"                                              Holds(AppsRead), JSON => apps::list;
    GET    "/apps/approvals"                                    Holds(AppsRead), JSON => app_approvals::list;
    GET    "/apps/health"                                       Holds(AppsRead), JSON => apps_health::report;
    POST   "/apps/uploads"                                      Holds(AppsPublish), MODULE => app_uploads::upload;
    GET    "/apps/{name}"                                       Holds(AppsRead), JSON => apps::get;
    GET    "/apps/{name}/versions"                              Holds(AppsRead), JSON => apps::versions;
    GET    "/apps/{name}/usage"                                 Holds(AppsRead), JSON => apps::usage;
    POST   "/apps/{name}/versions/{id}/publish"                 Holds(AppsPublish), JSON => app_versions::publish;
    POST   "/apps/{name}/versions/{id}/approve"                 Holds(AppsPublish), JSON => app_versions::approve;
    POST   "/apps/{name}/versions/{id}/reject"                  Holds(AppsPublish), JSON => app_versions::reject;
    DELETE "/apps/{name}/versions/{id}"                         Holds(AppsPublish), JSON => app_versions::withdraw;
    PUT    "/apps/{name}/install"                               Holds(AppsWrite), JSON => app_install::put;
    DELETE "/apps/{name}/install"                               Holds(AppsWrite), JSON => app_install::delete;
    POST   "/apps/{name}/secrets/{secret}"                      Holds(AppsWrite), JSON => app_secrets::store;
    DELETE "/apps/{name}/secrets/{secret}"                      Holds(AppsWrite), JSON => app_secrets::revoke;
    POST   "/apps/{name}/test"                                  Holds(AppsWrite), JSON => app_test::call;
    GET    "/approval-settings"                                 Holds(ApprovalsConfigure), JSON => approval_settings::get;
    PUT    "/approval-settings"                                 Holds(ApprovalsConfigure), JSON => approval_settings::put;
    POST   "/definitions/{kind}/{key}/versions"                 Holds(DefinitionsWrite), JSON => definitions::create_version;
    GET    "/definitions/{kind}/{key}"                          Holds(DefinitionsRead), JSON => definitions::get;
    GET    "/definitions/{kind}/{key}/versions/{version}"       Holds(DefinitionsRead), JSON => definitions::get_version;
    POST   "/definitions/{kind}/{key}/versions/{version}/publish" Holds(DefinitionsWrite), JSON => definitions::publish;
    GET    "/approvals"                                         Holds(DefinitionsRead), JSON => approvals::list;
    GET    "/approvals/{id}"                                    Holds(DefinitionsRead), JSON => approval_detail::get;
    POST   "/approvals/{id}/approve"                            Holds(ApprovalsDecide), JSON => approval_decisions::approve;
    POST   "/approvals/{id}/reject"                             Holds(ApprovalsDecide), JSON => approval_decisions::reject;
    POST   "/approvals/{id}/withdraw"                           Holds(DefinitionsWrite), JSON => approval_decisions::withdraw;
    POST   "/approvals/{id}/comments"                           Holds(DefinitionsRead), JSON => approval_decisions::comment;
    GET    "/users"                                             Holds(UsersRead), JSON => users::list;
    POST   "/cases"                                             Holds(CasesWrite), JSON => cases::open;
    GET    "/cases"                                             Holds(CasesRead), JSON => cases::list;
    GET    "/cases/{id}"                                        Holds(CasesRead), JSON => cases::get;
    POST   "/cases/{id}/decide"                                 Holds(CasesWrite), JSON => cases::decide;
    POST   "/backtests"                                         Holds(BacktestsRun), JSON => backtests::start;
    GET    "/backtests"                                         Holds(BacktestsRead), JSON => backtests::list;
    GET    "/backtests/{id}"                                    Holds(BacktestsRead), JSON => backtests::get;
    GET    "/activity"                                          Staff, JSON => activity::list;
    GET    "/audit-events"                                      Holds(AuditRead), JSON => audit_events::list;
    GET    "/audit-events/export"                               Holds(AuditRead), JSON => audit_export::export;
    GET    "/audit-exports/schedule"                            Holds(AuditRead), JSON => audit_export_schedule::get;
    PUT    "/audit-exports/schedule"                            Holds(AuditExport), JSON => audit_export_schedule::put;
    GET    "/audit-exports/runs"                                Holds(AuditRead), JSON => audit_export_schedule::runs;
    POST   "/workflow-runs"                                     Holds(RunsWrite), JSON => workflow_runs::start;
    GET    "/workflow-runs/{id}"                                Holds(RunsRead), JSON => workflow_runs::get;
    POST   "/workflow-runs/{id}/cancel"                         Holds(RunsWrite), JSON => workflow_runs::cancel;
    POST   "/subjects/{subjectId}/documents"                    Holds(DocumentsWrite), DOCUMENT => documents::add;
    GET    "/subjects/{subjectId}/documents"                    Holds(DocumentsRead), JSON => documents::list;
    GET    "/subjects/{subjectId}/documents/{id}"               Holds(DocumentsRead), JSON => documents::read;
    POST   "/collection-submissions"                            Holds(RunsWrite), JSON => collection_submissions::open;
    GET    "/collection-submissions/{id}/status"                Applicant, JSON => collection_submissions::status;
    GET    "/collection-submissions/{id}/handoff"               Applicant, JSON => collection_submissions::handoff;
    GET    "/webhook-endpoints"                                 Holds(WebhooksManage), JSON => webhook_endpoints::list;
    POST   "/webhook-endpoints"                                 Holds(WebhooksManage), JSON => webhook_endpoints::create;
    GET    "/webhook-endpoints/{id}"                            Holds(WebhooksManage), JSON => webhook_endpoints::get;
    PATCH  "/webhook-endpoints/{id}"                            Holds(WebhooksManage), JSON => webhook_endpoints::update;
    DELETE "/webhook-endpoints/{id}"                            Holds(WebhooksManage), JSON => webhook_endpoints::delete;
    POST   "/webhook-endpoints/{id}/rotate-secret"              Holds(WebhooksManage), JSON => webhook_endpoints::rotate_secret;
    GET    "/webhook-event-types"                               Holds(WebhooksManage), JSON => webhook_event_types::list;
    GET    "/webhook-deliveries"                                Holds(WebhooksManage), JSON => webhook_deliveries::list;
    GET    "/webhook-deliveries/{id}"                           Holds(WebhooksManage), JSON => webhook_deliveries::get;
    POST   "/webhook-deliveries/{id}/retry"                     Holds(WebhooksManage), JSON => webhook_deliveries::retry;
    GET    "/notifications"                                     Holds(NotificationsRead), JSON => notifications::list;
    POST   "/notifications/read"                                Holds(NotificationsRead), JSON => notifications::mark_read;
};
