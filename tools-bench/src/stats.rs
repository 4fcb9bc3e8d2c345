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

/// Beyond this many degrees of freedom Student's t is the normal
/// distribution to within 1e-6 relative, and df is clamped to it: statrs
/// computes the tail exactly up to there, but past about 1e15 (and for an
/// infinite df) its tail goes wrong and t975() would come out infinite.
#[cfg(feature = "report")]
const MAX_DF: f64 = 1e6;

/// Student's t with `df` > 0 degrees of freedom (fractional too: the
/// Welch-Satterthwaite df are), from the maintained `statrs` crate; None
/// for df that is not positive.
#[cfg(feature = "report")]
fn students_t(df: f64) -> Option<statrs::distribution::StudentsT> {
    if df.is_nan() || df <= 0.0 {
        return None;
    }
    statrs::distribution::StudentsT::new(0.0, 1.0, df.min(MAX_DF)).ok()
}

/// P(T > t) for Student's t with `df` > 0 degrees of freedom. NaN for df
/// that is not positive.
#[cfg(feature = "report")]
pub fn t_upper_tail(t: f64, df: f64) -> f64 {
    use statrs::distribution::ContinuousCDF;
    match students_t(df) {
        Some(d) if !t.is_nan() => d.sf(t),
        _ => f64::NAN,
    }
}

/// The 0.975 quantile of Student's t distribution with `df` degrees of
/// freedom (the factor of a two-sided 95% interval), for any df > 0 -
/// Welch-Satterthwaite degrees of freedom are fractional: the inverse of
/// t_upper_tail() by bisection, to 1e-12 relative (statrs' own quantile
/// is off by 1e-4 at large df and gives up below df 0.1). NaN for df that
/// is not positive, infinite where it is beyond f64 (df below about
/// 0.005).
#[cfg(feature = "report")]
pub fn t975(df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    // The quantile is above the normal one (1.96) for every df: bracket it
    // from 1 by doubling, where the tail is monotone - up to where t²
    // overflows (t ~ 1.3e154), past which statrs' tail is not computed:
    // a quantile there counts as beyond f64.
    let (mut lo, mut hi) = (1.0f64, 2.0f64);
    while t_upper_tail(hi, df) >= 0.025 {
        lo = hi;
        hi *= 2.0;
        if !(hi * hi).is_finite() {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if t_upper_tail(mid, df) >= 0.025 {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * lo {
            break;
        }
    }
    lo + (hi - lo) / 2.0
}

/// The ratio of two means with its 95% confidence interval.
#[cfg(feature = "report")]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// The two-sided p-value of the same t statistic (the log of the ratio
    /// over its standard error, Welch's df): below 0.05 exactly when the
    /// interval excludes 1, and what a correction for many comparisons
    /// works with.
    pub p: f64,
}

/// A ratio without an interval, and why: the data cannot give one. It must
/// never read as a difference the data show.
#[cfg(feature = "report")]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NotEstimable {
    /// The ratio itself, when both means are positive numbers.
    pub ratio: Option<f64>,
    pub why: &'static str,
}

#[cfg(feature = "report")]
impl Ratio {
    /// `a.mean / b.mean`, the interval from the log of the ratio: its
    /// standard error by the delta method, sqrt(sd_a^2 / (n_a mean_a^2) +
    /// sd_b^2 / (n_b mean_b^2)), and Student's t with the Welch-Satterthwaite
    /// degrees of freedom. Not estimable with a mean that is not a positive
    /// number (NaN, infinite, zero: nothing to divide), with fewer than two
    /// measurements on a side, or with no spread on either side - a
    /// zero-width interval there would claim a certainty that two sets of
    /// identical numbers (rounded, or copied) do not give.
    pub fn of(a: &MeanSd, b: &MeanSd) -> Result<Ratio, NotEstimable> {
        let positive = |m: &MeanSd| m.mean.is_finite() && m.mean > 0.0;
        let ratio = a.mean / b.mean;
        if !positive(a) || !positive(b) || !ratio.is_finite() || ratio <= 0.0 {
            return Err(NotEstimable {
                ratio: None,
                why: "a mean that is not a positive number",
            });
        }
        let not = |why| {
            Err(NotEstimable {
                ratio: Some(ratio),
                why,
            })
        };
        if a.n < 2 || b.n < 2 {
            return not("fewer than two measurements on a side");
        }
        if !(a.sd.is_finite() && b.sd.is_finite() && a.sd >= 0.0 && b.sd >= 0.0) {
            return not("a standard deviation that is not a number");
        }
        let va = (a.sd / a.mean).powi(2) / a.n as f64;
        let vb = (b.sd / b.mean).powi(2) / b.n as f64;
        let se = (va + vb).sqrt();
        if se == 0.0 {
            return not("no spread on either side");
        }
        let df = (va + vb).powi(2) / (va * va / (a.n - 1) as f64 + vb * vb / (b.n - 1) as f64);
        let k = (t975(df) * se).exp();
        let (lo, hi) = (ratio / k, ratio * k);
        if !(se.is_finite() && lo.is_finite() && hi.is_finite() && lo > 0.0) {
            return not("an interval beyond the range of numbers");
        }
        let p = 2.0 * t_upper_tail(ratio.ln().abs() / se, df);
        Ok(Ratio { ratio, lo, hi, p })
    }

