#![allow(unreachable_pub)]

//! The consumer loop's integration tests, one binary: against the stack's Kafka (`./stack up`)
//! with handlers that keep what they were handed in memory, and against librdkafka's mock
//! cluster for what a real broker will not do on demand (request errors, a broker down).

mod batches;
mod failures;
mod lanes;
mod mock_cluster;
mod offsets;
mod support;
