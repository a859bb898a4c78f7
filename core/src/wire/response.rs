//! Decoded replies: what each request's answer holds, borrowed from the
//! receive buffer.

use super::error::DecodeError;
use super::jute::Reader;
use super::opcode::op;
use crate::{Children, Reply, Stat, ZkError};

/// What the body of a reply holds. ZooKeeper replies do not say which
/// request they answer; the client knows from the request it sent (a
/// [`Session`](super::Session) keeps it in its table of pending requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Expect {
    /// `{ustring path}`.
    Create,
    /// Nothing.
    Delete,
    /// `{Stat stat}`.
    Exists,
    /// `{buffer data; Stat stat}`.
    GetData,
    /// `{Stat stat}`.
    SetData,
    /// `{vector<ustring> children}`.
    GetChildren,
    /// A multi response with one `check` result.
    Check,
    /// `{ustring path}` (the path sent, echoed).
    Sync,
    // What only `create2` and `multi` answer comes last, the rest in
    // `Request`'s order, as `Response` keeps `Reply`'s: 38 B less herdless
    // code in the STM32 firmware (scripts/firmware-size.sh).
    /// `{ustring path; Stat stat}`.
    Create2,
    /// A multi response with one result per operation.
    Multi {
        /// Operations sent.
        ops: usize,
    },
}

/// A decoded reply.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Response<'a> {
    /// `create` succeeded.
    Created {
        /// The node's full path.
        path: &'a str,
    },
    /// `delete` succeeded.
    Deleted,
    /// `exists` found the node.
    Exists {
        /// The node's stat.
        stat: Stat,
    },
    /// `getData` succeeded.
    Data {
        /// The node's data (null reads as empty).
        data: &'a [u8],
        /// The node's stat.
        stat: Stat,
    },
    /// `setData` succeeded.
    DataSet {
        /// The node's new stat.
        stat: Stat,
    },
    /// `getChildren` succeeded; the names are decoded as they are iterated.
    Children(Children<'a>),
    /// The check held.
    Checked,
    /// `sync` completed.
    Synced,
    /// The request failed (including `NoNode` for `exists`).
    Error(ZkError),
    // The two answers recipes never get come last, the others in
    // `Reply`'s order: `into_reply` then measured 26 B less herdless code
    // in the STM32 firmware (scripts/firmware-size.sh).
    /// `create2` succeeded.
    Created2 {
        /// The node's full path.
        path: &'a str,
        /// The new node's stat.
        stat: Stat,
    },
    /// A multi was answered: as a whole it failed if any result is an
    /// error.
    Multi(MultiResults<'a>),
}

impl<'a> Response<'a> {
    /// The reply as recipes take it. `create2` loses its stat; a multi has
    /// no recipe form (`None`).
    pub fn into_reply(self) -> Option<Reply<'a>> {
        Some(match self {
            Response::Created { path } | Response::Created2 { path, .. } => Reply::Created { path },
            Response::Deleted => Reply::Deleted,
            Response::Exists { stat } => Reply::Exists { stat },
            Response::Data { data, stat } => Reply::Data { data, stat },
            Response::DataSet { stat } => Reply::DataSet { stat },
            Response::Children(children) => Reply::Children(children),
            Response::Checked => Reply::Checked,
            Response::Synced => Reply::Synced,
            Response::Error(e) => Reply::Error(e),
            Response::Multi(_) => return None,
        })
    }

    /// The error, if the request failed.
    pub fn error(&self) -> Option<ZkError> {
        match self {
            Response::Error(e) => Some(*e),
            _ => None,
        }
    }
}

/// The outcome of one operation of a multi.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum MultiResult<'a> {
    /// A create applied (servers before 3.8.2 answer `create2` this way
    /// too, without the stat).
    Created {
        /// The node's full path.
        path: &'a str,
    },
    /// A create2 applied.
    Created2 {
        /// The node's full path.
        path: &'a str,
        /// The new node's stat.
        stat: Stat,
    },
    /// A delete applied.
    Deleted,
    /// A setData applied.
    DataSet {
        /// The node's new stat.
        stat: Stat,
    },
    /// A check held.
    Checked,
    /// This operation was fine, but another one failed, so nothing was
    /// applied (an error result with code 0).
    NotApplied,
    /// This operation failed (`RuntimeInconsistency` for the operations
    /// after the one that failed).
    Error(ZkError),
}

