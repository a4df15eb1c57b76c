//! Criterion benchmarks of the privacy accountants (placeholder until the accountants land).

fn main() {}
