//! A small fixed pool of worker threads that run the chunks of kernels' parallel loops, for
//! several dispatching threads at once.
//!
//! Guarantees: a job over `0..extent` on a pool of `n` threads is split into the
//! `p = min(PIECES_PER_THREAD·n, extent)` chunks `[extent·c/p, extent·(c+1)/p)`, each run exactly
//! once by one thread; so the split — and therefore every result — depends only on `n` (and
//! the extent), not on which thread runs which chunk nor on what else runs. Several chunks per
//! thread let the dispatching thread take over the chunks of a worker the OS has not scheduled
//! yet (a shared machine), instead of waiting for it. Up to [`MAX_JOBS_IN_FLIGHT`] jobs (from different callers) are in flight at
//! once: workers take chunks from any of them, the dispatching thread takes chunks of its own
//! job only and waits only for its own job. A dispatch finding every slot taken runs its
//! chunks itself, one after another (the same split). Dispatching allocates nothing. A thread
//! waiting for work or for its job's last chunk spins briefly ([`SPIN_BEFORE_SLEEP`]) before it
//! sleeps. Dropping the pool joins its workers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::signature::KernelEntry;

/// How many dispatches can share the workers at once.
pub const MAX_JOBS_IN_FLIGHT: usize = 16;

/// Chunks a job is cut into per thread (fewer when the extent is shorter): enough to balance a
/// late worker, few enough that handing them out (a lock each) costs nothing next to a chunk.
pub const PIECES_PER_THREAD: usize = 4;

#[derive(Clone, Copy)]
struct Job {
    entry: KernelEntry,
    table: *const *mut u8,
    extent: i64,
    chunks: usize,
    /// The next chunk to hand out (`chunks`: all handed out).
    next: usize,
    /// Chunks handed out or not that have not finished.
    unfinished: usize,
}

// SAFETY: `table` points at the dispatching caller's pointer table, which outlives the job
// because `ThreadPool::run` does not return (nor free the job's slot) before every chunk has
// finished with it; the buffers it points at are borrowed by that caller for the call's
// duration.
unsafe impl Send for Job {}

impl Job {
    /// Hands out the next chunk, if any is left.
    fn take(&mut self) -> Option<usize> {
        (self.next < self.chunks).then(|| {
            self.next += 1;
            self.next - 1
        })
    }

    /// Runs chunk `c`.
    ///
    /// # Safety
    /// `ThreadPool::run`'s contract for the job, and `c` handed out by [`Job::take`] (so no
    /// other thread runs it).
    unsafe fn run_chunk(&self, c: usize) {
        let (begin, end) = chunk(self.extent, self.chunks, c);
        if begin < end {
            // SAFETY: forwarded from the caller's contract; chunks are disjoint and each is run
            // once.
            unsafe { (self.entry)(self.table, begin, end) };
        }
    }
}

struct Queue {
    jobs: [Option<Job>; MAX_JOBS_IN_FLIGHT],
    /// Workers that have started (so none does its start-up work, which allocates, later).
    started: usize,
    shutdown: bool,
}

impl Queue {
    /// A chunk left to hand out of any job: the job's slot, the chunk and the job.
    fn take_any(&mut self) -> Option<(usize, usize, Job)> {
        self.jobs.iter_mut().enumerate().find_map(|(slot, job)| {
            let job = job.as_mut()?;
            Some((slot, job.take()?, *job))
        })
    }

    /// Records that a chunk of the job in `slot` finished; true if it was the job's last.
    fn finish(&mut self, slot: usize) -> bool {
        match &mut self.jobs[slot] {
            Some(job) => {
                job.unfinished = job.unfinished.saturating_sub(1);
                job.unfinished == 0
            }
            None => false,
        }
    }
}

struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a job is queued (and at shutdown).
    work: Condvar,
    /// Signalled when a job's last chunk finishes (and when a worker starts).
    done: Condvar,
    /// Bumped, under the lock, whenever the queue changes in a way a waiter may wait for (a
    /// job queued, a chunk finished, shutdown), so a waiter can spin on it without the lock.
    epoch: AtomicU64,
}

