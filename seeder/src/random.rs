//! The randomness of a seeded history: every draw comes from a generator derived from the
//! command's seed and what is being drawn (a tenant, an hour of the timeline), so a part of the
//! history is the same whichever stream writes it and whatever else is generated before it.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use uuid::{Builder, Uuid};

/// What a generator is derived for, so two purposes never share a sequence.
#[derive(Debug, Clone, Copy)]
pub(super) enum Purpose {
    Population,
    Hour(usize),
}

/// The generator of `purpose` under `seed`.
pub(super) fn generator(seed: u64, purpose: Purpose) -> SmallRng {
    let stream = match purpose {
        Purpose::Population => 0,
        Purpose::Hour(hour) => 1 + hour as u64,
    };
    SmallRng::seed_from_u64(mix(seed ^ mix(stream)))
}

/// SplitMix64's finaliser: nearby inputs give unrelated outputs.
pub(super) fn mix(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A random (version 4) UUID drawn from `rng`.
pub(super) fn uuid_v4(rng: &mut impl Rng) -> Uuid {
    Builder::from_random_bytes(rng.random()).into_uuid()
}

/// A version 4 UUID that is a pure function of `a` and `b` (a tenant's subject by number), so
/// it is computed where it is needed instead of kept in a table.
pub(super) fn hashed_uuid(a: u64, b: u64) -> Uuid {
    let high = mix(a ^ mix(b));
    let low = mix(high ^ b);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&high.to_le_bytes());
    bytes[8..].copy_from_slice(&low.to_le_bytes());
    Builder::from_random_bytes(bytes).into_uuid()
}

/// A time-ordered (version 7) UUID of the instant `micros` (since the Unix epoch), as
/// `Uuid::new_v7` makes it, with the random part drawn from `rng` so it is reproducible.
pub(super) fn uuid_v7(rng: &mut impl Rng, micros: i64) -> Uuid {
    let millis = u64::try_from(micros / 1000).unwrap_or_default();
    Builder::from_unix_timestamp_millis(millis, &rng.random()).into_uuid()
}

/// A draw from the standard normal distribution (Box–Muller).
pub(super) fn standard_normal(rng: &mut impl Rng) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A log-normal draw with the given median and shape (`sigma` of the underlying normal).
pub(super) fn log_normal(rng: &mut impl Rng, median: f64, sigma: f64) -> f64 {
    median * (sigma * standard_normal(rng)).exp()
}

/// An index into `cumulative` (ascending running totals of weights) drawn by weight.
pub(super) fn pick(rng: &mut impl Rng, cumulative: &[f64]) -> usize {
    let total = cumulative.last().copied().unwrap_or_default();
    let at = rng.random::<f64>() * total;
    cumulative
        .partition_point(|&sum| sum <= at)
        .min(cumulative.len().saturating_sub(1))
}

/// Running totals of `weights`, for [`pick`].
pub(super) fn cumulative(weights: impl IntoIterator<Item = f64>) -> Vec<f64> {
    weights
        .into_iter()
        .scan(0.0, |sum, weight| {
            *sum += weight;
            Some(*sum)
        })
        .collect()
}

/// One of `items`, uniformly.
pub(super) fn one_of<T: Copy>(rng: &mut impl Rng, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_purpose_draws_the_same_sequence_under_one_seed_and_another_under_another() {
        let draw = |seed, purpose| generator(seed, purpose).random::<u64>();
        assert_eq!(draw(7, Purpose::Hour(3)), draw(7, Purpose::Hour(3)));
        assert_ne!(draw(7, Purpose::Hour(3)), draw(7, Purpose::Hour(4)));
        assert_ne!(draw(7, Purpose::Hour(3)), draw(8, Purpose::Hour(3)));
        assert_ne!(draw(7, Purpose::Population), draw(7, Purpose::Hour(0)));
    }

    #[test]
    fn time_ordered_ids_carry_their_millisecond() {
        let mut rng = generator(1, Purpose::Population);
        let micros = 1_700_000_000_123_456;
        let id = uuid_v7(&mut rng, micros);
        assert_eq!(id.get_version_num(), 7);
        let (seconds, nanos) = id.get_timestamp().expect("v7").to_unix();
        assert_eq!(seconds, 1_700_000_000);
        assert_eq!(nanos, 123_000_000);
    }

    #[test]
    fn picks_follow_the_weights() {
        let mut rng = generator(2, Purpose::Population);
        let weights = cumulative([1.0, 0.0, 3.0]);
        let mut counts = [0usize; 3];
        for _ in 0..40_000 {
            counts[pick(&mut rng, &weights)] += 1;
        }
        assert_eq!(counts[1], 0);
        let share = counts[2] as f64 / 40_000.0;
        assert!((0.73..0.77).contains(&share), "{share}");
    }
}
