//! Criterion benchmarks of DP-SGD at the floor (issue 12 §4): one epoch of 50,000 × 100 with
//! Poisson batches of expected size 256 and exact Gaussian noise, its parts, and the same
//! epoch at d = 1000 beside one pass of the two gemv a full gradient is made of.
//!
//! `cargo xtask bench "^dpsgd_"` (BLAS on, one core; a bare `dpsgd` also matches accounting
//! benches). The numbers to report: examples per second of
//! `dpsgd_epoch_50000x100_b256/poisson_gaussian_sgd` (criterion's throughput), and
//! `dpsgd_epoch_50000x1000_b256/poisson_gaussian_sgd` over `…/two_gemv`; beside them
//! `…/poisson_gaussian_sgd_secure_rng` at d = 100 with the OS-seeded CSPRNG, and
//! `…_secure_rng_dyn` with it behind `dyn Rng`, as `dpglm train` runs without `--seed` (the
//! others use the seeded Xoshiro256++ stream, monomorphised). The parts of one step
//! at d = 100 (`dpsgd_step_parts_d100`): the exact clipped sum of a batch of 256 rows (and the
//! `f64` clipped sum it replaces), and the noise of one release (100 exact discrete Gaussian
//! draws); an epoch runs about 195 such steps, the rest is the batch draws and the update.
//! `…/poisson_gaussian_sgd_f32` is the same epoch on the same values stored as `f32`
//! ([`Storage::F32`]: half the bytes, the same kernels widening to `f64`), and at d = 1000
//! `…/two_gemv_f32` its like-for-like reference (`sgemv` on the `f32` matrix).
//! `dpsgd_epoch_4000x100_b256/poisson_gaussian_sgd_in_cache` is the d = 100 epoch on 4,000
//! rows, which the caches hold: the arithmetic's rate without the rows' memory traffic.
//! `…/batch_rows_read` reads the rows of an epoch's worth of random sorted batches and sums
//! them row by row, nothing else, and `…/batch_rows_read_prefetched` does so asking for the
//! rows eight places ahead: an epoch must read its rows, so these show what reading them
//! alone costs on the machine at hand (with rows of 100 entries the prefetched read is the
//! fastest way found to read them; rows of 1000 entries read several at a time go faster).
//! Times are the benchmarking thread's CPU time ([`cpu_time::CpuTime`]: the machine may be
//! shared), with one BLAS thread.

use std::hint::black_box;

use cpu_time::CpuTime;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dp_glm::{Dataset, GlmObjective, Loss, Scale, Storage};
use dp_optim::{
    BatchSchedule, ClippedSum, DpSgd, ExactSum, L2Regulariser, Length, Solution, StepSize,
    Unconstrained, secure_rng, seeded_rng, sum_multiplier,
};
use ndarray::Array1;
use rand::{Rng, RngExt};

mod common;
mod cpu_time;
use common::{data_of, two_gemv};

type Bench = Criterion<CpuTime>;

const N: usize = 50_000;
const D: usize = 100;
const D_WIDE: usize = 1000;
const BATCH: usize = 256;

fn data(d: usize) -> Dataset {
    data_of(N, d)
}

/// One DP-SGD epoch over `n` rows: Poisson sampling at `q = 256/n`, Gaussian noise multiplier
/// 1, clip 1, plain SGD.
fn sgd(n: usize) -> DpSgd {
    DpSgd::new(
        BatchSchedule::Poisson {
            q: BATCH as f64 / n as f64,
        },
        Length::Epochs(1),
        StepSize::Constant(0.1),
        1.0,
        1.0,
    )
}

