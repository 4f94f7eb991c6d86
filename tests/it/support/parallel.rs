//! Exhaustive loops (a cut at every byte, …) spread over the machine's cores: each
//! case is independent, and one thread would leave the other cores idle.

/// Runs `case` for every item, on as many threads as there are cores. A panicking
/// case fails the test with its own message.
pub fn for_each_parallel<T: Send, F: Fn(T) + Sync>(items: impl IntoIterator<Item = T>, case: F) {
    let items: Vec<T> = items.into_iter().collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let queue = std::sync::Mutex::new(items.into_iter());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                match next {
                    Some(item) => case(item),
                    None => break,
                }
            });
        }
    });
}