    /// The ratio of paired values `(a_i, b_i)` - two configurations measured
    /// in the same block (a boot, or one round of alternating boots) - as the
    /// geometric mean of the pairs' ratios: the log ratios' mean, their
    /// standard error sd / sqrt(n) and Student's t at n - 1 degrees of
    /// freedom. What shifts both members of a pair alike cancels. Not
    /// estimable with fewer than two pairs, a value that is not a positive
    /// number, or log ratios without spread.
    pub fn paired(pairs: &[(f64, f64)]) -> Result<Ratio, NotEstimable> {
        if pairs
            .iter()
            .any(|&(a, b)| !(a.is_finite() && b.is_finite() && a > 0.0 && b > 0.0))
        {
            return Err(NotEstimable {
                ratio: None,
                why: "a value that is not a positive number",
            });
        }
        let d: Vec<f64> = pairs.iter().map(|&(a, b)| (a / b).ln()).collect();
        let m = MeanSd::of(&d);
        let ratio = m.mean.exp();
        let not = |why| {
            Err(NotEstimable {
                ratio: (!d.is_empty()).then_some(ratio),
                why,
            })
        };
        if m.n < 2 {
            return not("fewer than two pairs");
        }
        let se = m.sd / (m.n as f64).sqrt();
        // Pairs whose ratios agree but for rounding have no spread either:
        // a standard error of 1e-17 would claim a certainty they do not give.
        if !se.is_finite() || se <= 1e-12 {
            return not("no spread over the pairs");
        }
        let df = (m.n - 1) as f64;
        let k = (t975(df) * se).exp();
        let (lo, hi) = (ratio / k, ratio * k);
        if !(ratio.is_finite() && lo.is_finite() && hi.is_finite() && lo > 0.0) {
            return not("an interval beyond the range of numbers");
        }
        let p = 2.0 * t_upper_tail(m.mean.abs() / se, df);
        Ok(Ratio { ratio, lo, hi, p })
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

/// The Holm-Bonferroni procedure at familywise level `alpha`: which of the
/// hypotheses with p-values `p` it rejects. The smallest p-value is held to
/// alpha/m, the next to alpha/(m - 1), and so on until one fails; that one
/// and all larger stand. A NaN p-value is never rejected (and counts in m).
#[cfg(feature = "report")]
pub fn holm(p: &[f64], alpha: f64) -> Vec<bool> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    // total_cmp puts NaN after every number.
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut rejected = vec![false; m];
    for (k, &i) in order.iter().enumerate() {
        if p[i].is_nan() || p[i] > alpha / (m - k) as f64 {
            break;
        }
        rejected[i] = true;
    }
    rejected
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

    #[cfg(feature = "report")]
    #[test]
    fn paired_ratios_cancel_what_shifts_a_pair() {
        // Three blocks, each twice as fast as the one before for both
        // configurations: unpaired, the spread of the blocks swamps the
        // ratio; paired, only the pairs' own ratios count.
        let a = [2.0, 4.2, 7.6];
        let b = [1.0, 2.0, 4.0];
        let pairs: Vec<(f64, f64)> = a.iter().copied().zip(b.iter().copied()).collect();
        let r = Ratio::paired(&pairs).expect("estimable");
        let d = [2.0f64.ln(), 2.1f64.ln(), 1.9f64.ln()];
        let m = MeanSd::of(&d);
        assert!((r.ratio - m.mean.exp()).abs() < 1e-12);
        let k = (t975(2.0) * m.sd / 3f64.sqrt()).exp();
        assert!((r.lo - r.ratio / k).abs() < 1e-12 && (r.hi - r.ratio * k).abs() < 1e-12);
        assert!(r.significant() && r.p < 0.05);
        // The two-sided p of t = mean / se at n - 1 = 2 degrees of freedom,
        // whose upper tail is (1 - t / sqrt(2 + t^2)) / 2 in closed form.
        let t = m.mean.abs() / (m.sd / 3f64.sqrt());
        assert!(
            (r.p - (1.0 - t / (2.0 + t * t).sqrt())).abs() < 1e-9,
            "p {}",
            r.p
        );
        let unpaired = Ratio::of(&MeanSd::of(&a), &MeanSd::of(&b)).expect("estimable");
        assert!(!unpaired.significant());
        assert!(unpaired.half_width() > 5.0 * r.half_width());
        // What the data cannot give.
        assert_eq!(
            Ratio::paired(&[(2.0, 1.0)]).unwrap_err().why,
            "fewer than two pairs"
        );
        assert_eq!(
            Ratio::paired(&[(2.0, 1.0), (4.0, 2.0)]).unwrap_err().why,
            "no spread over the pairs"
        );
        assert_eq!(
            Ratio::paired(&[(2.0, 1.0), (0.0, 2.0)]).unwrap_err().ratio,
            None
        );
        // Equal ratios but for rounding.
        assert_eq!(
            Ratio::paired(&[(0.3, 0.1), (0.6, 0.2), (0.9, 0.3)])
                .unwrap_err()
                .why,
            "no spread over the pairs"
        );
        assert_eq!(Ratio::paired(&[]).unwrap_err().ratio, None);
    }

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
        // Student's t, two-sided 95%, including fractional degrees of
        // freedom (df 1.5 and 2.5 from the regularized incomplete beta
        // function at 30 digits, and by integrating the density).
        for (df, t) in [
            (1.0, 12.706_205),
            (1.2, 8.648_827),
            (1.5, 6.016_663),
            (2.0, 4.302_653),
            (2.5, 3.574_655),
            (3.0, 3.182_446),
            (5.0, 2.570_582),
            (10.0, 2.228_139),
            (30.0, 2.042_272),
            (120.0, 1.979_930),
            (1e4, 1.960_201),
            (1e6, 1.959_966),
            (1e300, 1.959_966),
            (f64::INFINITY, 1.959_966),
        ] {
            assert!(
                (t975(df) - t).abs() / t < 1e-5,
                "df {df}: {} want {t}",
                t975(df)
            );
        }
        // The old step: every df in (1, 2] got 4.303.
        assert!(t975(1.01) > 12.0 && t975(1.99) < 4.35);
        // Monotone in df.
        let mut last = f64::INFINITY;
        for i in 1..400 {
            let t = t975(i as f64 / 20.0);
            assert!(t < last, "df {}: {t} >= {last}", i as f64 / 20.0);
            last = t;
        }
        assert!(t975(0.5) > 160.0 && t975(0.5) < 170.0);
        assert!(t975(0.0).is_nan() && t975(-1.0).is_nan() && t975(f64::NAN).is_nan());
        assert_eq!(t975(1e-3), f64::INFINITY);
    }

