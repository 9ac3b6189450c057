//! Property tests that count what they compared (docs/testing.md, "Cases compared").
//!
//! A property test whose cases can end early (the interpreter refuses, a graph is too large, a
//! draw has nothing to check) passes vacuously if they all do. [`run_property`] runs a proptest
//! strategy like `proptest!` does (same config, `PROPTEST_RNG_SEED`, regression file) and gives
//! each case a [`Tally`] to record whether it compared or why it skipped; at the end it prints
//! the counts (`tally NAME: compared C of N; skipped …`) and fails unless at least `min_share`
//! of the cases compared something (and at least one did).

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Mutex;

/// Counts of one property test's cases: compared, or skipped by reason.
#[derive(Debug, Default)]
pub struct Tally {
    counts: Mutex<(u64, BTreeMap<&'static str, u64>)>,
}

impl Tally {
    /// A case compared a backend's results with the oracle (or checked its property).
    pub fn compared(&self) {
        self.lock().0 += 1;
    }

    /// A case ended without comparing, for `why`.
    pub fn skipped(&self, why: &'static str) {
        *self.lock().1.entry(why).or_default() += 1;
    }

    /// Cases compared so far.
    pub fn compared_count(&self) -> u64 {
        self.lock().0
    }

    /// Cases skipped so far, for any reason.
    pub fn skipped_count(&self) -> u64 {
        self.lock().1.values().sum()
    }

    /// One line: `tally NAME: compared C of N; skipped: WHY K, …`.
    pub fn summary(&self, name: &str) -> String {
        let (compared, skipped) = &*self.lock();
        let total = compared + skipped.values().sum::<u64>();
        let why: Vec<String> = skipped.iter().map(|(w, k)| format!("{w} {k}")).collect();
        format!(
            "tally {name}: compared {compared} of {total}; skipped: {}",
            if why.is_empty() {
                "none".to_string()
            } else {
                why.join(", ")
            }
        )
    }

    /// Prints [`Tally::summary`] and panics unless at least one case and `min_share` of all
    /// compared.
    pub fn assert_share(&self, name: &str, min_share: f64) {
        let line = self.summary(name);
        eprintln!("{line}");
        let (compared, skipped) = (self.compared_count(), self.skipped_count());
        let total = compared + skipped;
        assert!(
            compared >= 1 && compared as f64 >= min_share * total as f64,
            "{line}: under the required share {min_share}"
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, BTreeMap<&'static str, u64>)> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs `test` on `cases` values of `strategy` as `proptest!` would (`PROPTEST_RNG_SEED` and
/// the other proptest variables honoured, failures saved next to `source_file` and replayed
/// first), then [`Tally::assert_share`]. `name` names the test in the summary line and the
/// config (`module_path!()`-style, any string); `source_file` is the test's `file!()`.
/// Cases proptest rejects (`prop_assume!`) are redrawn by proptest and not counted (up to
/// twenty draws a case).
pub fn run_property<S>(
    name: &'static str,
    source_file: &'static str,
    cases: u32,
    min_share: f64,
    strategy: S,
    test: impl Fn(S::Value, &Tally) -> Result<(), TestCaseError>,
) -> Tally
where
    S: Strategy,
    S::Value: Debug,
{
    let config = Config {
        test_name: Some(name),
        source_file: Some(source_file),
        // Tests redraw what they cannot check (`prop_assume!`) rather than pass it: room for
        // up to twenty draws a case.
        max_global_rejects: cases.saturating_mul(20).max(1024),
        ..Config::with_cases(cases)
    };
    let mut runner = TestRunner::new(config);
    let tally = Tally::default();
    if let Err(e) = runner.run(&strategy, |v| test(v, &tally)) {
        panic!("{e}\n{runner}");
    }
    tally.assert_share(name, min_share);
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_at_the_minimum_passes_and_the_summary_counts() {
        let t = Tally::default();
        t.compared();
        t.skipped("refused");
        t.skipped("refused");
        t.assert_share("t", 1.0 / 3.0);
        assert_eq!(
            t.summary("t"),
            "tally t: compared 1 of 3; skipped: refused 2"
        );
    }

    #[test]
    #[should_panic(expected = "under the required share")]
    fn a_share_under_the_minimum_fails() {
        let t = Tally::default();
        t.compared();
        t.skipped("refused");
        t.assert_share("t", 0.75);
    }

    #[test]
    #[should_panic(expected = "under the required share")]
    fn nothing_compared_fails_whatever_the_share() {
        Tally::default().assert_share("t", 0.0);
    }

    #[test]
    fn run_property_counts_every_case() {
        let t = run_property("t", file!(), 20, 1.0, 0u32..10, |_, tally| {
            tally.compared();
            Ok(())
        });
        assert_eq!(t.compared_count(), 20);
    }
}
