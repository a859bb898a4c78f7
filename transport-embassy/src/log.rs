//! Logging that costs nothing unless the `defmt` feature is on.
//!
//! A firmware without a defmt transport must not pay for format strings, so
//! the macros expand to nothing (their arguments still type-check, so a
//! feature switch cannot break the build).

macro_rules! log_debug {
    ($($arg:tt)*) => {{
        #[cfg(feature = "defmt")]
        defmt::debug!($($arg)*);
        #[cfg(not(feature = "defmt"))]
        { let _ = |f: &mut ::core::fmt::Formatter<'_>| f.write_fmt(::core::format_args!($($arg)*)); }
    }};
}

macro_rules! log_warn {
    ($($arg:tt)*) => {{
        #[cfg(feature = "defmt")]
        defmt::warn!($($arg)*);
        #[cfg(not(feature = "defmt"))]
        { let _ = |f: &mut ::core::fmt::Formatter<'_>| f.write_fmt(::core::format_args!($($arg)*)); }
    }};
}

pub(crate) use {log_debug, log_warn};