/// How long a thread with nothing to do spins, watching for the queue to change, before it
/// sleeps on a condition variable. Waking a sleeping thread takes a system call and, on a
/// virtual machine whose other CPU has halted, tens of microseconds more; a host calling a
/// computation in a loop, or a dispatcher waiting for a worker's last chunk, is usually back
/// within this (the OpenMP and ONNX Runtime pools spin the same way).
pub const SPIN_BEFORE_SLEEP: Duration = Duration::from_micros(100);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks a change of the queue, which the caller holds the lock for; it then notifies
    /// the condition variable its waiters sleep on.
    fn changed(&self, _queue: &mut MutexGuard<'_, Queue>) {
        self.epoch.fetch_add(1, Ordering::Release);
    }

    /// Waits, with `queue` locked, until the queue may have changed: spins without the lock
    /// for up to [`SPIN_BEFORE_SLEEP`], then sleeps on `cv`. Returns the lock held again;
    /// the caller checks what it waits for (a wake-up may be for something else).
    fn wait<'a>(&'a self, queue: MutexGuard<'a, Queue>, cv: &Condvar) -> MutexGuard<'a, Queue> {
        let seen = self.epoch.load(Ordering::Relaxed);
        drop(queue);
        let start = Instant::now();
        let mut spins = 0u32;
        while self.epoch.load(Ordering::Acquire) == seen {
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(64) {
                std::hint::spin_loop();
            } else if start.elapsed() >= SPIN_BEFORE_SLEEP {
                break;
            } else {
                // Let another runnable thread of this CPU (another caller's dispatcher, when
                // more threads call than there are CPUs) have it now and then.
                std::thread::yield_now();
            }
        }
        let queue = self.lock();
        // Changes happen under the lock, so with it held an unchanged epoch means the change
        // is yet to come, and its notification will find this thread waiting.
        if self.epoch.load(Ordering::Relaxed) != seen {
            return queue;
        }
        cv.wait(queue).unwrap_or_else(|p| p.into_inner())
    }
}

/// A pool of `threads` threads (the callers plus `threads - 1` workers).
pub struct ThreadPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
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
    /// A pool of `threads` threads in total (at least 1), returned once every worker runs. If
    /// the OS refuses to start a worker, the pool has fewer threads; [`ThreadPool::threads`]
    /// tells how many.
    pub fn new(threads: usize) -> Self {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: [None; MAX_JOBS_IN_FLIGHT],
                started: 0,
                shutdown: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
            epoch: AtomicU64::new(0),
        });
        let mut workers = Vec::new();
        for index in 1..threads.max(1) {
            let shared = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("weft-worker-{index}"))
                .spawn(move || worker(&shared));
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(_) => break,
            }
        }
        // Wait until every worker runs, so the first dispatches find them ready.
        let mut queue = shared.lock();
        while queue.started < workers.len() {
            queue = shared.done.wait(queue).unwrap_or_else(|p| p.into_inner());
        }
        drop(queue);
        Self { shared, workers }
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
        let threads = self.threads();
        let chunks = if threads == 1 {
            1
        } else {
            (threads * PIECES_PER_THREAD).min(usize::try_from(extent).unwrap_or(0).max(1))
        };
        let mut job = Job {
            entry,
            table,
            extent,
            chunks,
            next: 0,
            unfinished: chunks,
        };
        let queued = if chunks == 1 {
            None
        } else {
            let mut queue = self.shared.lock();
            let free = queue.jobs.iter().position(Option::is_none);
            if let Some(slot) = free {
                queue.jobs[slot] = Some(job);
                self.shared.changed(&mut queue);
            }
            free
        };
        let Some(slot) = queued else {
            // One thread, or every slot taken: run every chunk here, in order.
            while let Some(c) = job.take() {
                // SAFETY: forwarded from the caller's contract; `c` was just handed out.
                unsafe { job.run_chunk(c) };
            }
            return;
        };
        self.shared.work.notify_all();
        // Work on this job's chunks until none is left to hand out, then wait for the workers
        // running the others.
        let mut queue = self.shared.lock();
        while let Some((c, job)) = queue.jobs[slot]
            .as_mut()
            .and_then(|mine| Some((mine.take()?, *mine)))
        {
            drop(queue);
            // SAFETY: forwarded from the caller's contract; `c` was handed out to this thread.
            unsafe { job.run_chunk(c) };
            queue = self.shared.lock();
            queue.finish(slot);
        }
        while queue.jobs[slot].is_some_and(|j| j.unfinished > 0) {
            queue = self.shared.wait(queue, &self.shared.done);
        }
        queue.jobs[slot] = None;
    }
}

