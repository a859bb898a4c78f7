use super::hex;
use crate::wire::testing::{
    connect_response, empty_reply, notification, payload, reply, sample_stat,
};
use crate::wire::{decode, frame, DecodeError, Expect, MultiResult, Response};
use crate::{Stat, WatchEvent, WatchKind, ZkError};

extern crate std;
use std::vec::Vec;

fn decoded(expect: Expect, frame: &[u8]) -> Result<Response<'_>, DecodeError> {
    decode::reply(expect, payload(frame)).map(|(_, r)| r)
}

/// Every proper prefix of the payload fails to decode (with a typed
/// error), and the whole payload decodes.
fn truncations_fail(expect: Expect, frame: &[u8]) {
    let p = payload(frame);
    for cut in 0..p.len() {
        assert!(
            decode::reply(expect, &p[..cut]).is_err(),
            "{expect:?} cut at {cut} of {} decoded",
            p.len()
        );
    }
    assert!(decode::reply(expect, p).is_ok());
}

#[test]
fn the_reference_notification() {
    let bytes = hex(
        "00 00 00 1e ff ff ff ff ff ff ff ff ff ff ff ff 00 00 00 00 00 00 00 03 00 00 00 03 00 00 00 02 2f 61",
    );
    let f = frame::split(&bytes, 64).unwrap().unwrap();
    let (header, body) = decode::reply_header(f.payload).unwrap();
    assert_eq!((header.xid, header.zxid, header.err), (-1, -1, 0));
    let n = decode::notification(body).unwrap();
    assert_eq!((n.event_type, n.state, n.path), (3, 3, "/a"));
    assert_eq!(
        n.watch_event(),
        Some(WatchEvent {
            kind: WatchKind::NodeDataChanged,
            path: "/a"
        })
    );
    assert_eq!(notification(3, "/a"), bytes);
    for cut in 0..body.len() {
        assert!(decode::notification(&body[..cut]).is_err());
    }
}

#[test]
fn unknown_notification_types_are_not_watch_events() {
    let bytes = notification(5, "/a");
    let (_, body) = decode::reply_header(payload(&bytes)).unwrap();
    assert_eq!(decode::notification(body).unwrap().watch_event(), None);
}

#[test]
fn connect_response_with_and_without_the_read_only_byte() {
    let bytes = connect_response(4000, 0x77, &[9; 16], true);
    assert_eq!(bytes.len(), 41);
    let r = decode::connect_response(payload(&bytes)).unwrap();
    assert_eq!(
        (r.timeout_ms, r.session_id, r.password, r.read_only),
        (4000, 0x77, &[9u8; 16][..], Some(true))
    );
    assert!(!r.is_expired());
    let old = decode::connect_response(&payload(&bytes)[..36]).unwrap();
    assert_eq!(old.read_only, None);
    for cut in 0..36 {
        assert!(decode::connect_response(&payload(&bytes)[..cut]).is_err());
    }
    let expired = connect_response(0, 0, &[0; 16], false);
    assert!(decode::connect_response(payload(&expired))
        .unwrap()
        .is_expired());
    let half = connect_response(0, 5, &[0; 16], false);
    assert!(decode::connect_response(payload(&half))
        .unwrap()
        .is_expired());
}

#[test]
fn ping_reply_header() {
    let bytes = empty_reply(-2, 0x1234, 0);
    let (h, body) = decode::reply_header(payload(&bytes)).unwrap();
    assert_eq!((h.xid, h.zxid, h.err, body.len()), (-2, 0x1234, 0, 0));
    assert_eq!(h.error(), None);
    for cut in 0..16 {
        assert_eq!(
            decode::reply_header(&payload(&bytes)[..cut]),
            Err(DecodeError::Truncated)
        );
    }
}

#[test]
fn create_create2_and_sync() {
    let created = reply(1, 9, 0, |w| w.ustring("/q/n-0000000003"));
    assert!(matches!(
        decoded(Expect::Create, &created),
        Ok(Response::Created {
            path: "/q/n-0000000003"
        })
    ));
    truncations_fail(Expect::Create, &created);

    let created2 = reply(1, 9, 0, |w| {
        w.ustring("/q")?;
        w.stat(&sample_stat());
        Ok(())
    });
    match decoded(Expect::Create2, &created2) {
        Ok(Response::Created2 { path: "/q", stat }) => assert_eq!(stat, sample_stat()),
        other => panic!("{other:?}"),
    }
    truncations_fail(Expect::Create2, &created2);

    let synced = reply(1, 9, 0, |w| w.ustring("/q"));
    assert!(matches!(
        decoded(Expect::Sync, &synced),
        Ok(Response::Synced)
    ));
    truncations_fail(Expect::Sync, &synced);
}

