// SPDX-License-Identifier: GPL-2.0
//! Summary statistics of repeated measurements.

use serde::{Deserialize, Serialize};

/// Mean and sample standard deviation of a set of measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MeanSd {
    pub mean: f64,
    pub sd: f64,
    pub n: usize,
}

impl MeanSd {
    /// Summarises `values`; the standard deviation of fewer than two values
    /// is 0.
    pub fn of(values: &[f64]) -> MeanSd {
        let n = values.len();
        if n == 0 {
            return MeanSd::default();
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd = if n < 2 {
            0.0
        } else {
            let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        };
        MeanSd { mean, sd, n }
    }
}

/// The `p`-th percentile (0..=100) of `values`, by linear interpolation
/// between the closest ranks; `None` for no values.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let rank = p.clamp(0.0, 100.0) / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

/// Latency percentiles of one set of calls, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub n: usize,
}

impl Percentiles {
    pub fn of(values: &[f64]) -> Percentiles {
        let p = |q| percentile(values, q).unwrap_or(0.0);
        Percentiles {
            p50: p(50.0),
            p90: p(90.0),
            p99: p(99.0),
            max: p(100.0),
            n: values.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_sd() {
        let s = MeanSd::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.n, 8);
        assert!((s.mean - 5.0).abs() < 1e-12);
        // Sample (n - 1) standard deviation: sqrt(32 / 7).
        assert!((s.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn degenerate_sets() {
        assert_eq!(MeanSd::of(&[]), MeanSd::default());
        let one = MeanSd::of(&[3.5]);
        assert_eq!((one.mean, one.sd, one.n), (3.5, 0.0, 1));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let v = [40.0, 10.0, 30.0, 20.0];
        assert_eq!(percentile(&v, 0.0), Some(10.0));
        assert_eq!(percentile(&v, 100.0), Some(40.0));
        assert_eq!(percentile(&v, 50.0), Some(25.0));
        // Rank 0.9 * 3 = 2.7: between 30 and 40.
        assert!((percentile(&v, 90.0).unwrap() - 37.0).abs() < 1e-12);
        // Out of range asks clamp.
        assert_eq!(percentile(&v, 150.0), Some(40.0));
        let p = Percentiles::of(&v);
        assert_eq!((p.p50, p.max, p.n), (25.0, 40.0, 4));
    }
}
