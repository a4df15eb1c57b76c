//! Criterion benchmarks of dpglm's hot paths (`benches/accounting.rs`, `benches/glm.rs`),
//! run with `cargo xtask bench`.
