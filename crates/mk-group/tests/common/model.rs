//! What every model test of this crate shares: the seed loop (the seeds,
//! steps and replay from `MK_SEED`, `MK_SEEDS`, `MK_STEPS`; a failing seed
//! named in the panic) and the counters of the transitions a run reached,
//! so a generator that stopped producing one fails instead of passing
//! vacuously.
#![allow(unused_macros, unused_imports)]

use std::panic::{AssertUnwindSafe, catch_unwind};

/// The steps a model run took, newest last, for the failure message.
#[derive(Debug, Default)]
pub struct Trace(Vec<String>);

impl Trace {
    pub fn note(&mut self, step: String) {
        self.0.push(step);
    }

    /// Fails the run of `seed` with `msg` and its 25 latest steps.
    pub fn fail(&self, seed: u64, msg: &str) -> ! {
        let recent: Vec<&String> = self.0.iter().rev().take(25).collect();
        panic!("seed {seed}: {msg}\nrecent steps (newest first):\n{recent:#?}")
    }
}

/// How often the interesting transitions of a model happened.
pub trait Tally: Default + std::fmt::Debug {
    fn add(&mut self, other: &Self);
    /// Whether every required transition happened at least once.
    fn all_happened(&self) -> bool;
}

/// `tally!(Stats { required: [a, b], optional: [c] })`: a counter struct
/// with a `u64` per transition and its `Tally`; only the `required` ones
/// must happen in a full run.
macro_rules! tally {
    ($(#[$meta:meta])* $name:ident { required: [$($r:ident),* $(,)?], optional: [$($o:ident),* $(,)?] $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Default, Clone)]
        struct $name {
            $($r: u64,)*
            $($o: u64,)*
        }

        impl $crate::common::model::Tally for $name {
            fn add(&mut self, other: &Self) {
                $(self.$r += other.$r;)*
                $(self.$o += other.$o;)*
            }

            fn all_happened(&self) -> bool {
                [$(self.$r),*].iter().all(|n| *n > 0)
            }
        }
    };
}
pub(crate) use tally;

/// Runs `run(seed, steps)` for every seed (`MK_SEED` alone, else
/// `MK_SEEDS` or `default_seeds` of them) at `MK_STEPS` or `default_steps`
/// steps; a panic names its seed and how to replay it. Over several seeds,
/// every required transition must have happened.
pub fn run_seeds<S: Tally>(
    default_seeds: u64,
    default_steps: usize,
    run: impl Fn(u64, usize) -> S,
) {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let steps = env("MK_STEPS").map_or(default_steps, |s| {
        usize::try_from(s).unwrap_or(default_steps)
    });
    let seeds: Vec<u64> = match env("MK_SEED") {
        Some(seed) => vec![seed],
        None => (0..env("MK_SEEDS").unwrap_or(default_seeds)).collect(),
    };
    let single = seeds.len() == 1;
    let mut total = S::default();
    for seed in seeds {
        match catch_unwind(AssertUnwindSafe(|| run(seed, steps))) {
            Ok(stats) => total.add(&stats),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("model test failed for seed {seed} (replay with MK_SEED={seed}): {msg}");
            }
        }
    }
    assert!(
        single || total.all_happened(),
        "the generator no longer reaches every transition: {total:?}"
    );
}
