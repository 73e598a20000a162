//! Who calls in a seeded history: tenants of very different sizes (a few large, many small),
//! the apps each installed (and the versions they moved through), the workflows that call them
//! and the subjects they check. Everything is drawn from the seed alone, so the same command
//! names the same tenants and apps.

use rand::Rng;
use rand::rngs::SmallRng;
use uuid::Uuid;

use super::catalogue::{APPS, Action, App};
use super::random::{self, Purpose};
use super::vocabulary::WORKFLOWS;

/// Tenant `k` (from 0) has a share proportional to `1 / (k + 1)^ZIPF`.
const ZIPF: f64 = 1.1;
/// The largest tenants were there from the start; the others joined during the span.
const FOUNDING_TENANTS: usize = 3;
/// A tenant that joined reaches its full traffic over this share of the span (about 90 days
/// of three years).
const RAMP_UP: f64 = 0.08;
/// Rows per distinct subject a tenant checks, on average.
const ROWS_PER_SUBJECT: f64 = 8.0;
/// The most steps a workflow has (a run's retries add rows up to `history::RUN_ROWS`).
const MOST_STEPS: usize = 5;

#[derive(Debug)]
pub(super) struct Population {
    tenants: Vec<Tenant>,
}

#[derive(Debug)]
pub(super) struct Tenant {
    pub(super) id: Uuid,
    /// Its share of the traffic once ramped up.
    weight: f64,
    /// Where in the span (0 to 1) it made its first call.
    joined: f64,
    pub(super) installs: Vec<Install>,
    install_weights: Vec<f64>,
    pub(super) workflows: Vec<Workflow>,
    workflow_weights: Vec<f64>,
    subjects: u64,
}

/// An app as one tenant installed it.
#[derive(Debug)]
pub(super) struct Install {
    pub(super) app: &'static App,
    /// Each version's id and where in the span (0 to 1) the tenant upgraded to it, ascending.
    versions: Vec<(f64, Uuid)>,
}

/// A workflow definition: its steps call apps in order.
#[derive(Debug)]
pub(super) struct Workflow {
    /// Its definition key, distinct among the tenant's workflows.
    pub(super) key: &'static str,
    pub(super) steps: Vec<Step>,
}

#[derive(Debug)]
pub(super) struct Step {
    pub(super) install: usize,
    pub(super) action: usize,
}

impl Population {
    /// `tenants` tenants sharing about `rows` invocations.
    pub(super) fn new(seed: u64, tenants: usize, rows: u64) -> Self {
        let mut rng = random::generator(seed, Purpose::Population);
        let weights: Vec<f64> = (0..tenants)
            .map(|rank| 1.0 / (rank as f64 + 1.0).powf(ZIPF))
            .collect();
        let total: f64 = weights.iter().sum();
        let tenants = weights
            .iter()
            .enumerate()
            .map(|(rank, &weight)| {
                let rows = rows as f64 * weight / total;
                Tenant::new(&mut rng, rank, tenants, weight, rows)
            })
            .collect();
        Self { tenants }
    }

    pub(super) fn tenants(&self) -> &[Tenant] {
        &self.tenants
    }

    /// Running totals of the tenants' traffic at `progress` (0 to 1) through the span.
    pub(super) fn traffic_at(&self, progress: f64) -> Vec<f64> {
        random::cumulative(self.tenants.iter().map(|t| t.weight_at(progress)))
    }
}

impl Tenant {
    fn new(rng: &mut SmallRng, rank: usize, tenants: usize, weight: f64, rows: f64) -> Self {
        let id = random::uuid_v4(rng);
        let joined = if rank < FOUNDING_TENANTS {
            0.0
        } else {
            rng.random_range(0.0..0.85)
        };
        let installs = choose_apps(rng, rank, tenants)
            .into_iter()
            .map(|app| Install::new(rng, app, joined))
            .collect::<Vec<_>>();
        let install_weights = random::cumulative(
            installs
                .iter()
                .map(|_| rng.random_range(0.2..1.0f64).powi(2)),
        );
        // One to four workflows, each with its own key. The count stays an `i32` draw: another
        // integer type draws differently and would change every seeded history.
        let workflows = (0..rng.random_range(1..=4))
            .zip(WORKFLOWS)
            .map(|(k, &key)| Workflow::new(rng, &installs, key, k == 0))
            .collect::<Vec<_>>();
        let workflow_weights =
            random::cumulative((0..workflows.len()).map(|k| 1.0 / (k as f64 + 1.0)));
        Self {
            id,
            weight,
            joined,
            installs,
            install_weights,
            workflows,
            workflow_weights,
            subjects: (rows / ROWS_PER_SUBJECT).max(20.0) as u64,
        }
    }

    /// Its traffic at `progress` through the span: none before it joined, then ramping up.
    fn weight_at(&self, progress: f64) -> f64 {
        if progress < self.joined {
            return 0.0;
        }
        if self.joined == 0.0 {
            return self.weight;
        }
        self.weight * ((progress - self.joined) / RAMP_UP).clamp(0.05, 1.0)
    }

    /// An install, by how much the tenant calls it.
    pub(super) fn pick_install(&self, rng: &mut impl Rng) -> usize {
        random::pick(rng, &self.install_weights)
    }