/// The entry [`ThreadPool::run_fn`] dispatches: its "table" is a pointer to the closure.
unsafe extern "C" fn call_closure(table: *const *mut u8, begin: i64, end: i64) {
    // SAFETY: `run_fn` passes a pointer to a `&(dyn Fn(i64, i64) + Sync)` that lives until
    // every chunk has finished (`run` does not return before), and a shared reference to a
    // `Sync` closure may be used from any thread.
    let f = unsafe { &*table.cast::<&(dyn Fn(i64, i64) + Sync)>() };
    f(begin, end);
}

impl ThreadPool {
    /// Runs `f(begin, end)` for every chunk of `0..extent`, split as [`ThreadPool::run`]
    /// splits a kernel's range (so which items run together depends only on the thread count,
    /// and each item runs once). For work the runtime itself does per chunk (a GEMM's blocks);
    /// `f` must not panic (it runs behind a C-ABI entry, where a panic aborts).
    pub(crate) fn run_fn(&self, extent: i64, f: &(dyn Fn(i64, i64) + Sync)) {
        let holder: &(dyn Fn(i64, i64) + Sync) = f;
        let table = std::ptr::from_ref(&holder).cast::<*mut u8>();
        // SAFETY: `call_closure` only calls the `Sync` closure `table` points at, which is safe
        // from several threads on disjoint sub-ranges at once; `holder` outlives this call,
        // which waits for every chunk.
        unsafe { self.run(call_closure, table, extent) }
    }

    /// `f` of every item, run on the pool's threads (the caller's among them), the results in
    /// the items' order. For independent host work of similar size per item, such as
    /// compiling a computation's kernels. A panic in `f` is caught where it happens (it may
    /// not unwind through a chunk's C-ABI entry), the other items still run, and the first
    /// item's panic is resumed on the caller once all have finished.
    pub fn map<T: Sync, R: Send>(&self, items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
        type Outcome<R> = Mutex<Option<std::thread::Result<R>>>;
        let outcomes: Vec<Outcome<R>> = items.iter().map(|_| Mutex::new(None)).collect();
        let run = |begin: i64, end: i64| {
            for i in begin..end {
                // `i` is below `items.len()`, a slice length.
                let i = i as usize;
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&items[i])));
                *outcomes[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
            }
        };
        // A slice never holds more than `isize::MAX` items.
        self.run_fn(items.len() as i64, &run);
        let mut results = Vec::with_capacity(items.len());
        for outcome in outcomes {
            match outcome.into_inner().unwrap_or_else(|p| p.into_inner()) {
                Some(Ok(r)) => results.push(r),
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => unreachable!("the pool runs every chunk of its range"),
            }
        }
        results
    }
}

fn worker(shared: &Shared) {
    shared.lock().started += 1;
    shared.done.notify_all();
    loop {
        let (slot, c, job) = {
            let mut queue = shared.lock();
            loop {
                if queue.shutdown {
                    return;
                }
                if let Some(taken) = queue.take_any() {
                    break taken;
                }
                queue = shared.wait(queue, &shared.work);
            }
        };
        // SAFETY: `ThreadPool::run`'s contract: the entry may run this disjoint chunk
        // concurrently, and the table stays valid until the job's last chunk is reported
        // finished below (its dispatcher waits for that).
        unsafe { job.run_chunk(c) };
        let mut queue = shared.lock();
        let last = queue.finish(slot);
        if last {
            shared.changed(&mut queue);
        }
        drop(queue);
        if last {
            shared.done.notify_all();
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.shutdown = true;
        self.shared.changed(&mut queue);
        drop(queue);
        self.shared.work.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Most threads a pool may have: a larger count is a mistake, not a machine, and would start
/// that many OS threads.
pub const MAX_THREADS: usize = 1024;

/// The thread count of computations that do not choose one: `WEFT_NUM_THREADS` if it is set to
/// a count in `1..=MAX_THREADS` (anything else is ignored with a warning on stderr, rather than
/// silently), else the machine's available parallelism (1 if unknown). Read once per process.
pub fn default_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        let machine = || std::thread::available_parallelism().map_or(1, |n| n.get());
        let Ok(v) = std::env::var("WEFT_NUM_THREADS") else {
            return machine();
        };
        match v.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_THREADS).contains(&n) => n,
            _ => {
                eprintln!(
                    "weft: ignoring WEFT_NUM_THREADS={v:?}: not a thread count in 1..={MAX_THREADS}"
                );
                machine()
            }
        }
    })
}

