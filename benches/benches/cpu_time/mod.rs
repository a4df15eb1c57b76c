//! A criterion measurement of the calling thread's CPU time (Linux: the first field of
//! `/proc/thread-self/schedstat`, nanoseconds on the CPU), for benches of single-threaded
//! code on a machine shared with other work: wall time counts the time the thread waited
//! for a core, CPU time does not.
//!
//! The kernel updates that count at scheduler ticks (a few ms), so a sample must be much
//! longer than a tick: use [`config`] (flat sampling, 20 samples of about 200 ms).

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, SamplingMode, Throughput};

/// Criterion measuring [`CpuTime`] in 20 flat samples of about 200 ms each (set the groups'
/// sampling mode with [`FLAT`]).
pub fn config() -> Criterion<CpuTime> {
    Criterion::default()
        .with_measurement(CpuTime)
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
}

/// Every sample runs the same number of iterations (criterion's default grows them from a
/// few, shorter than a tick).
pub const FLAT: SamplingMode = SamplingMode::Flat;

/// CPU time of the benchmarking thread.
pub struct CpuTime;

/// Nanoseconds the calling thread has spent on a CPU.
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("CPU-time benches need Linux's /proc/thread-self/schedstat");
    stat.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("schedstat starts with the nanoseconds on the CPU")
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = Duration;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> Duration {
        Duration::from_nanos(thread_cpu_ns().saturating_sub(start))
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Formatter
    }
}

/// Times in ns, µs, ms or s; throughput in elements per second.
struct Formatter;

impl ValueFormatter for Formatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = [(1.0, "ns"), (1e-3, "µs"), (1e-6, "ms")]
            .into_iter()
            .find(|&(f, _)| typical * f < 1e3)
            .unwrap_or((1e-9, "s"));
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let per_iteration = match *throughput {
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => n,
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) | Throughput::Bits(n) => n,
        } as f64;
        values
            .iter_mut()
            .for_each(|v| *v = per_iteration * 1e9 / *v / 1e6);
        "M/s (CPU)"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}
