//! Admission: at most `APP_RUNNER_CONCURRENCY` calls in flight per process and
//! `APP_RUNNER_TENANT_CONCURRENCY` per tenant. Beyond either the answer is `busy` at once: the
//! worker retries, and a queue here would only hide the overload (SPEC §8).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use crate::Error;

#[derive(Debug)]
pub(crate) struct Admission {
    process_limit: usize,
    tenant_limit: usize,
    in_flight: Mutex<InFlight>,
}

#[derive(Debug, Default)]
struct InFlight {
    total: usize,
    by_tenant: HashMap<Uuid, usize>,
}

/// A call's place; released on drop.
#[derive(Debug)]
pub(crate) struct Admitted {
    admission: Arc<Admission>,
    tenant: Option<Uuid>,
}

impl Admission {
    pub(crate) fn new(process_limit: usize, tenant_limit: usize) -> Arc<Self> {
        Arc::new(Self {
            process_limit,
            tenant_limit,
            in_flight: Mutex::new(InFlight::default()),
        })
    }

    /// Takes a place for a call of `tenant` (`None`: an inspection, bound by the process limit
    /// only), or answers `busy`.
    pub(crate) fn admit(self: &Arc<Self>, tenant: Option<Uuid>) -> Result<Admitted, Error> {
        let mut in_flight = self.lock();
        if in_flight.total >= self.process_limit {
            return Err(Error::Busy("the runner has too many calls in flight"));
        }
        if let Some(tenant) = tenant {
            let count = in_flight.by_tenant.entry(tenant).or_insert(0);
            if *count >= self.tenant_limit {
                return Err(Error::Busy("the tenant has too many calls in flight"));
            }
            *count += 1;
        }
        in_flight.total += 1;
        drop(in_flight);
        // An up-down counter (SPEC Operations): +1 here, -1 when the call ends. Prometheus text
        // shows it as a gauge, as OpenTelemetry's exporter does with non-monotonic sums.
        metrics::gauge!("svc.app.calls.in_flight").increment(1.0);
        Ok(Admitted {
            admission: self.clone(),
            tenant,
        })
    }

    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut in_flight = self.admission.lock();
        in_flight.total -= 1;
        if let Some(tenant) = self.tenant
            && let Some(count) = in_flight.by_tenant.get_mut(&tenant)
        {
            *count -= 1;
            if *count == 0 {
                in_flight.by_tenant.remove(&tenant);
            }
        }
        drop(in_flight);
        metrics::gauge!("svc.app.calls.in_flight").decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fifth_call_of_a_tenant_and_the_ninth_of_the_process_are_busy() {
        let admission = Admission::new(8, 4);
        let a = Uuid::new_v4();
        let mut held: Vec<Admitted> = (0..4)
            .map(|_| admission.admit(Some(a)).expect("within the tenant limit"))
            .collect();
        assert!(matches!(admission.admit(Some(a)), Err(Error::Busy(_))));
        for _ in 0..4 {
            held.push(
                admission
                    .admit(Some(Uuid::new_v4()))
                    .expect("other tenants"),
            );
        }
        assert!(matches!(
            admission.admit(Some(Uuid::new_v4())),
            Err(Error::Busy(_))
        ));
        assert!(matches!(admission.admit(None), Err(Error::Busy(_))));
        held.truncate(3);
        assert_eq!(admission.in_flight(), 3);
        admission
            .admit(Some(a))
            .expect("a place of the tenant was released");
    }
}
