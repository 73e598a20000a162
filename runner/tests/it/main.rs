#![allow(unreachable_pub)]

//! The runner's integration tests, one binary: the real runner binary (started through
//! `./stack run runner` on a port it picks itself) against stand-ins for the API's internal
//! listener and for vendors, plus the compiler child and the vendor HTTP client in process.

mod calls;
mod compiler;
mod documents;
mod example_app;
mod inspect;
mod kernel;
mod routes;
mod ssrf;
mod stack_environment;
mod support;
mod telemetry;
mod through_ingress;
