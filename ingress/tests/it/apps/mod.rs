//! The apps routes end to end: HTTP → command on the log → stage → reply, against the stack's
//! broker, database, object store and runner.

mod availability;
mod canary;
mod dead_letters;
mod deployment;
mod health;
mod installs;
mod isolation;
mod lifecycle;
mod races;
mod uploads;