/// One DP-SGD epoch ([`sgd`]) at dimension `d`; at `d = 1000` also the two-gemv pass it is
/// compared with.
fn epoch_at(c: &mut Bench, d: usize) {
    let data = data(d);
    let obj = GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Mean).expect("objective");
    let sgd = sgd(N);
    let x0 = Array1::zeros(d);
    let mut group = c.benchmark_group(format!("dpsgd_epoch_{N}x{d}_b{BATCH}"));
    group.sampling_mode(cpu_time::FLAT);
    group.throughput(Throughput::Elements(N as u64));
    if d > D {
        group.sample_size(10);
    }
    group.bench_function("poisson_gaussian_sgd", |b| {
        let mut rng = seeded_rng(2);
        b.iter(|| black_box(epoch(&sgd, &obj, &x0, &mut rng)))
    });
    let narrow = Dataset::with_storage(data.x().into_owned(), data.y().to_owned(), Storage::F32)
        .expect("f32 storage");
    let narrow_obj =
        GlmObjective::new(&narrow, Loss::Logistic, 0.0, Scale::Mean).expect("objective");
    group.bench_function("poisson_gaussian_sgd_f32", |b| {
        let mut rng = seeded_rng(2);
        b.iter(|| black_box(epoch(&sgd, &narrow_obj, &x0, &mut rng)))
    });
    if d == D {
        // The OS-seeded CSPRNG, and behind `dyn Rng` as `dpglm train` without `--seed` runs.
        group.bench_function("poisson_gaussian_sgd_secure_rng", |b| {
            let mut rng = secure_rng().expect("entropy");
            b.iter(|| black_box(epoch(&sgd, &obj, &x0, &mut rng)))
        });
        group.bench_function("poisson_gaussian_sgd_secure_rng_dyn", |b| {
            let mut rng: Box<dyn Rng> = Box::new(secure_rng().expect("entropy"));
            b.iter(|| black_box(epoch(&sgd, &obj, &x0, &mut *rng)))
        });
    }
    // The reads alone: the rows of an epoch's worth of random batches, summed, with nothing
    // else, row by row, and with the rows eight places ahead prefetched.
    let batches = random_batches(5);
    let raw = data.x();
    let raw = raw.as_slice().expect("row-major data");
    group.bench_function("batch_rows_read", |b| {
        b.iter(|| black_box(read_rows(raw, d, &batches, 0)))
    });
    group.bench_function("batch_rows_read_prefetched", |b| {
        b.iter(|| black_box(read_rows(raw, d, &batches, PREFETCH_ROWS)))
    });
    if d > D {
        let theta = Array1::from_elem(d, 0.01);
        let coeffs = Array1::from_elem(N, 0.5);
        group.bench_function("two_gemv", |b| {
            b.iter(|| black_box(two_gemv(&data, &theta, &coeffs)))
        });
        let x32 = data.x().mapv(|v| v as f32);
        let (theta32, coeffs32) = (theta.mapv(|v| v as f32), coeffs.mapv(|v| v as f32));
        group.bench_function("two_gemv_f32", |b| {
            b.iter(|| black_box(x32.t().dot(&coeffs32).sum() + x32.dot(&theta32).sum()))
        });
    }
    group.finish();
}

/// Rows ahead whose memory [`read_rows`] asks for while it sums a row.
const PREFETCH_ROWS: usize = 8;

/// An epoch's batches (`n/256` of them) of 256 uniform random rows each, sorted (as Poisson
/// batches are drawn), for the read-only reference.
fn random_batches(seed: u64) -> Vec<Vec<usize>> {
    let mut rng = seeded_rng(seed);
    (0..N / BATCH)
        .map(|_| {
            let mut batch: Vec<usize> = (0..BATCH).map(|_| rng.random_range(0..N)).collect();
            batch.sort_unstable();
            batch
        })
        .collect()
}

/// The sum of every entry of the rows of `batches` (rows of `d` entries in `raw`), row by row
/// with eight independent partial sums, asking for the rows `ahead` places on (0: none).
fn read_rows(raw: &[f64], d: usize, batches: &[Vec<usize>], ahead: usize) -> f64 {
    let mut total = 0.0;
    for batch in batches {
        for (k, &i) in batch.iter().enumerate() {
            if let Some(&next) = batch.get(k + ahead).filter(|_| ahead > 0) {
                // One request per cache line of 8 entries.
                (0..d)
                    .step_by(8)
                    .for_each(|j| prefetch_index::prefetch_index(raw, next * d + j));
            }
            let mut lanes = [0.0; 8];
            let row = &raw[i * d..(i + 1) * d];
            let (chunks, rest) = row.as_chunks::<8>();
            for c in chunks {
                lanes.iter_mut().zip(c).for_each(|(l, v)| *l += v);
            }
            total += lanes.iter().sum::<f64>() + rest.iter().sum::<f64>();
        }
    }
    total
}

