//! The tenant's notifications for the home view (SPEC §6.2; docs/outbound-webhooks.md
//! "Notifications"): `GET /notifications` (newest first; `unread=true` for the unread only; each
//! with `read`, the page with the caller's `unread` count) and `POST /notifications/read` `{ids?}`
//! (those, or without `ids` every one the caller can see, read from now on). Read marks are the
//! caller's own (the token's `sub`). Notifications addressed to admins are seen by callers
//! holding `webhooks:manage`, the permission that acts on them.

use http::{Response, StatusCode};
use readers::notifications::{self, Reader};
use serde::Deserialize;
use service::http::{Body, response};
use topics::notifications::{MarkAllRead, MarkRead as Mark};

use crate::auth::{Permission, Principal};
use crate::body;
use crate::call::Call;
use crate::commands;
use crate::error::{Error, Location};
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

/// Notifications one request marks read at most.
const MAX_IDS: usize = 100;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadBody {
    #[serde(default, deserialize_with = "body::given")]
    ids: Option<Vec<body::Id>>,
}

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let unread_only = query.boolean("unread", false);
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let page = notifications::list(&state.reads.pool, reader(principal), unread_only, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}

pub(crate) async fn mark_read(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let ReadBody { ids } = call.json().await?;
    let caller = origin.caller;
    let (reader, admin) = (caller.sub.to_string(), is_admin(caller));
    let marked = match ids {
        Some(ids) if ids.len() > MAX_IDS => {
            let message = format!("at most {MAX_IDS} ids; leave ids out to mark every one read");
            return Err(Error::validation(Location::Body, "/ids", message));
        }
        Some(ids) => {
            let ids = ids.into_iter().map(|id| id.0).collect();
            commands::submit(&state.commands, origin, Mark { reader, admin, ids }).await?
        }
        None => {
            let until = chrono::Utc::now();
            let all = MarkAllRead {
                reader,
                admin,
                until,
            };
            commands::submit(&state.commands, origin, all).await?
        }
    };
    Ok(response::json(StatusCode::OK, &marked))
}

fn reader(principal: &Principal) -> Reader<'_> {
    Reader {
        tenant: readers::Tenant::new(principal.tenant),
        sub: &principal.sub,
        admin: is_admin(principal),
    }
}

fn is_admin(principal: &Principal) -> bool {
    principal.has(Permission::WebhooksManage)
}