#[test]
fn stats_keep_every_field_in_place() {
    let bytes = reply(1, 9, 0, |w| {
        w.stat(&sample_stat());
        Ok(())
    });
    // Offsets of the reference: version at 32, pzxid at 60 of the Stat.
    let stat_bytes = &payload(&bytes)[16..];
    assert_eq!(stat_bytes.len(), 68);
    assert_eq!(stat_bytes[35], 5);
    assert_eq!(stat_bytes[67], 11);
    for expect in [Expect::Exists, Expect::SetData] {
        let r = decoded(expect, &bytes).unwrap();
        let stat: Stat = match r {
            Response::Exists { stat } | Response::DataSet { stat } => stat,
            other => panic!("{other:?}"),
        };
        assert_eq!(stat, sample_stat());
        truncations_fail(expect, &bytes);
    }
}

#[test]
fn get_data_with_data_and_with_null() {
    let bytes = reply(1, 9, 0, |w| {
        w.buffer(b"hello")?;
        w.stat(&sample_stat());
        Ok(())
    });
    assert!(matches!(
        decoded(Expect::GetData, &bytes),
        Ok(Response::Data { data: b"hello", .. })
    ));
    truncations_fail(Expect::GetData, &bytes);
    let null = reply(1, 9, 0, |w| {
        w.int(-1);
        w.stat(&sample_stat());
        Ok(())
    });
    assert!(matches!(
        decoded(Expect::GetData, &null),
        Ok(Response::Data { data: b"", .. })
    ));
}

#[test]
fn children_stream_from_the_frame() {
    let bytes = reply(1, 9, 0, |w| {
        w.int(3);
        for name in ["lock-0000000002", "lock-0000000001", "x"] {
            w.ustring(name)?;
        }
        Ok(())
    });
    let Ok(Response::Children(children)) = decoded(Expect::GetChildren, &bytes) else {
        panic!()
    };
    assert_eq!(children.count_all(), 3);
    assert_eq!(
        children.collect::<Vec<_>>(),
        ["lock-0000000002", "lock-0000000001", "x"]
    );
    truncations_fail(Expect::GetChildren, &bytes);
    let null = reply(1, 9, 0, |w| {
        w.int(-1);
        Ok(())
    });
    let Ok(Response::Children(children)) = decoded(Expect::GetChildren, &null) else {
        panic!()
    };
    assert_eq!(children.count(), 0);
    let bad = reply(1, 9, 0, |w| {
        w.int(1);
        w.buffer(&[b'a', 0xc3])
    });
    assert_eq!(
        decoded(Expect::GetChildren, &bad).err(),
        Some(DecodeError::InvalidUtf8)
    );
    let negative = reply(1, 9, 0, |w| {
        w.int(-7);
        Ok(())
    });
    assert_eq!(
        decoded(Expect::GetChildren, &negative).err(),
        Some(DecodeError::NegativeLength(-7))
    );
}

#[test]
fn an_error_header_wins_over_any_body() {
    // A failed create may still carry a CreateResponse; it is not read.
    let bytes = reply(1, 9, -110, |w| w.ustring("/q"));
    for expect in [
        Expect::Create,
        Expect::GetChildren,
        Expect::Multi { ops: 3 },
        Expect::Check,
    ] {
        assert!(matches!(
            decoded(expect, &bytes),
            Ok(Response::Error(ZkError::NodeExists))
        ));
    }
    let garbage = reply(1, 9, -101, |w| {
        w.int(-5);
        Ok(())
    });
    assert!(matches!(
        decoded(Expect::Exists, &garbage),
        Ok(Response::Error(ZkError::NoNode))
    ));
    let unknown = empty_reply(1, 9, -9);
    assert!(matches!(
        decoded(Expect::Delete, &unknown),
        Ok(Response::Error(ZkError::Unknown(-9)))
    ));
}

fn multi_header(w: &mut crate::wire::jute::Writer<'_>, kind: i32, done: bool, err: i32) {
    w.int(kind);
    w.boolean(done);
    w.int(err);
}

