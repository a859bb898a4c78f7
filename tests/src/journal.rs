//! One order of the critical sections of contenders in several processes:
//! each appends `<unix ms> enter|leave <who>` to one file (O_APPEND, one
//! write per line) right after it acquires and right before it releases,
//! so the file's order is an order in which the sections really happened.
//! What Curator's and Kazoo's own programs write beside herdless's
//! contenders, and the oracle that reads it back.

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

/// Who is inside now: readers together, a writer alone. One copy of the
/// rule, for a journal read back ([`overlaps`]) and for a witness that
/// counts as contenders enter and leave.
#[derive(Debug, Default)]
pub struct Inside {
    readers: usize,
    writing: bool,
}

/// What one entry found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entered {
    /// It broke "a writer alone".
    pub violation: bool,
    /// A reader entered beside another reader.
    pub shared: bool,
}

impl Inside {
    /// A reader or a writer enters.
    pub fn enter(&mut self, reader: bool) -> Entered {
        let entered = Entered {
            violation: self.writing || (!reader && self.readers > 0),
            shared: reader && self.readers > 0,
        };
        if reader {
            self.readers += 1;
        } else {
            self.writing = true;
        }
        entered
    }

    /// A reader or a writer leaves.
    pub fn leave(&mut self, reader: bool) {
        if reader {
            self.readers = self.readers.saturating_sub(1);
        } else {
            self.writing = false;
        }
    }
}

/// Reads `lines` in order: `is_reader` says who holds as a reader (none,
/// for an exclusive lock or an election).
pub fn overlaps(lines: &[Line], is_reader: impl Fn(&str) -> bool) -> Overlaps {
    let mut found = Overlaps::default();
    let mut inside = Inside::default();
    for (_, enter, who) in lines {
        let reader = is_reader(who);
        if !enter {
            inside.leave(reader);
            continue;
        }
        let entered = inside.enter(reader);
        if entered.violation {
            found.violations += 1;
            eprintln!("{who} entered beside a writer, or as a writer beside someone");
        }
        found.shared += usize::from(entered.shared);
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