/// One run of `sgd` from `x0` (unregularised, unconstrained).
fn epoch<R: Rng + ?Sized>(
    sgd: &DpSgd,
    obj: &GlmObjective<'_>,
    x0: &Array1<f64>,
    rng: &mut R,
) -> Solution {
    sgd.minimize(
        obj,
        &L2Regulariser { lambda: 0.0 },
        &Unconstrained,
        x0.view(),
        rng,
        None,
    )
    .expect("runs")
}

/// The parts of one step at d = 100: the exact and the `f64` clipped sum of 256 random rows,
/// and one release's noise (the exact sum of nothing plus 100 discrete Gaussian draws).
fn step_parts(c: &mut Bench) {
    let data = data(D);
    let obj = GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Mean).expect("objective");
    let mut rng = seeded_rng(4);
    let batch: Vec<usize> = (0..BATCH).map(|_| rng.random_range(0..N)).collect();
    let theta = Array1::from_elem(D, 0.01);
    let (release, _) = sum_multiplier(1.0, 1.0, D).expect("release");
    let mut sum = ExactSum::new(*release.quantiser());
    let mut out = Array1::zeros(D);
    let mut group = c.benchmark_group(format!("dpsgd_step_parts_d{D}"));
    group.sampling_mode(cpu_time::FLAT);
    group.bench_function(format!("exact_clipped_sum_{BATCH}_rows"), |b| {
        b.iter(|| {
            sum.clear();
            obj.exact_clipped_sum(theta.view(), Some(&batch), &mut sum);
            black_box(sum.totals()[0])
        })
    });
    group.bench_function(format!("f64_clipped_sum_{BATCH}_rows"), |b| {
        b.iter(|| {
            obj.clipped_sum(theta.view(), Some(&batch), 1.0, out.view_mut());
            black_box(out[0])
        })
    });
    group.bench_function(format!("noise_{D}_draws"), |b| {
        let mut empty = ExactSum::new(*release.quantiser());
        b.iter(|| {
            release
                .release("test", &mut rng, &mut empty, out.view_mut())
                .expect("draws");
            black_box(out[0])
        })
    });
    group.finish();
}

/// Rows of the in-cache epoch: 3.2 MB of `f64` at d = 100, which the caches hold.
const N_CACHED: usize = 4000;

/// The epoch of [`epoch_at`] at d = 100 on [`N_CACHED`] rows, whose batches' rows are in
/// cache: the examples per second of the arithmetic alone (sampling, margins, coefficients,
/// exact sums, noise, updates), without the memory traffic of random rows.
fn epoch_in_cache(c: &mut Bench) {
    let data = data_of(N_CACHED, D);
    let obj = GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Mean).expect("objective");
    let (sgd, x0) = (sgd(N_CACHED), Array1::zeros(D));
    let mut group = c.benchmark_group(format!("dpsgd_epoch_{N_CACHED}x{D}_b{BATCH}"));
    group.sampling_mode(cpu_time::FLAT);
    group.throughput(Throughput::Elements(N_CACHED as u64));
    group.bench_function("poisson_gaussian_sgd_in_cache", |b| {
        let mut rng = seeded_rng(2);
        b.iter(|| black_box(epoch(&sgd, &obj, &x0, &mut rng)))
    });
    group.finish();
}

fn epochs(c: &mut Bench) {
    epoch_at(c, D);
    epoch_in_cache(c);
    epoch_at(c, D_WIDE);
}

criterion_group! {
    name = benches;
    config = cpu_time::config();
    targets = step_parts, epochs
}
criterion_main!(benches);
