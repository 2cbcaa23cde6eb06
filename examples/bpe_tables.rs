//! Writes the standalone rank tables that build.rs generated (from tiktoken-rs's own ranks)
//! into a directory, for the npm lite build, which passes them to `bpe::load_ranks`:
//!
//!     cargo run --example bpe_tables -- <out-dir>
//!
//! Writes `o200k_base.cctab` and `cl100k_base.cctab` (both standalone: neither needs the
//! other loaded first).
static TABLES: &[(&str, &[u8])] = &[
    ("o200k_base.cctab", include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.cctab"))),
    ("cl100k_base.cctab", include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.cctab"))),
];

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: cargo run --example bpe_tables -- <out-dir>");
        std::process::exit(2)
    });
    std::fs::create_dir_all(&dir).expect("create the output directory");
    for (name, bytes) in TABLES {
        let path = std::path::Path::new(&dir).join(name);
        std::fs::write(&path, bytes).expect("write a table");
        println!("{} ({} bytes)", path.display(), bytes.len());
    }
}
