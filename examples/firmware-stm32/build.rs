//! Linker scripts: `link.x` (cortex-m-rt's vector table and sections, which
//! pulls in the `memory.x` that embassy-stm32's `memory-x` feature writes for
//! the chip) and `defmt.x` (where defmt keeps its interned format strings).

fn main() {
    // Set here rather than in .cargo/config.toml so that `cargo build` from
    // anywhere (the size script, CI) links the same way.
    println!("cargo:rustc-link-arg-bins=--nmagic");
    println!("cargo:rustc-link-arg-bins=-Tlink.x");
    println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
}