    #[cfg(feature = "report")]
    #[test]
    fn t_tails_match_closed_forms() {
        // df 1 is Cauchy: P(T > t) = atan(1/t)/pi; df 2: P(T > t) =
        // (1 - t/sqrt(2 + t²)) / 2 = 1 / (sqrt(2 + t²) (sqrt(2 + t²) + t)).
        for t in [0.0, 0.3, 1.0, 4.0, 50.0, 1e6] {
            let cauchy = f64::atan(1.0 / t) / std::f64::consts::PI;
            let s = (2.0 + t * t).sqrt();
            let two = 1.0 / (s * (s + t));
            let (c, d) = (t_upper_tail(t, 1.0), t_upper_tail(t, 2.0));
            assert!(
                (c - cauchy).abs() <= 1e-12 * cauchy,
                "df 1, t {t}: {c} want {cauchy}"
            );
            assert!((d - two).abs() <= 1e-9 * two, "df 2, t {t}: {d} want {two}");
        }
        assert!((t_upper_tail(-1.0, 1.0) - 0.75).abs() < 1e-12);
        assert!((t_upper_tail(t975(7.3), 7.3) - 0.025).abs() < 1e-12);
        assert!(t_upper_tail(1.0, 0.0).is_nan());
    }

    #[cfg(feature = "report")]
    #[test]
    fn ratio_intervals() {
        let a = MeanSd::of(&[2.0, 2.2, 1.8, 2.0]);
        let b = MeanSd::of(&[1.0, 1.1, 0.9, 1.0]);
        let r = Ratio::of(&a, &b).expect("estimable");
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
        assert_eq!(MeanSd::of(&[2.0, 4.0]).rel_sd(), 2f64.sqrt() / 3.0);
    }

