//! Counts of the work a run does that a history's step should do only for what it changes:
//! the environments built (not taken whole from the step before), the Flux Kustomizations
//! built afresh (not replayed from the step before), the footprints
//! worked out (what a partial Kustomization's build reads) and the manifests parsed. The test-only
//! `FLUXWAVE_TEST_STEP_COUNTS` prints them for each step of `cutover --each`, so that a test
//! holds a step's cost as a count, not a clock. A leaf: it imports nothing of the crate.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Builds of an environment's inventory (`inventory::build_pass`).
pub static ENVIRONMENT_BUILDS: AtomicUsize = AtomicUsize::new(0);
/// Builds of a Flux Kustomization made afresh (`FluxBuild::build_owner`).
pub static OWNER_BUILDS: AtomicUsize = AtomicUsize::new(0);
/// Footprints worked out (`inventory::footprint`).
pub static FOOTPRINTS: AtomicUsize = AtomicUsize::new(0);
/// Manifests parsed (`kustomize::resource::load`), not taken from a build before.
pub static PARSES: AtomicUsize = AtomicUsize::new(0);

/// Counts one more of `counter`.
pub fn add(counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The count of `counter` since the last `take`, which starts it again from 0.
pub fn take(counter: &AtomicUsize) -> usize {
    counter.swap(0, Ordering::Relaxed)
}
