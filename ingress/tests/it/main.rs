#![allow(unreachable_pub)]

//! Integration tests against the real stack (`./stack up`): the API's public and internal
//! listeners over HTTP, Postgres for fixtures. Extra instances with other settings are started
//! through `./stack run ingress`.

mod access_log;
mod activity;
mod approvals;
mod apps;
mod audit_events;
mod audit_exports;
mod auth;
mod backtests;
mod broker_loss;
mod cases;
mod definitions;
mod documents;
mod envelope;
mod gauges;
mod handoff;
mod health;
mod internal;
mod invocation_totals;
mod invocations;
mod rate_limit;
mod request_id;
mod runs;
mod shutdown;
mod support;
mod traces;
mod upgrade;
mod webhook_deliveries;
mod webhook_endpoints;
mod webhook_races;
mod webhooks;