    #[cfg(feature = "report")]
    #[test]
    fn p_values_agree_with_the_intervals() {
        let b = MeanSd::of(&[1.0, 1.1, 0.9, 1.0]);
        // From far apart to the same: p rises, and is below 0.05 exactly
        // when the interval excludes 1.
        let mut last = 0.0;
        for shift in [1.0, 0.5, 0.2, 0.15, 0.12, 0.1, 0.05, 0.0] {
            let a = MeanSd::of(&[1.0 + shift, 1.1 + shift, 0.9 + shift, 1.0 + shift]);
            let r = Ratio::of(&a, &b).expect("estimable");
            assert!(r.p >= last, "shift {shift}: p {} < {last}", r.p);
            assert_eq!(r.p < 0.05, r.significant(), "shift {shift}: p {}", r.p);
            last = r.p;
        }
        assert!((last - 1.0).abs() < 1e-12);
        // The same t: the log ratio over the standard error the interval
        // was made with, at df 6 (the same relative spread on both sides,
        // n = 4).
        let a = MeanSd::of(&[1.2, 1.32, 1.08, 1.2]);
        let r = Ratio::of(&a, &b).expect("estimable");
        let se = (r.hi / r.ratio).ln() / t975(6.0);
        assert!((2.0 * t_upper_tail(r.ratio.ln() / se, 6.0) - r.p).abs() < 1e-12);
    }

    #[cfg(feature = "report")]
    #[test]
    fn holm_steps_down() {
        // Sorted: 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop.
        assert_eq!(
            holm(&[0.01, 0.04, 0.03, 0.005], 0.05),
            [true, false, false, true]
        );
        // All below their thresholds.
        assert_eq!(holm(&[0.04, 0.001, 0.02], 0.05), [true, true, true]);
        // One comparison: the plain test.
        assert_eq!(holm(&[0.049], 0.05), [true]);
        assert_eq!(holm(&[0.051], 0.05), [false]);
        // Significant alone, not over 10 comparisons.
        assert_eq!(holm(&[0.01; 10], 0.05), [false; 10]);
        // A NaN is never rejected, and still counts.
        assert_eq!(holm(&[f64::NAN, 0.02], 0.05), [false, true]);
        assert_eq!(holm(&[f64::NAN, 0.03], 0.05), [false, false]);
        assert!(holm(&[], 0.05).is_empty());
    }

    #[cfg(feature = "report")]
    #[test]
    fn ratios_without_an_interval_are_not_estimable() {
        let b = MeanSd::of(&[1.0, 1.1, 0.9, 1.0]);
        let not = |a: &MeanSd, b: &MeanSd| Ratio::of(a, b).err().map(|e| e.ratio);
        // Too few measurements: the ratio, no interval.
        assert_eq!(not(&MeanSd::of(&[2.0]), &b), Some(Some(2.0)));
        assert_eq!(not(&b, &MeanSd::of(&[2.0])), Some(Some(0.5)));
        // No spread on either side: not a zero-width, "significant"
        // interval.
        let two = MeanSd::of(&[2.0, 2.0, 2.0]);
        let one = MeanSd::of(&[1.0, 1.0]);
        let e = Ratio::of(&two, &one).expect_err("no spread");
        assert_eq!((e.ratio, e.why), (Some(2.0), "no spread on either side"));
        // No spread on one side only: the other side's spread is the
        // interval.
        let r = Ratio::of(&two, &b).expect("one side spreads");
        assert!(r.lo < 2.0 && r.hi > 2.0);
        // Means that are not positive numbers: no ratio at all.
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let m = MeanSd {
                mean: bad,
                sd: 0.1,
                n: 4,
            };
            assert_eq!(not(&m, &b), Some(None), "mean {bad}");
            assert_eq!(not(&b, &m), Some(None), "mean {bad}");
        }
        assert_eq!(not(&MeanSd::default(), &b), Some(None));
        // A ratio beyond f64, and a spread that is not a number.
        let tiny = MeanSd {
            mean: 1e-300,
            sd: 1e-301,
            n: 4,
        };
        let huge = MeanSd {
            mean: 1e300,
            sd: 1e299,
            n: 4,
        };
        assert_eq!(not(&huge, &tiny), Some(None));
        let nan_sd = MeanSd {
            mean: 1.0,
            sd: f64::NAN,
            n: 4,
        };
        assert_eq!(not(&nan_sd, &b), Some(Some(1.0)));
    }
}
