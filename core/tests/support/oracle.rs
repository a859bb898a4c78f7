//! The tests' own reading of node names and of creation order, written
//! apart from the crate's `naming` and `sequence` modules so that a bug
//! there cannot hide itself: the expected holder, leader or queue head is
//! computed here.
#![allow(dead_code)] // each test file uses a different part

/// A lock contender as the test sees its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Excludes everyone: an exclusive lock's node or a writer's.
    Exclusive,
    /// Shares with other readers.
    Reader,
}

/// The markers every library writes before the sequence number, and what
/// they mean in a lock directory (recipes page, Curator, Kazoo).
const LOCK_MARKERS: &[(&str, Kind)] = &[
    ("-lock-", Kind::Exclusive),
    ("__lock__", Kind::Exclusive),
    ("-write-", Kind::Exclusive),
    ("-__WRIT__", Kind::Exclusive),
    ("-read-", Kind::Reader),
    ("-__READ__", Kind::Reader),
    ("__rlock__", Kind::Reader),
];

/// The number after `marker` at the end of `name`, as `%010d` printed it
/// (ten digits, or a minus and nine or ten digits).
pub fn number_after(name: &str, marker: &str) -> Option<i32> {
    let at = name.rfind(marker)? + marker.len();
    let digits = &name[at..];
    let width_ok = match digits.strip_prefix('-') {
        Some(rest) => rest.len() == 9 || (rest.len() == 10 && !rest.starts_with('0')),
        None => digits.len() == 10,
    };
    if !width_ok
        || !digits
            .trim_start_matches('-')
            .bytes()
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    digits
        .parse::<i64>()
        .ok()
        .and_then(|v| i32::try_from(v).ok())
}

/// A lock contender's kind and number, if `name` is one.
pub fn lock_contender(name: &str) -> Option<(Kind, i32)> {
    LOCK_MARKERS
        .iter()
        .find_map(|(marker, kind)| number_after(name, marker).map(|n| (*kind, n)))
}

/// Whether `a` was created before `b` in one parent: the server's counter
/// is a wrapping 32-bit one, so the nearer way round the circle wins.
pub fn created_before(a: i32, b: i32) -> bool {
    let distance = (i64::from(b) - i64::from(a)).rem_euclid(1 << 32);
    distance != 0 && distance < (1 << 31)
}

/// The names in `names` that may hold a lock together right now: the
/// lowest contender if it excludes, else every reader below the lowest
/// excluder.
pub fn lock_holders(names: &[String]) -> Vec<String> {
    let mut contenders: Vec<(&String, Kind, i32)> = names
        .iter()
        .filter_map(|n| lock_contender(n).map(|(k, s)| (n, k, s)))
        .collect();
    // Insertion by creation order, without the crate's comparison.
    contenders.sort_by(|a, b| {
        if created_before(a.2, b.2) {
            std::cmp::Ordering::Less
        } else if created_before(b.2, a.2) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    match contenders.first() {
        None => Vec::new(),
        Some((n, Kind::Exclusive, _)) => vec![(*n).clone()],
        Some(_) => contenders
            .iter()
            .take_while(|(_, k, _)| *k == Kind::Reader)
            .map(|(n, _, _)| (*n).clone())
            .collect(),
    }
}
