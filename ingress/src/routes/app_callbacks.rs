//! `GET /app-callbacks` (SPEC §4.2): the tenant's callback sessions, newest first, narrowed by
//! `workflowRunId`, `status` and `appName`; `total` capped like the invocation history's; output
//! values and errors redacted without `runs:context`. Same page size rules as
//! `GET /app-invocations`.

use http::{Response, StatusCode};
use readers::callbacks::{self, Filter, SessionStatus};
use readers::{Page, Tenant};
use service::http::{Body, response};

use super::app_invocations::{DEFAULT_LIMIT, MAX_LIMIT, visibility};
use crate::call::Call;
use crate::error::Error;
use crate::query::{MAX_OFFSET, Query};

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let (filter, page) = parse(raw_query)?;
    let tenant = Tenant::new(principal.tenant);
    let found = callbacks::list(
        &state.reads.pool,
        tenant,
        &filter,
        page,
        visibility(principal),
    )
    .await?;
    Ok(response::json(StatusCode::OK, &found))
}

fn parse(raw: Option<&str>) -> Result<(Filter, Page), Error> {
    let mut query = Query::parse(raw);
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    let offset = query.integer("offset", 0, MAX_OFFSET, 0);
    let workflow_run_id = query.uuid("workflowRunId");
    let status = query.one("status").and_then(|raw| {
        let status = SessionStatus::parse(&raw);
        if status.is_none() {
            query.reject(
                "status",
                "must be one of pending, completed, failed, timed_out",
            );
        }
        status
    });
    let app_name = query.app_name("appName");
    query.finish()?;
    let filter = Filter {
        workflow_run_id,
        status,
        app_name,
    };
    Ok((filter, Page { limit, offset }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_read_and_bad_ones_are_issues_together() {
        let run = uuid::Uuid::now_v7();
        let (filter, page) = parse(Some(&format!(
            "workflowRunId={run}&status=timed_out&appName=kyc&limit=5"
        )))
        .expect("valid");
        assert_eq!(filter.workflow_run_id, Some(run));
        assert_eq!(filter.status, Some(SessionStatus::TimedOut));
        assert_eq!(filter.app_name.as_deref(), Some("kyc"));
        assert_eq!((page.limit, page.offset), (5, 0));
        match parse(Some("status=settled&appName=Bad_Name&limit=0")) {
            Err(Error::Validation(issues)) => {
                let paths: Vec<_> = issues.iter().map(|i| i.path.as_str()).collect();
                assert_eq!(paths, ["limit", "status", "appName"], "{issues:?}");
            }
            other => panic!("expected issues, got {other:?}"),
        }
    }
}
