//! One order of the critical sections of contenders in several processes:
//! each appends `<unix ms> enter|leave <who>` to one file (O_APPEND, one
//! write per line) right after it acquires and right before it releases,
//! so the file's order is an order in which the sections really happened.
//! What Curator's and Kazoo's own programs write beside herdless's
//! contenders, and the oracle that reads it back.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// A journal file, appended to by this process and others.
pub struct Journal {
    /// Where it is, for the other processes.
    pub path: PathBuf,
    file: Mutex<File>,
}

/// One line: when, whether an entry (else a leave), and who.
pub type Line = (u64, bool, String);

/// Milliseconds since the Unix epoch, as the peers write them.
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Journal {
    /// A journal at `path`, created if missing.
    pub fn create(path: PathBuf) -> Journal {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("the journal");
        Journal {
            path,
            file: Mutex::new(file),
        }
    }

    /// Appends `what` (`enter` or `leave`) for `who`, now.
    pub fn note(&self, what: &str, who: &str) {
        let line = format!("{} {what} {who}\n", unix_ms(SystemTime::now()));
        self.file
            .lock()
            .unwrap()
            .write_all(line.as_bytes())
            .expect("journal write");
    }

    /// Every line, in the order written.
    pub fn read(&self) -> Vec<Line> {
        std::fs::read_to_string(&self.path)
            .expect("the journal")
            .lines()
            .filter_map(|l| {
                let mut parts = l.split(' ');
                let at = parts.next()?.parse().ok()?;
                let enter = parts.next()? == "enter";
                Some((at, enter, parts.next()?.to_owned()))
            })
            .collect()
    }
}

/// What the journal says of who was inside together.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Overlaps {
    /// Entries that broke "a writer alone": a writer beside anyone, a
    /// reader beside a writer. Each is printed on stderr.
    pub violations: usize,
    /// Entries of a reader while another reader was inside.
    pub shared: usize,
}

/// Reads `lines` in order: `is_reader` says who holds as a reader (none,
/// for an exclusive lock or an election).
pub fn overlaps(lines: &[Line], is_reader: impl Fn(&str) -> bool) -> Overlaps {
    let mut found = Overlaps::default();
    let mut readers: HashSet<&str> = HashSet::new();
    let mut writer: Option<&str> = None;
    for (_, enter, who) in lines {
        let who = who.as_str();
        match (enter, is_reader(who)) {
            (true, true) => {
                if let Some(w) = writer {
                    found.violations += 1;
                    eprintln!("reader {who} entered while writer {w} was inside");
                }
                if !readers.is_empty() {
                    found.shared += 1;
                }
                readers.insert(who);
            }
            (true, false) => {
                if writer.is_some() || !readers.is_empty() {
                    found.violations += 1;
                    eprintln!("{who} entered while {writer:?} and readers {readers:?} were inside");
                }
                writer = Some(who);
            }
            (false, true) => {
                readers.remove(who);
            }
            (false, false) => {
                if writer == Some(who) {
                    writer = None;
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{overlaps, Line, Overlaps};

    fn lines(spec: &[(bool, &str)]) -> Vec<Line> {
        spec.iter()
            .map(|&(enter, who)| (0, enter, who.to_owned()))
            .collect()
    }

    #[test]
    fn writers_alone_readers_together() {
        let reader = |who: &str| who.ends_with("read");
        let fine = lines(&[
            (true, "a-read"),
            (true, "b-read"),
            (false, "a-read"),
            (false, "b-read"),
            (true, "w"),
            (false, "w"),
        ]);
        assert_eq!(
            overlaps(&fine, reader),
            Overlaps {
                violations: 0,
                shared: 1
            }
        );
        let writer_beside_reader = lines(&[(true, "a-read"), (true, "w"), (false, "w")]);
        assert_eq!(overlaps(&writer_beside_reader, reader).violations, 1);
        let reader_beside_writer = lines(&[(true, "w"), (true, "a-read")]);
        assert_eq!(overlaps(&reader_beside_writer, reader).violations, 1);
        let two_writers = lines(&[(true, "w"), (true, "v"), (false, "v"), (false, "w")]);
        assert_eq!(overlaps(&two_writers, |_| false).violations, 1);
    }
}