/// The results of a multi, one per operation in request order, decoded as
/// they are iterated. Every result was checked when the reply was decoded,
/// so iterating cannot fail.
#[derive(Clone, Copy, Debug)]
pub struct MultiResults<'a> {
    bytes: &'a [u8],
    count: usize,
}

impl<'a> MultiResults<'a> {
    /// Checks a multi response body and keeps it for iteration. `ops` is
    /// the number of operations sent.
    pub(crate) fn parse(body: &'a [u8], ops: usize) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body);
        let mut count = 0usize;
        // Each result takes at least a 9-byte header, so this ends within
        // `body.len() / 9` steps.
        while next_result(&mut r)?.is_some() {
            count += 1;
        }
        if count != ops {
            return Err(DecodeError::MultiMismatch);
        }
        Ok(MultiResults { bytes: body, count })
    }

    /// Number of results (the number of operations sent).
    pub const fn len(&self) -> usize {
        self.count
    }

    /// Whether there are no results.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The error of the operation that failed, if the multi failed.
    pub fn first_error(&self) -> Option<ZkError> {
        self.iter().find_map(|r| match r {
            MultiResult::Error(e) => Some(e),
            _ => None,
        })
    }

    /// The results in request order.
    pub fn iter(&self) -> MultiIter<'a> {
        MultiIter {
            reader: Reader::new(self.bytes),
            done: false,
        }
    }
}

impl<'a> IntoIterator for MultiResults<'a> {
    type Item = MultiResult<'a>;
    type IntoIter = MultiIter<'a>;

    fn into_iter(self) -> MultiIter<'a> {
        self.iter()
    }
}

/// Iterator over [`MultiResults`].
#[derive(Clone, Debug)]
pub struct MultiIter<'a> {
    reader: Reader<'a>,
    done: bool,
}

impl<'a> Iterator for MultiIter<'a> {
    type Item = MultiResult<'a>;

    fn next(&mut self) -> Option<MultiResult<'a>> {
        if self.done {
            return None;
        }
        match next_result(&mut self.reader) {
            Ok(Some(result)) => Some(result),
            _ => {
                self.done = true;
                None
            }
        }
    }
}

/// The next result of a multi response, `None` at the closing header.
fn next_result<'a>(r: &mut Reader<'a>) -> Result<Option<MultiResult<'a>>, DecodeError> {
    let Some(kind) = result_kind(r)? else {
        return Ok(None);
    };
    Ok(Some(match kind {
        op::CREATE => MultiResult::Created { path: r.ustring()? },
        op::CREATE2 => MultiResult::Created2 {
            path: r.ustring()?,
            stat: r.stat()?,
        },
        op::DELETE => MultiResult::Deleted,
        op::SET_DATA => MultiResult::DataSet { stat: r.stat()? },
        op::CHECK => MultiResult::Checked,
        op::MULTI_ERROR => error_result(r)?,
        other => return Err(DecodeError::UnexpectedMultiType(other)),
    }))
}

/// The kind of the next result of a multi's answer, `None` at its end.
fn result_kind(r: &mut Reader<'_>) -> Result<Option<i32>, DecodeError> {
    let kind = r.int()?;
    let done = r.boolean()?;
    let _header_err = r.int()?;
    Ok((!done).then_some(kind))
}

/// An error result's body. The body's code is authoritative; the header
/// repeats it.
fn error_result<'a>(r: &mut Reader<'a>) -> Result<MultiResult<'a>, DecodeError> {
    Ok(match ZkError::from_code(r.int()?) {
        None => MultiResult::NotApplied,
        Some(e) => MultiResult::Error(e),
    })
}

/// The answer to a check, which goes out as a multi of one: read as
/// [`MultiResults::parse`] and its first result would read it, without the
/// code for the results a check never has (a firmware that sends nothing
/// but recipe requests links only this).
pub(crate) fn check_result<'a>(r: &mut Reader<'a>) -> Result<Response<'a>, DecodeError> {
    let response = match result_kind(r)? {
        Some(op::CHECK) => Response::Checked,
        Some(op::MULTI_ERROR) => match error_result(r)? {
            MultiResult::Error(e) => Response::Error(e),
            _ => return Err(DecodeError::MultiMismatch),
        },
        Some(other) => return Err(DecodeError::UnexpectedMultiType(other)),
        None => return Err(DecodeError::MultiMismatch),
    };
    match result_kind(r)? {
        None => Ok(response),
        Some(_) => Err(DecodeError::MultiMismatch),
    }
}
