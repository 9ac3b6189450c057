//! A small fixed pool of worker threads that run the chunks of a kernel's parallel loop.
//!
//! Guarantees: a job over `0..extent` with `n` threads runs chunk `c` = `[extent·c/n,
//! extent·(c+1)/n)` on thread `c` (the caller runs chunk 0), so the split — and therefore every
//! result — depends only on `n`. Dispatching allocates nothing and blocks until every chunk is
//! done; concurrent dispatches are serialised. Dropping the pool joins its workers.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::KernelEntry;

#[derive(Clone, Copy)]
struct Job {
    entry: KernelEntry,
    table: *const *mut u8,
    extent: i64,
    chunks: usize,
}

// SAFETY: `table` points at the dispatching caller's pointer table, which outlives the job
// because `ThreadPool::run` does not return before every worker has finished with it; the
// buffers it points at are borrowed by that caller for the call's duration.
unsafe impl Send for Job {}

struct State {
    generation: u64,
    job: Option<Job>,
    pending: usize,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    start: Condvar,
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A pool of `threads` threads (the caller plus `threads - 1` workers).
pub struct ThreadPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    dispatch: Mutex<()>,
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool")
            .field("threads", &self.threads())
            .finish()
    }
}

fn chunk(extent: i64, chunks: usize, c: usize) -> (i64, i64) {
    let at = |k: usize| (i128::from(extent) * k as i128 / chunks as i128) as i64;
    (at(c), at(c + 1))
}

impl ThreadPool {
    /// A pool of `threads` threads in total (at least 1). If the OS refuses to start a worker,
    /// the pool has fewer threads; [`ThreadPool::threads`] tells how many.
    pub fn new(threads: usize) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                generation: 0,
                job: None,
                pending: 0,
                shutdown: false,
            }),
            start: Condvar::new(),
            done: Condvar::new(),
        });
        let mut workers = Vec::new();
        for index in 1..threads.max(1) {
            let shared = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("weft-worker-{index}"))
                .spawn(move || worker(&shared, index));
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(_) => break,
            }
        }
        Self {
            shared,
            workers,
            dispatch: Mutex::new(()),
        }
    }

    /// Number of threads that run chunks, including the caller.
    pub fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Runs `entry(table, begin, end)` for every chunk of `0..extent`.
    ///
    /// # Safety
    /// `entry` must be safe to call concurrently on disjoint sub-ranges of `0..extent` with
    /// `table`, and `table` must stay valid until this returns (it does not return before all
    /// chunks finish).
    pub(crate) unsafe fn run(&self, entry: KernelEntry, table: *const *mut u8, extent: i64) {
        let chunks = self.threads();
        if chunks == 1 {
            // SAFETY: forwarded from the caller's contract.
            unsafe { entry(table, 0, extent) };
            return;
        }
        let _serial = self.dispatch.lock().unwrap_or_else(|p| p.into_inner());
        {
            let mut st = self.shared.lock();
            st.job = Some(Job {
                entry,
                table,
                extent,
                chunks,
            });
            st.pending = chunks - 1;
            st.generation = st.generation.wrapping_add(1);
        }
        self.shared.start.notify_all();
        let (begin, end) = chunk(extent, chunks, 0);
        if begin < end {
            // SAFETY: forwarded from the caller's contract; chunk 0 is disjoint from the
            // workers' chunks.
            unsafe { entry(table, begin, end) };
        }
        let mut st = self.shared.lock();
        while st.pending > 0 {
            st = self.shared.done.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.job = None;
    }
}

fn worker(shared: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let job = {
            let mut st = shared.lock();
            while st.generation == seen && !st.shutdown {
                st = shared.start.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            if st.shutdown {
                return;
            }
            seen = st.generation;
            st.job
        };
        if let Some(job) = job {
            let (begin, end) = chunk(job.extent, job.chunks, index);
            if begin < end {
                // SAFETY: `ThreadPool::run`'s contract: the entry may run this disjoint chunk
                // concurrently and the table stays valid until every worker reports done.
                unsafe { (job.entry)(job.table, begin, end) };
            }
        }
        let mut st = shared.lock();
        st.pending = st.pending.saturating_sub(1);
        if st.pending == 0 {
            shared.done.notify_all();
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.start.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::chunk;

    #[test]
    fn chunks_partition_the_range() {
        for extent in [0i64, 1, 2, 5, 17] {
            for n in 1..5 {
                let mut next = 0;
                for c in 0..n {
                    let (b, e) = chunk(extent, n, c);
                    assert_eq!(b, next);
                    assert!(e >= b);
                    next = e;
                }
                assert_eq!(next, extent);
            }
        }
    }
}