#[test]
fn check_answered_through_a_multi() {
    let held = reply(1, 9, 0, |w| {
        multi_header(w, 13, false, 0);
        multi_header(w, -1, true, -1);
        Ok(())
    });
    assert!(matches!(
        decoded(Expect::Check, &held),
        Ok(Response::Checked)
    ));
    truncations_fail(Expect::Check, &held);
    let failed = reply(1, 9, 0, |w| {
        multi_header(w, -1, false, -103);
        w.int(-103);
        multi_header(w, -1, true, -1);
        Ok(())
    });
    assert!(matches!(
        decoded(Expect::Check, &failed),
        Ok(Response::Error(ZkError::BadVersion))
    ));
    // A check answered as a create, create2, delete or setData: each named
    // by its own type.
    for kind in [1, 15, 2, 5] {
        let wrong = reply(1, 9, 0, |w| {
            multi_header(w, kind, false, 0);
            if kind == 1 || kind == 15 {
                w.ustring("/a")?;
            }
            if kind == 15 || kind == 5 {
                w.stat(&sample_stat());
            }
            multi_header(w, -1, true, -1);
            Ok(())
        });
        assert_eq!(
            decoded(Expect::Check, &wrong).err(),
            Some(DecodeError::UnexpectedMultiType(kind)),
            "type {kind}"
        );
    }
    // No result, two, or a result "not applied": not a check's answer.
    let none = reply(1, 9, 0, |w| {
        multi_header(w, -1, true, -1);
        Ok(())
    });
    let two = reply(1, 9, 0, |w| {
        multi_header(w, 13, false, 0);
        multi_header(w, 13, false, 0);
        multi_header(w, -1, true, -1);
        Ok(())
    });
    let not_applied = reply(1, 9, 0, |w| {
        multi_header(w, -1, false, 0);
        w.int(0);
        multi_header(w, -1, true, -1);
        Ok(())
    });
    for bytes in [none, two, not_applied] {
        assert_eq!(
            decoded(Expect::Check, &bytes).err(),
            Some(DecodeError::MultiMismatch)
        );
    }
}

#[test]
fn multi_results_in_order() {
    let bytes = reply(1, 9, 0, |w| {
        multi_header(w, 1, false, 0);
        w.ustring("/a")?;
        multi_header(w, 15, false, 0);
        w.ustring("/b")?;
        w.stat(&sample_stat());
        multi_header(w, 2, false, 0);
        multi_header(w, 5, false, 0);
        w.stat(&sample_stat());
        multi_header(w, 13, false, 0);
        multi_header(w, -1, true, -1);
        Ok(())
    });
    let Ok(Response::Multi(results)) = decoded(Expect::Multi { ops: 5 }, &bytes) else {
        panic!()
    };
    assert_eq!(results.len(), 5);
    assert!(!results.is_empty());
    assert_eq!(results.first_error(), None);
    assert_eq!(
        results.iter().collect::<Vec<_>>(),
        [
            MultiResult::Created { path: "/a" },
            MultiResult::Created2 {
                path: "/b",
                stat: sample_stat()
            },
            MultiResult::Deleted,
            MultiResult::DataSet {
                stat: sample_stat()
            },
            MultiResult::Checked,
        ]
    );
    truncations_fail(Expect::Multi { ops: 5 }, &bytes);
    assert_eq!(
        decoded(Expect::Multi { ops: 4 }, &bytes).err(),
        Some(DecodeError::MultiMismatch)
    );
}

#[test]
fn a_failed_multi_names_the_failing_op() {
    let bytes = reply(1, 9, 0, |w| {
        multi_header(w, -1, false, 0);
        w.int(0);
        multi_header(w, -1, false, -110);
        w.int(-110);
        multi_header(w, -1, false, -2);
        w.int(-2);
        multi_header(w, -1, true, -1);
        Ok(())
    });
    let Ok(Response::Multi(results)) = decoded(Expect::Multi { ops: 3 }, &bytes) else {
        panic!()
    };
    assert_eq!(results.first_error(), Some(ZkError::NodeExists));
    assert_eq!(
        results.into_iter().collect::<Vec<_>>(),
        [
            MultiResult::NotApplied,
            MultiResult::Error(ZkError::NodeExists),
            MultiResult::Error(ZkError::RuntimeInconsistency),
        ]
    );
}

#[test]
fn multi_read_results_are_not_expected() {
    let bytes = reply(1, 9, 0, |w| {
        multi_header(w, 8, false, 0);
        w.int(0);
        multi_header(w, -1, true, -1);
        Ok(())
    });
    assert_eq!(
        decoded(Expect::Multi { ops: 1 }, &bytes).err(),
        Some(DecodeError::UnexpectedMultiType(8))
    );
}

#[test]
fn responses_become_recipe_replies() {
    let bytes = reply(1, 9, 0, |w| {
        w.ustring("/b")?;
        w.stat(&sample_stat());
        Ok(())
    });
    let reply = decoded(Expect::Create2, &bytes).unwrap().into_reply();
    assert!(matches!(reply, Some(crate::Reply::Created { path: "/b" })));
    let multi = reply_multi_empty();
    match decoded(Expect::Multi { ops: 0 }, &multi) {
        Ok(Response::Multi(results)) => assert!(results.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(decoded(Expect::Multi { ops: 0 }, &multi)
        .unwrap()
        .into_reply()
        .is_none());
}

fn reply_multi_empty() -> Vec<u8> {
    reply(1, 9, 0, |w| {
        multi_header(w, -1, true, -1);
        Ok(())
    })
}
