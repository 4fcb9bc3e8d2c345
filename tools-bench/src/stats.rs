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

/// The 0.975 quantile of Student's t distribution with `df` degrees of
/// freedom (the factor of a two-sided 95% interval): exact for one and two
/// degrees, the Cornish-Fisher expansion (Abramowitz and Stegun 26.7.5)
/// above, which is within 0.1% of the tables from three degrees on.
#[cfg(feature = "report")]
pub fn t975(df: f64) -> f64 {
    const Z: f64 = 1.959_963_984_540_054;
    if df <= 1.0 {
        return 12.706_204_736_174_7;
    }
    if df <= 2.0 {
        return 4.302_652_729_749_464;
    }
    let z3 = Z.powi(3);
    let z5 = Z.powi(5);
    let z7 = Z.powi(7);
    let z9 = Z.powi(9);
    Z + (z3 + Z) / (4.0 * df)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * Z) / (96.0 * df * df)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * Z) / (384.0 * df.powi(3))
        + (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * Z) / (92160.0 * df.powi(4))
}

/// The ratio of two means with its 95% confidence interval.
#[cfg(feature = "report")]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
}

#[cfg(feature = "report")]
impl Ratio {
    /// `a.mean / b.mean`, the interval from the log of the ratio: its
    /// standard error by the delta method, sqrt(sd_a^2 / (n_a mean_a^2) +
    /// sd_b^2 / (n_b mean_b^2)), and Student's t with the Welch-Satterthwaite
    /// degrees of freedom. `None` without two measurements on each side or
    /// with a mean that is not positive.
    pub fn of(a: &MeanSd, b: &MeanSd) -> Option<Ratio> {
        if a.n < 2 || b.n < 2 || a.mean <= 0.0 || b.mean <= 0.0 {
            return None;
        }
        let va = (a.sd / a.mean).powi(2) / a.n as f64;
        let vb = (b.sd / b.mean).powi(2) / b.n as f64;
        let ratio = a.mean / b.mean;
        let se = (va + vb).sqrt();
        if se == 0.0 {
            return Some(Ratio {
                ratio,
                lo: ratio,
                hi: ratio,
            });
        }
        let df = (va + vb).powi(2) / (va * va / (a.n - 1) as f64 + vb * vb / (b.n - 1) as f64);
        let k = (t975(df) * se).exp();
        Some(Ratio {
            ratio,
            lo: ratio / k,
            hi: ratio * k,
        })
    }

    /// Whether the interval excludes 1: a difference this data shows.
    pub fn significant(&self) -> bool {
        self.lo > 1.0 || self.hi < 1.0
    }

    /// Half the width of the interval, relative to 1 (for "within ±3%").
    pub fn half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }
}

#[cfg(feature = "report")]
impl MeanSd {
    /// The standard deviation relative to the mean (0 for a zero mean).
    pub fn rel_sd(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            self.sd / self.mean
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

    #[cfg(feature = "report")]
    #[test]
    fn t_quantiles_match_the_tables() {
        // Student's t, two-sided 95%: df 1, 2, 3, 5, 10, 30, 120.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (5.0, 2.571),
            (10.0, 2.228),
            (30.0, 2.042),
            (120.0, 1.980),
        ] {
            assert!(
                (t975(df) - t).abs() / t < 2e-3,
                "df {df}: {} want {t}",
                t975(df)
            );
        }
    }

    #[cfg(feature = "report")]
    #[test]
    fn ratio_intervals() {
        let a = MeanSd::of(&[2.0, 2.2, 1.8, 2.0]);
        let b = MeanSd::of(&[1.0, 1.1, 0.9, 1.0]);
        let r = Ratio::of(&a, &b).unwrap();
        assert!((r.ratio - 2.0).abs() < 1e-12);
        assert!(r.lo < 2.0 && r.hi > 2.0 && r.significant());
        // The interval is symmetric on the log scale.
        assert!(((r.hi / r.ratio) - (r.ratio / r.lo)).abs() < 1e-12);
        // Same relative spread on both sides, n = 4: se = sqrt(2 * 0.0816^2 / 4),
        // df = 6, t = 2.447.
        let cv = a.sd / a.mean;
        let se = (2.0 * cv * cv / 4.0f64).sqrt();
        assert!(((r.hi / r.ratio).ln() - t975(6.0) * se).abs() < 1e-9);
        // Overlapping sets: not significant.
        let c = MeanSd::of(&[1.05, 0.95, 1.1, 0.9]);
        assert!(!Ratio::of(&c, &b).unwrap().significant());
        // Too few measurements, or no rate.
        assert_eq!(Ratio::of(&MeanSd::of(&[1.0]), &b), None);
        assert_eq!(Ratio::of(&MeanSd::default(), &b), None);
        assert_eq!(MeanSd::of(&[2.0, 4.0]).rel_sd(), 2f64.sqrt() / 3.0);
    }
}
