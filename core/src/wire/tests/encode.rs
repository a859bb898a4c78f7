use super::hex;
use crate::wire::{encode, ConnectRequest, EncodeError, MultiOp, Op, NEW_SESSION_PASSWORD};
use crate::{Acl, CreateMode, Request, Version};

/// Encodes with `f` into a generous buffer and returns the frame.
fn frame(f: impl Fn(&mut [u8]) -> Result<usize, EncodeError>) -> std::vec::Vec<u8> {
    let mut buf = [0u8; 512];
    let n = f(&mut buf).unwrap();
    // One byte short: refused, with the size, and nothing written.
    let mut short = std::vec![0x5Au8; n - 1];
    assert_eq!(
        f(&mut short),
        Err(EncodeError::BufferTooSmall {
            needed: n,
            capacity: n - 1
        })
    );
    assert!(short.iter().all(|b| *b == 0x5A), "buffer touched");
    buf[..n].to_vec()
}

fn request(xid: i32, op: Op<'_>) -> std::vec::Vec<u8> {
    let bytes = frame(|b| encode::request(xid, &op, b));
    assert_eq!(encode::request_len(&op), Ok(bytes.len()));
    bytes
}

#[test]
fn connect_request_of_a_new_session() {
    let req = ConnectRequest {
        last_zxid_seen: 0,
        timeout_ms: 30000,
        session_id: 0,
        password: &NEW_SESSION_PASSWORD,
        read_only: false,
    };
    assert_eq!(
        frame(|b| encode::connect(&req, b)),
        hex(
            "00 00 00 2d  00 00 00 00  00 00 00 00 00 00 00 00  00 00 75 30
             00 00 00 00 00 00 00 00  00 00 00 10  00 00 00 00 00 00 00 00
             00 00 00 00 00 00 00 00  00"
        )
    );
}

#[test]
fn connect_request_resuming_a_session_on_a_read_only_tolerant_client() {
    let password = [7u8; 16];
    let req = ConnectRequest {
        last_zxid_seen: 0x0102,
        timeout_ms: 10000,
        session_id: 0x1122_3344_5566_7788,
        password: &password,
        read_only: true,
    };
    assert_eq!(
        frame(|b| encode::connect(&req, b)),
        hex(
            "00 00 00 2d  00 00 00 00  00 00 00 00 00 00 01 02  00 00 27 10
             11 22 33 44 55 66 77 88  00 00 00 10  07 07 07 07 07 07 07 07
             07 07 07 07 07 07 07 07  01"
        )
    );
}

#[test]
fn ping_close_and_auth() {
    assert_eq!(
        frame(encode::ping),
        hex("00 00 00 08 ff ff ff fe 00 00 00 0b")
    );
    assert_eq!(
        frame(|b| encode::close_session(3, b)),
        hex("00 00 00 08 00 00 00 03 ff ff ff f5")
    );
    assert_eq!(
        frame(|b| encode::digest_auth("user:password", b)),
        hex(
            "00 00 00 27 ff ff ff fc 00 00 00 64 00 00 00 00 00 00 00 06 64 69 67 65 73 74
             00 00 00 0d 75 73 65 72 3a 70 61 73 73 77 6f 72 64"
        )
    );
}

#[test]
fn reads_with_and_without_watches() {
    assert_eq!(
        request(
            1,
            Op::Request(Request::GetData {
                path: "/a",
                watch: false
            })
        ),
        hex("00 00 00 0f 00 00 00 01 00 00 00 04 00 00 00 02 2f 61 00")
    );
    assert_eq!(
        request(
            4,
            Op::Request(Request::Exists {
                path: "/a",
                watch: true
            })
        ),
        hex("00 00 00 0f 00 00 00 04 00 00 00 03 00 00 00 02 2f 61 01")
    );
    assert_eq!(
        request(
            6,
            Op::Request(Request::GetChildren {
                path: "/",
                watch: true
            })
        ),
        hex("00 00 00 0e 00 00 00 06 00 00 00 08 00 00 00 01 2f 01")
    );
    assert_eq!(
        request(8, Op::Request(Request::Sync { path: "/a" })),
        hex("00 00 00 0e 00 00 00 08 00 00 00 09 00 00 00 02 2f 61")
    );
}

#[test]
fn create_and_create2() {
    assert_eq!(
        request(
            2,
            Op::Request(Request::Create {
                path: "/a",
                data: b"hi",
                acl: Acl::OPEN,
                mode: CreateMode::Persistent
            })
        ),
        hex(
            "00 00 00 33 00 00 00 02 00 00 00 01 00 00 00 02 2f 61 00 00 00 02 68 69
             00 00 00 01 00 00 00 1f 00 00 00 05 77 6f 72 6c 64 00 00 00 06 61 6e 79 6f 6e 65
             00 00 00 00"
        )
    );
    assert_eq!(
        request(
            9,
            Op::Create2 {
                path: "/a",
                data: b"",
                acl: Acl::CREATOR_ALL,
                mode: CreateMode::EphemeralSequential
            }
        ),
        hex(
            "00 00 00 2a 00 00 00 09 00 00 00 0f 00 00 00 02 2f 61 00 00 00 00
             00 00 00 01 00 00 00 1f 00 00 00 04 61 75 74 68 00 00 00 00  00 00 00 03"
        )
    );
}

