fn main() {
    let (a, b) = context_compactor::bpe::cold_start_phases();
    println!("{a:.2} {b:.2}");
}