/// The pool of `threads` threads (clamped to `1..=MAX_THREADS`), shared by every computation of
/// that count in the process; made on first use and kept for the process's life (at most one
/// per count).
pub fn pool_of(threads: usize) -> Arc<ThreadPool> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let threads = threads.clamp(1, MAX_THREADS);
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    Arc::clone(
        pools
            .entry(threads)
            .or_insert_with(|| Arc::new(ThreadPool::new(threads))),
    )
}

/// The pool of computations that do not choose a thread count: [`default_threads`] threads.
pub fn shared_pool() -> Arc<ThreadPool> {
    pool_of(default_threads())
}

#[cfg(test)]
mod tests {
    use super::{chunk, ThreadPool, MAX_JOBS_IN_FLIGHT};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    const EXTENT: usize = 1000;

    /// Counts each index of its range in the `[AtomicU32; EXTENT]` its table points at.
    unsafe extern "C" fn count(table: *const *mut u8, begin: i64, end: i64) {
        // SAFETY: the test's table holds one pointer to a live `[AtomicU32; EXTENT]`, and
        // `begin..end` lies within `0..EXTENT`; atomics make concurrent chunks sound.
        let counts = unsafe { &*(*table).cast::<[AtomicU32; EXTENT]>() };
        for i in begin..end {
            counts[i as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn concurrent_dispatches_run_every_chunk_of_their_own_job_once() {
        let pool = ThreadPool::new(3);
        // More dispatching threads than job slots, so some run their jobs themselves.
        std::thread::scope(|scope| {
            for _ in 0..MAX_JOBS_IN_FLIGHT + 8 {
                scope.spawn(|| {
                    for _ in 0..50 {
                        let counts: [AtomicU32; EXTENT] =
                            std::array::from_fn(|_| AtomicU32::new(0));
                        let table = [counts.as_ptr().cast_mut().cast::<u8>()];
                        // SAFETY: `count` is safe on disjoint sub-ranges concurrently, and
                        // `table` and `counts` outlive the call, which waits for every chunk.
                        unsafe { pool.run(count, table.as_ptr(), EXTENT as i64) };
                        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
                    }
                });
            }
        });
    }

    /// Jobs back to back (the worker catches them spinning) and after pauses longer than the
    /// spin (it catches them from sleep): every chunk runs once and no wake-up is lost (a
    /// lost one would hang here).
    #[test]
    fn jobs_reach_spinning_and_sleeping_workers_alike() {
        let pool = ThreadPool::new(2);
        for pause in [None, Some(super::SPIN_BEFORE_SLEEP * 3)] {
            for _ in 0..200 {
                if let Some(p) = pause {
                    std::thread::sleep(p);
                }
                let counts: [AtomicU32; EXTENT] = std::array::from_fn(|_| AtomicU32::new(0));
                let table = [counts.as_ptr().cast_mut().cast::<u8>()];
                // SAFETY: as in the test above.
                unsafe { pool.run(count, table.as_ptr(), EXTENT as i64) };
                assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
            }
        }
    }

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

    #[test]
    fn map_keeps_the_items_order_on_every_pool_size() {
        for threads in [1, 2, 3] {
            let pool = ThreadPool::new(threads);
            for len in [0usize, 1, 2, 7, 40] {
                let items: Vec<usize> = (0..len).collect();
                let ran_on: Mutex<std::collections::HashSet<std::thread::ThreadId>> =
                    Mutex::default();
                let squares = pool.map(&items, |&i| {
                    ran_on.lock().unwrap().insert(std::thread::current().id());
                    i * i
                });
                assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
                assert!(ran_on.lock().unwrap().len() <= threads);
            }
        }
    }

    #[test]
    fn a_panicking_item_lets_the_others_run_and_reaches_the_caller() {
        let pool = ThreadPool::new(2);
        let items: Vec<u32> = (0..20).collect();
        let ran = AtomicU32::new(0);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.map(&items, |&i| {
                ran.fetch_add(1, Ordering::Relaxed);
                assert!(i != 7, "item seven");
                i
            })
        }));
        let payload = caught.expect_err("the panic reaches the caller");
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
        assert_eq!(message, Some("item seven"));
        assert_eq!(ran.load(Ordering::Relaxed), 20);
        // The pool still works afterwards.
        assert_eq!(pool.map(&items[..3], |&i| i + 1), vec![1, 2, 3]);
    }
}