    pub(super) fn pick_workflow(&self, rng: &mut impl Rng) -> &Workflow {
        &self.workflows[random::pick(rng, &self.workflow_weights)]
    }

    /// One of the subjects the tenant checks: the same ids recur across its invocations.
    pub(super) fn pick_subject(&self, rng: &mut impl Rng) -> (u64, Uuid) {
        let number = rng.random_range(0..self.subjects);
        let seed = self.id.as_u64_pair().0;
        (number, random::hashed_uuid(seed, number))
    }

    pub(super) fn app_names(&self) -> Vec<&'static str> {
        self.installs
            .iter()
            .map(|install| install.app.name)
            .collect()
    }
}

/// Three to eight apps, more for larger tenants, the popular ones (earlier in the catalogue)
/// more often: sampled by weight without replacement (Efraimidis–Spirakis keys).
fn choose_apps(rng: &mut SmallRng, rank: usize, tenants: usize) -> Vec<&'static App> {
    let size = 1.0 - rank as f64 / tenants as f64;
    let count = (3.0 + 5.0 * size * rng.random::<f64>() + rng.random::<f64>()).floor() as usize;
    let mut keyed: Vec<(f64, &'static App)> = APPS
        .iter()
        .enumerate()
        .map(|(k, app)| {
            let popularity = 1.0 / (1.0 + 0.3 * k as f64);
            (rng.random::<f64>().powf(1.0 / popularity), app)
        })
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    keyed.truncate(count.clamp(3, 8));
    keyed.into_iter().map(|(_, app)| app).collect()
}

impl Install {
    /// One to four versions, the first from when the tenant joined.
    fn new(rng: &mut SmallRng, app: &'static App, joined: f64) -> Self {
        let mut upgrades: Vec<f64> = (1..rng.random_range(1..=4))
            .map(|_| rng.random_range(joined..1.0))
            .collect();
        upgrades.sort_by(f64::total_cmp);
        let versions = std::iter::once(0.0)
            .chain(upgrades)
            .map(|from| (from, random::uuid_v4(rng)))
            .collect();
        Self { app, versions }
    }

    /// The version the tenant ran at `progress` through the span.
    pub(super) fn version_at(&self, progress: f64) -> Uuid {
        self.versions
            .iter()
            .rev()
            .find(|(from, _)| *from <= progress)
            .map_or(self.versions[0].1, |(_, id)| *id)
    }

    pub(super) fn action(&self, index: usize) -> &'static Action {
        &self.app.actions[index]
    }

    pub(super) fn pick_action(&self, rng: &mut impl Rng) -> usize {
        rng.random_range(0..self.app.actions.len())
    }
}

impl Workflow {
    /// One to five steps calling distinct installs; two or more for a tenant's `main` workflow
    /// (its onboarding, which checks a subject several ways).
    fn new(rng: &mut SmallRng, installs: &[Install], key: &'static str, main: bool) -> Self {
        let mut order: Vec<usize> = (0..installs.len()).collect();
        let fewest = if main { 2 } else { 1 };
        let steps = rng.random_range(fewest..=MOST_STEPS.min(installs.len()));
        // A partial Fisher–Yates shuffle: the first `steps` are a random ordered choice.
        for k in 0..steps {
            let other = rng.random_range(k..installs.len());
            order.swap(k, other);
        }
        let steps = order[..steps]
            .iter()
            .map(|&install| Step {
                install,
                action: installs[install].pick_action(rng),
            })
            .collect();
        Self { key, steps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_names_the_same_tenants_and_apps() {
        let first = Population::new(42, 20, 1_000_000);
        let again = Population::new(42, 20, 1_000_000);
        let other = Population::new(43, 20, 1_000_000);
        let ids = |p: &Population| p.tenants().iter().map(|t| t.id).collect::<Vec<_>>();
        let apps = |p: &Population| {
            p.tenants()
                .iter()
                .map(Tenant::app_names)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&first), ids(&again));
        assert_eq!(apps(&first), apps(&again));
        assert_ne!(ids(&first), ids(&other));
    }

    #[test]
    fn a_few_tenants_are_large_and_each_installs_three_to_eight_apps() {
        let population = Population::new(1, 20, 1_000_000);
        let shares = population.traffic_at(1.0);
        let total = shares[19];
        assert!(shares[2] / total > 0.4, "the top three carry much of it");
        assert!(shares[0] / total > 10.0 * (shares[19] - shares[18]) / total);
        for tenant in population.tenants() {
            assert!((3..=8).contains(&tenant.installs.len()));
            assert!((1..=WORKFLOWS.len()).contains(&tenant.workflows.len()));
            for (workflow, key) in tenant.workflows.iter().zip(WORKFLOWS) {
                assert_eq!(workflow.key, *key);
                assert!((1..=MOST_STEPS).contains(&workflow.steps.len()));
            }
        }
    }

    #[test]
    fn only_the_founding_tenants_call_at_the_start() {
        let population = Population::new(5, 20, 1_000_000);
        let start = population.traffic_at(0.0);
        let active = (0..20)
            .filter(|&k| start[k] > if k == 0 { 0.0 } else { start[k - 1] })
            .count();
        assert_eq!(active, FOUNDING_TENANTS);
    }
}
