//! One call of a module export: a fresh store and instance, the Extism kernel state, the
//! platform context (config, secrets, vendor HTTP, documents), limits, and what it used.

pub(crate) mod logs;
pub(crate) mod run;
pub(crate) mod vars;

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};
use wasmtime::{StoreLimits, StoreLimitsBuilder};

use crate::documents::DocumentAccess;
use crate::kernel::arena::Arena;
use crate::secrets::Secrets;
use outbound::{ApprovedHosts, OutboundClient, RequestBudget};

use self::logs::LogSink;
use self::vars::Vars;

/// The exports a module may have (SPEC §4.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Export {
    Manifest,
    Invoke,
    HandleWebhook,
    Handoff,
}

impl Export {
    pub fn name(self) -> &'static str {
        match self {
            Export::Manifest => "manifest",
            Export::Invoke => "invoke",
            Export::HandleWebhook => "handle_webhook",
            Export::Handoff => "handoff",
        }
    }
}

/// Vendor HTTP as the install allows it.
#[derive(Debug, Clone)]
pub(crate) struct Outbound {
    pub client: OutboundClient,
    pub hosts: Arc<ApprovedHosts>,
}

/// What the platform gives a call. `None` fields refuse their host functions (the `manifest`
/// export runs with everything refusing).
#[derive(Debug)]
pub struct CallContext {
    pub(crate) export: Export,
    /// The install's non-secret configuration (`config_get`).
    pub(crate) config: Map<String, Value>,
    pub(crate) secrets: Secrets,
    pub(crate) outbound: Option<Outbound>,
    pub(crate) documents: Option<DocumentAccess>,
    pub(crate) deadline: Instant,
}

impl CallContext {
    /// A context in which every platform function refuses: no tenant, configuration, secrets,
    /// network or documents (the `manifest` export runs so).
    pub fn refusing(export: Export, deadline: Instant) -> Self {
        Self {
            export,
            config: Map::new(),
            secrets: Secrets::default(),
            outbound: None,
            documents: None,
            deadline,
        }
    }
}

/// What a call used (SPEC 2.4 `usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub http_requests: u32,
    pub document_reads: u32,
    pub log_lines: u32,
}

/// The store data of one call.
#[derive(Debug)]
pub(crate) struct CallState {
    pub arena: Arena,
    /// `(handle, length)` of the input block.
    pub input: (u64, u64),
    /// `(offset, length)` the module set with `output_set`.
    pub output: Option<(u64, u64)>,
    /// Handle the module set with `error_set` (0: none).
    pub error: u64,
    pub vars: Vars,
    pub http_budget: RequestBudget,
    pub http_status: i32,
    pub http_headers: Option<Vec<(String, String)>>,
    pub document_reads: u32,
    pub logs: LogSink,
    pub limits: StoreLimits,
    pub context: CallContext,
}

impl CallState {
    /// A call's state with `input` already in the kernel arena. The arena gets the same budget
    /// as the module's memory.
    pub(crate) fn new(context: CallContext, input: &[u8], memory_bytes: usize) -> Self {
        let mut arena = Arena::new(memory_bytes as u64);
        let handle = arena.put(input).unwrap_or(0);
        let length = if handle == 0 { 0 } else { input.len() as u64 };
        Self {
            arena,
            input: (handle, length),
            output: None,
            error: 0,
            vars: Vars::default(),
            http_budget: RequestBudget::default(),
            http_status: 0,
            http_headers: None,
            document_reads: 0,
            logs: LogSink::default(),
            limits: StoreLimitsBuilder::new()
                .memory_size(memory_bytes)
                .instances(1)
                .tables(4)
                .table_elements(100_000)
                .memories(1)
                .trap_on_grow_failure(false)
                .build(),
            context,
        }
    }

    pub(crate) fn usage(&self) -> Usage {
        Usage {
            http_requests: self.http_budget.used(),
            document_reads: self.document_reads,
            log_lines: self.logs.lines(),
        }
    }

    /// Time left before the call's deadline.
    pub(crate) fn remaining(&self) -> std::time::Duration {
        self.context
            .deadline
            .saturating_duration_since(Instant::now())
    }
}
