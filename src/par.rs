//! Order-preserving parallel map over a slice, on the machine's cores (scoped threads, no
//! pool): reading and parsing thousands of small files is the hot path of every command.

pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_with(items, || (), |_, item| f(item))
}

/// `map`, each thread with its own state from `init` (a folder kept open across the items
/// of its share, say).
pub fn map_with<T: Sync, S, R: Send>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    // Asked once per run: each answer reads the cgroup's CPU quota from /sys.
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let threads = *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(16)
    });
    let share = |c: &[T]| {
        let mut state = init();
        c.iter().map(|item| f(&mut state, item)).collect::<Vec<R>>()
    };
    if threads < 2 || items.len() < 64 {
        return share(items);
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items.chunks(chunk).map(|c| s.spawn(|| share(c))).collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// A value being freed on a thread of its own while the caller goes on: a large build's
/// objects take a tenth of a second and more to free. Dropping it waits for that thread, so
/// that nothing is still being freed when a command ends (the allocator's own exit runs on
/// the heap then).
#[must_use = "dropped at once, it waits for the value to be freed"]
pub struct Freeing(Option<std::thread::JoinHandle<()>>);

impl Freeing {
    pub fn start<T: Send + 'static>(value: T) -> Freeing {
        // A thread that cannot be spawned drops its closure, and `value` with it, here.
        Freeing(std::thread::Builder::new().spawn(move || drop(value)).ok())
    }
}

impl Drop for Freeing {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            // Freeing panics only where a drop does; that was reported on its thread.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};

    /// Sets its flag when it is freed, which waits for the word to go on.
    struct Held(mpsc::Receiver<()>, Arc<AtomicBool>);

    impl Drop for Held {
        fn drop(&mut self) {
            let _ = self.0.recv();
            self.1.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn freeing_goes_on_beside_the_caller_and_is_done_once_dropped() {
        let (go, wait) = mpsc::channel();
        let freed = Arc::new(AtomicBool::new(false));
        let freeing = super::Freeing::start(Held(wait, freed.clone()));
        // The caller goes on while the value is being freed...
        assert!(!freed.load(Ordering::SeqCst));
        go.send(()).unwrap();
        drop(freeing);
        // ...and nothing is still being freed once the handle is gone.
        assert!(freed.load(Ordering::SeqCst));
    }
}
