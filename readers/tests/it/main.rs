//! The readers' integration tests, one binary, against the stack's Postgres: list totals and
//! pages that match the rows they count ([`audit_totals`], [`callback_totals`], [`pages`]) and
//! the plans the list queries get ([`plans`]).

mod audit_totals;
mod callback_totals;
mod pages;
mod plans;
mod support;
