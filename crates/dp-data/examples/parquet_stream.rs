//! Streams a Parquet file in row blocks and reports the rate (for peak memory, run it under
//! `/usr/bin/time -v`).
//!
//! ```text
//! cargo run -p dp-data --example parquet_stream --profile test -- write FILE ROWS COLS
//! cargo run -p dp-data --example parquet_stream --profile test -- read FILE BLOCK_ROWS
//! ```
//!
//! `write` makes a table of `COLS` `DOUBLE` features `x0…` (distinct pseudo-random values) and an `INT64` label `y` ∈ {0, 1}
//! in row groups of 65,536 rows (it holds the table in memory to write it); `read` streams it
//! with the label `y` and prints rows, blocks, the largest block, seconds and rows per second.

use std::path::Path;
use std::time::Instant;

use dp_data::{ParquetColumn, Schema, Task, open_blocks, write_parquet};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["write", file, rows, cols] => {
            let (n, d): (usize, usize) = (rows.parse()?, cols.parse()?);
            let names: Vec<String> = (0..d).map(|j| format!("x{j}")).collect();
            let mut columns: Vec<(&str, ParquetColumn)> = names
                .iter()
                .enumerate()
                .map(|(j, name)| {
                    // Distinct pseudo-random values in [-1, 1) (a multiplicative hash of i, j),
                    // so that pages do not shrink to dictionaries.
                    let v = (0..n).map(|i| {
                        let h = (i as u64)
                            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                            .wrapping_add((j as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9));
                        (h >> 11) as f64 / (1u64 << 52) as f64 - 1.0
                    });
                    (name.as_str(), ParquetColumn::Double(v.collect()))
                })
                .collect();
            let y = (0..n).map(|i| i64::from(i % 3 == 0)).collect();
            columns.push(("y", ParquetColumn::Int64(y)));
            let out = std::io::BufWriter::new(std::fs::File::create(file)?);
            write_parquet(out, file, &columns, 1 << 16)?;
        }
        ["read", file, block] => {
            let schema = Schema {
                label: Some("y".into()),
                ..Schema::default()
            };
            let start = Instant::now();
            let (blocks, _) = open_blocks(
                Path::new(file),
                None,
                &schema,
                Task::Classification,
                block.parse()?,
            )?;
            let (mut rows, mut count, mut largest, mut sum) = (0usize, 0usize, 0usize, 0.0);
            for b in blocks {
                let b = b?;
                rows += b.x.nrows();
                count += 1;
                largest = largest.max(b.x.nrows());
                sum += b.x.sum() + b.y.sum();
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{rows} rows in {count} blocks (largest {largest}) in {secs:.2} s: {:.0} rows/s \
                 (checksum {sum})",
                rows as f64 / secs
            );
        }
        _ => return Err("usage: write FILE ROWS COLS | read FILE BLOCK_ROWS".into()),
    }
    Ok(())
}