#[test]
fn writes_with_versions() {
    assert_eq!(
        request(
            7,
            Op::Request(Request::Delete {
                path: "/a",
                version: Version::Exactly(5)
            })
        ),
        hex("00 00 00 12 00 00 00 07 00 00 00 02 00 00 00 02 2f 61 00 00 00 05")
    );
    assert_eq!(
        request(
            7,
            Op::Request(Request::Delete {
                path: "/a",
                version: Version::Any
            })
        ),
        hex("00 00 00 12 00 00 00 07 00 00 00 02 00 00 00 02 2f 61 ff ff ff ff")
    );
    assert_eq!(
        request(
            5,
            Op::Request(Request::SetData {
                path: "/a",
                data: b"x",
                version: Version::Exactly(3)
            })
        ),
        hex("00 00 00 17 00 00 00 05 00 00 00 05 00 00 00 02 2f 61 00 00 00 01 78 00 00 00 03")
    );
}

#[test]
fn check_goes_out_as_a_multi_of_one() {
    assert_eq!(
        request(
            10,
            Op::Request(Request::Check {
                path: "/a",
                version: Version::Exactly(2)
            })
        ),
        hex("00 00 00 24 00 00 00 0a 00 00 00 0e
             00 00 00 0d 00 ff ff ff ff  00 00 00 02 2f 61 00 00 00 02
             ff ff ff ff 01 ff ff ff ff")
    );
}

#[test]
fn multi_lists_its_operations_then_the_closing_header() {
    let ops = [
        MultiOp::Check {
            path: "/a",
            version: Version::Any,
        },
        MultiOp::Delete {
            path: "/b",
            version: Version::Exactly(1),
        },
    ];
    assert_eq!(
        request(11, Op::Multi(&ops)),
        hex("00 00 00 37 00 00 00 0b 00 00 00 0e
             00 00 00 0d 00 ff ff ff ff  00 00 00 02 2f 61 ff ff ff ff
             00 00 00 02 00 ff ff ff ff  00 00 00 02 2f 62 00 00 00 01
             ff ff ff ff 01 ff ff ff ff")
    );
    let mut buf = [0u8; 64];
    assert_eq!(
        encode::request(1, &Op::Multi(&[]), &mut buf),
        Err(EncodeError::EmptyMulti)
    );
}

#[test]
fn multi_sub_ops_carry_their_records() {
    let ops = [
        MultiOp::Create {
            path: "/c",
            data: b"",
            acl: Acl::READ,
            mode: CreateMode::Ephemeral,
        },
        MultiOp::Create2 {
            path: "/d",
            data: b"",
            acl: Acl::READ,
            mode: CreateMode::Persistent,
        },
        MultiOp::SetData {
            path: "/e",
            data: b"z",
            version: Version::Any,
        },
    ];
    let create = "00 00 00 02 2f 63 00 00 00 00 00 00 00 01 00 00 00 01
                  00 00 00 05 77 6f 72 6c 64 00 00 00 06 61 6e 79 6f 6e 65 00 00 00 01";
    let create2 = "00 00 00 02 2f 64 00 00 00 00 00 00 00 01 00 00 00 01
                   00 00 00 05 77 6f 72 6c 64 00 00 00 06 61 6e 79 6f 6e 65 00 00 00 00";
    let expected = hex(&std::format!(
        "00 00 00 8d 00 00 00 0c 00 00 00 0e
         00 00 00 01 00 ff ff ff ff {create}
         00 00 00 0f 00 ff ff ff ff {create2}
         00 00 00 05 00 ff ff ff ff 00 00 00 02 2f 65 00 00 00 01 7a ff ff ff ff
         ff ff ff ff 01 ff ff ff ff"
    ));
    assert_eq!(request(12, Op::Multi(&ops)), expected);
}

#[test]
fn set_watches_lists_data_exist_and_child_paths() {
    assert_eq!(
        frame(|b| encode::set_watches(0x10, &["/a"], &[], &["/b", "/c"], b)),
        hex("00 00 00 2e ff ff ff f8 00 00 00 65 00 00 00 00 00 00 00 10
             00 00 00 01 00 00 00 02 2f 61
             00 00 00 00
             00 00 00 02 00 00 00 02 2f 62 00 00 00 02 2f 63")
    );
}

#[test]
fn every_recipe_request_converts() {
    let requests = [
        Request::Create {
            path: "/a",
            data: b"",
            acl: Acl::OPEN,
            mode: CreateMode::Ephemeral,
        },
        Request::Delete {
            path: "/a",
            version: Version::Any,
        },
        Request::Exists {
            path: "/a",
            watch: true,
        },
        Request::GetData {
            path: "/a",
            watch: true,
        },
        Request::SetData {
            path: "/a",
            data: b"",
            version: Version::Any,
        },
        Request::GetChildren {
            path: "/a",
            watch: false,
        },
        Request::Check {
            path: "/a",
            version: Version::Any,
        },
        Request::Sync { path: "/a" },
    ];
    let opcodes = [1, 2, 3, 4, 5, 8, 14, 9];
    for (request, opcode) in requests.into_iter().zip(opcodes) {
        let op = Op::from(request);
        assert_eq!(op.opcode(), opcode, "{request:?}");
        let bytes = self::request(1, op);
        assert_eq!(i32::from_be_bytes(bytes[8..12].try_into().unwrap()), opcode);
        assert_eq!(op.watch().is_some(), request.sets_watch());
    }
}

#[test]
fn oversize_fields_are_refused_not_truncated() {
    let big = std::vec![0u8; crate::wire::DEFAULT_MAX_FRAME];
    let op = Op::Request(Request::SetData {
        path: "/a",
        data: &big,
        version: Version::Any,
    });
    assert_eq!(encode::request_len(&op), Err(EncodeError::TooLong));
}
