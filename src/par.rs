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
