//! The log lines' way to stdout: appended to a buffer in memory by whoever logs, written out by
//! one thread in a single write a few milliseconds after the first line it has not written.
//!
//! `tracing_appender`'s non-blocking writer (used before) queues each line on a channel whose
//! worker thread sleeps until a line arrives: under load every access line woke it, a futex
//! wake and two context switches a request. That thread took 11 % of the runner's CPU at 700
//! webhooks a second, and the wake-ups a few percent of every process's (BENCHMARKS.md "Twice
//! the webhooks", fourth stop: "Log lines leave in windows"). Here only the first line after a write wakes the writer,
//! which then lingers [`LINGER`] so that the lines of that window leave together: at most
//! `1 s / LINGER` wake-ups a second under any load, none at rest.
//!
//! Nothing is dropped while the process runs: a logger that finds [`MAX_PENDING`] bytes waiting
//! waits for the write (as the queue's `lossy(false)` made it wait before). The guard writes
//! what is left when dropped at exit, waiting for that up to [`EXIT_WAIT`] (a stdout nobody
//! reads must not hold the exit); lines logged after that are dropped. An abort loses what was
//! pending, as it lost the queued lines before: the last [`LINGER`]'s, or up to [`MAX_PENDING`]
//! bytes when stdout is slower than the loggers.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long the writer waits after the first unwritten line for the lines that follow it.
const LINGER: Duration = Duration::from_millis(10);
/// Bytes waiting beyond which a logger waits for the writer.
const MAX_PENDING: usize = 8 * 1024 * 1024;
/// How long the guard waits at exit for what is pending to be written.
const EXIT_WAIT: Duration = Duration::from_secs(1);

/// Where the log layer writes its lines ([`tracing_subscriber::fmt::MakeWriter`]).
#[derive(Debug)]
pub(crate) struct LogWriter {
    shared: Arc<Shared>,
}

/// Writes what is left and stops the writer thread when dropped.
#[derive(Debug)]
pub(crate) struct LogWriterGuard {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    pending: Mutex<Pending>,
    /// A first line arrived, or the guard asks the writer to stop.
    arrived: Condvar,
    /// The writer took what was pending, or finished.
    taken: Condvar,
}

#[derive(Debug, Default)]
struct Pending {
    bytes: Vec<u8>,
    /// The guard was dropped: the writer writes what is pending and finishes.
    closed: bool,
    /// The writer thread has finished: nothing appended any more is written.
    finished: bool,
}

impl Shared {
    fn pending(&self) -> MutexGuard<'_, Pending> {
        // A logger that panicked mid-append left at worst a partial line.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A writer of lines to `out`, and the guard that flushes it.
pub(crate) fn start<W: Write + Send + 'static>(out: W) -> io::Result<(LogWriter, LogWriterGuard)> {
    let shared = Arc::new(Shared::default());
    let writer = shared.clone();
    // Not joined: the guard waits for the writer's `finished` instead, for at most EXIT_WAIT.
    std::thread::Builder::new()
        .name("log-writer".into())
        .spawn(move || write_out(&writer, out))?;
    Ok((
        LogWriter {
            shared: shared.clone(),
        },
        LogWriterGuard { shared },
    ))
}

/// The writer thread: waits for a first line, lingers, writes everything pending at once.
fn write_out<W: Write>(shared: &Shared, mut out: W) {
    let mut taken = Vec::new();
    loop {
        let mut pending = shared.pending();
        while pending.bytes.is_empty() && !pending.closed {
            pending = shared
                .arrived
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let closed = pending.closed;
        if !closed && pending.bytes.len() < MAX_PENDING {
            drop(pending);
            std::thread::sleep(LINGER);
            pending = shared.pending();
        }
        // The buffers swap, so neither side allocates once both have grown.
        std::mem::swap(&mut pending.bytes, &mut taken);
        let closed = closed || pending.closed;
        drop(pending);
        shared.taken.notify_all();
        // A line that cannot be written is dropped: logging never fails the process.
        let _ = out.write_all(&taken).and_then(|()| out.flush());
        taken.clear();
        if closed {
            let mut pending = shared.pending();
            if pending.bytes.is_empty() {
                pending.finished = true;
                drop(pending);
                shared.taken.notify_all();
                return;
            }
        }
    }
}

impl LogWriter {
    fn append(&self, line: &[u8]) {
        let mut pending = self.shared.pending();
        if pending.finished {
            return;
        }
        while pending.bytes.len() >= MAX_PENDING && !pending.closed {
            pending = self
                .shared
                .taken
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let first = pending.bytes.is_empty();
        pending.bytes.extend_from_slice(line);
        drop(pending);
        if first {
            self.shared.arrived.notify_one();
        }
    }
}

impl Write for &LogWriter {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        self.append(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = &'a LogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

impl Drop for LogWriterGuard {
    fn drop(&mut self) {
        let mut pending = self.shared.pending();
        pending.closed = true;
        self.shared.arrived.notify_one();
        // Whatever happens within EXIT_WAIT, the process goes on exiting.
        let _ = self
            .shared
            .taken
            .wait_timeout_while(pending, EXIT_WAIT, |pending| !pending.finished);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `out` whose writes the test reads: each write one entry.
    #[derive(Clone, Default)]
    struct Writes(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Writes {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("writes").push(bytes.to_vec());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_logged_together_leave_in_one_write_and_all_are_written_at_exit() {
        let writes = Writes::default();
        let (writer, guard) = start(writes.clone()).expect("started");
        for i in 0..100 {
            (&writer)
                .write_all(format!("line {i}\n").as_bytes())
                .expect("appended");
        }
        drop(guard);
        let writes = writes.0.lock().expect("writes").clone();
        let text: String = writes
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        let expected: String = (0..100).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, expected, "every line, in order, once");
        // A hundred appends take microseconds, the linger 10 ms: only a thread descheduled
        // again and again could see most of them written alone.
        assert!(
            writes.len() < 50,
            "lines appended within one linger share writes: {} writes",
            writes.len()
        );
    }

    /// An `out` whose every write blocks, as a pipe nobody reads does.
    struct Stuck;

    impl Write for Stuck {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            std::thread::park();
            Ok(0)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stdout_nobody_reads_does_not_hold_the_exit() {
        let (writer, guard) = start(Stuck).expect("started");
        (&writer).write_all(b"a line\n").expect("appended");
        let (dropped, returned) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(guard);
            let _ = dropped.send(());
        });
        // The drop gives up after EXIT_WAIT (1 s); joining the writer would never return.
        returned
            .recv_timeout(Duration::from_secs(30))
            .expect("the guard's drop returned");
    }

    #[test]
    fn a_logger_past_the_bound_waits_for_the_write_instead_of_dropping() {
        let writes = Writes::default();
        let (writer, guard) = start(writes.clone()).expect("started");
        let line = vec![b'x'; MAX_PENDING / 4];
        for _ in 0..10 {
            (&writer).write_all(&line).expect("appended");
        }
        drop(guard);
        let written: usize = writes.0.lock().expect("writes").iter().map(Vec::len).sum();
        assert_eq!(written, 10 * line.len());
    }
}
