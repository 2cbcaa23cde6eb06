//! Cold-start phases of o200k_base, natively: `cargo run --release --example bpe_cold [-- N]`
//! prints (decode ms, map-build ms) of the first run, then of N - 1 more (for profiling).
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    for i in 0..n {
        let (a, b) = context_compactor::bpe::cold_start_phases();
        if i == 0 || n < 5 {
            println!("{a:.2} {b:.2}");
        }
    }
}
