//! The queue recipes' plain API: errors and their text, accessors, the size
//! limits of paths and priorities, `cancel`, deadlines, the ancestors a
//! producer creates for a deep directory, names a consumer must not take,
//! and the server's refusals (a session gone is not a connection lost, and
//! neither is any other error).

mod faults;

use faults::{Link, Operator};
use herdless_core::naming::Guid;
use herdless_core::path::PathError;
use herdless_core::queue::{Consumer, ConsumerEvent, Error, ItemKey, Producer, ProducerEvent};
use herdless_core::sim::{OwnedRequest, SimZk};
use herdless_core::{
    Children, CreateMode, Instant, Recipe, Reply, Request, RequestId, SessionEvent, Stat,
    WatchEvent, WatchKind, ZkError,
};

mod support;
use support::by_hand::events;

const QUEUE: &str = "/app/queue";

type Cons = Consumer<4, 64>;
type Prod = Producer<64>;

/// The hyphenated form of `Guid::from_random_bytes([b; 16])`, written out
/// by hand: bytes 6 and 8 carry the UUID version (4) and variant (10).
fn guid_text(b: u8) -> String {
    let v = 0x40 | (b & 0x0f);
    let r = 0x80 | (b & 0x3f);
    format!("{b:02x}{b:02x}{b:02x}{b:02x}-{b:02x}{b:02x}-{v:02x}{b:02x}-{r:02x}{b:02x}-{b:02x}{b:02x}{b:02x}{b:02x}{b:02x}{b:02x}")
}

/// Drains a recipe's requests as `(id, "kind path")`.
/// The no-op write a check of `path` goes behind, as `sent` shows it.
fn catch_up(path: &str) -> String {
    format!("Check {{ path: {path:?}, version: Any }}")
}

fn sent<R: Recipe>(r: &mut R) -> Vec<(RequestId, String)> {
    let mut out = Vec::new();
    while let Some(o) = r.poll_request() {
        let text = match o.request {
            Request::GetChildren { path, watch } => format!("list {path} watch={watch}"),
            Request::GetData { path, .. } => format!("read {path}"),
            Request::Delete { path, .. } => format!("delete {path}"),
            Request::Exists { path, watch } => format!("exists {path} watch={watch}"),
            Request::Create { path, .. } => format!("create {path}"),
            other => format!("{other:?}"),
        };
        out.push((o.id, text));
    }
    out
}

fn texts(s: &[(RequestId, String)]) -> Vec<&str> {
    s.iter().map(|(_, t)| t.as_str()).collect()
}

fn children<'a>(names: &'a &'a [&'a str]) -> Reply<'a> {
    Reply::Children(Children::new(names))
}

fn data(bytes: &[u8]) -> Reply<'_> {
    Reply::Data {
        data: bytes,
        stat: Stat::default(),
    }
}

const EMPTY: &[&str] = &[];

fn connected<R: Recipe>(r: &mut R) {
    r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
}

// ---------------------------------------------------------------- errors

#[test]
fn errors_say_what_went_wrong() {
    let too_large = Error::TooLarge {
        len: 300,
        capacity: 256,
    }
    .to_string();
    assert!(
        too_large.contains("300") && too_large.contains("256"),
        "{too_large}"
    );
    let zk = Error::Zk(ZkError::NoAuth).to_string();
    assert!(zk.contains(&ZkError::NoAuth.to_string()), "{zk}");
    let path = Error::Path(PathError::NotAbsolute).to_string();
    assert!(path.contains(&PathError::NotAbsolute.to_string()), "{path}");
    assert!(Error::BadPriority.to_string().contains("99"));
    // Every variant says something, and no two say the same.
    let all = [
        Error::Zk(ZkError::NoAuth),
        Error::Path(PathError::NotAbsolute),
        Error::TooLarge {
            len: 300,
            capacity: 256,
        },
        Error::BadPriority,
        Error::InvalidState,
        Error::SessionEnded,
        Error::BadReply,
    ]
    .map(|e| e.to_string());
    for (i, text) in all.iter().enumerate() {
        assert!(!text.is_empty(), "{:?}", all);
        assert!(!all[..i].contains(text), "{all:?}");
    }
}

#[test]
fn kazoo_priorities_are_three_decimal_digits() {
    let key = |name| ItemKey::parse(name).map(|k| (k.priority, k.sequence.value()));
    assert_eq!(key("entry-999-0000000004"), Some((999, 4)));
    assert_eq!(key("entry-000-0000000004"), Some((0, 4)));
    // Not Kazoo's `%03d`: not an item.
    for name in [
        "entry-0a1-0000000001",
        "entry-1x0-0000000001",
        "entry-10:-0000000001",
        "entry-+12-0000000001",
        "entry- 12-0000000001",
        "entry-/12-0000000001",
    ] {
        assert_eq!(key(name), None, "{name}");
    }
}

#[test]
fn a_consumer_never_takes_a_kazoo_name_with_a_non_digit_priority() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.peek().unwrap();
    let s = sent(&mut c);
    let names: &[&str] = &["entry-0a0-0000000001", "entry-999-0000000002"];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    assert_eq!(
        texts(&sent(&mut c)),
        [format!("read {QUEUE}/entry-999-0000000002")]
    );
}

// ------------------------------------------------------------- accessors

#[test]
fn debug_output_names_the_recipe_and_its_queue() {
    let c: Cons = Consumer::new(QUEUE).unwrap();
    let text = format!("{c:?}");
    assert!(
        text.starts_with("Consumer") && text.contains(QUEUE),
        "{text}"
    );
    let p: Prod = Producer::new(QUEUE).unwrap();
    let text = format!("{p:?}");
    assert!(
        text.starts_with("Producer") && text.contains(QUEUE),
        "{text}"
    );
}

#[test]
fn a_producer_is_busy_from_put_to_its_answer() {
    let mut zk = SimZk::new(1);
    zk.create_persistent(QUEUE, b"").unwrap();
    let mut p = Link::new(&mut zk, Prod::new(QUEUE).unwrap());
    assert!(!p.recipe.is_busy());
    p.act(&mut zk, |p| {
        p.put(Guid::from_random_bytes([1; 16]), b"x", None, false)
    })
    .unwrap();
    assert!(p.recipe.is_busy());
    assert_eq!(
        p.act(&mut zk, |p| p.put(
            Guid::from_random_bytes([2; 16]),
            b"y",
            None,
            false
        )),
        Err(Error::InvalidState)
    );
    p.settle(&mut zk);
    assert_eq!(p.events, [ProducerEvent::Put]);
    assert!(!p.recipe.is_busy());
    assert_eq!(
        p.recipe.item(),
        format!("{QUEUE}/{}-queue-0000000000", guid_text(1))
    );
}

#[test]
fn a_take_reports_its_deadline_only_while_it_runs() {
    let mut zk = SimZk::new(2);
    zk.create_persistent(QUEUE, b"").unwrap();
    let mut c = Link::new(&mut zk, Cons::new(QUEUE).unwrap());
    assert_eq!(c.recipe.poll_timeout(), None);
    let deadline = Instant::from_millis(500);
    c.act(&mut zk, |c| c.take(Some(deadline))).unwrap();
    c.settle(&mut zk);
    assert_eq!(c.recipe.poll_timeout(), Some(deadline));
    c.act(&mut zk, |c| c.handle_timeout(Instant::from_millis(499)));
    assert!(c.events.is_empty());
    c.act(&mut zk, |c| c.handle_timeout(deadline));
    assert_eq!(c.events, [ConsumerEvent::Empty]);
    assert_eq!(c.recipe.poll_timeout(), None);
    // Without a deadline, none.
    c.act(&mut zk, |c| c.take(None)).unwrap();
    c.settle(&mut zk);
    assert_eq!(c.recipe.poll_timeout(), None);
}

/// As Curator's timed `poll`: the listing in flight at the deadline
/// decides, so an item already there is taken however short the wait.
#[test]
fn a_take_whose_deadline_passes_with_its_listing_on_its_way_takes_an_item_there() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.take(Some(Instant::from_millis(1))).unwrap();
    let s = sent(&mut c);
    c.handle_timeout(Instant::from_millis(1));
    assert_eq!(events(&mut c), [], "the listing on its way decides");
    assert_eq!(c.poll_timeout(), None, "no timer while it is awaited");
    let names: &[&str] = &["a-queue-0000000001"];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    let s = sent(&mut c);
    assert_eq!(texts(&s), [format!("read {QUEUE}/a-queue-0000000001")]);
    c.handle_timeout(Instant::from_millis(2));
    c.handle_reply(Instant::ZERO, s[0].0, data(b"one"));
    let s = sent(&mut c);
    c.handle_reply(Instant::ZERO, s[0].0, Reply::Deleted);
    assert_eq!(events(&mut c), [ConsumerEvent::Taken { certain: true }]);
    assert_eq!(c.item(), b"one");
}

/// The listing that decides finds nothing: `Empty` at once, without a
/// watch to wait on.
#[test]
fn a_take_whose_deadline_passes_with_its_listing_on_its_way_finds_it_empty() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.take(Some(Instant::from_millis(1))).unwrap();
    let s = sent(&mut c);
    c.handle_timeout(Instant::from_millis(1));
    c.handle_reply(Instant::ZERO, s[0].0, children(&EMPTY));
    assert!(sent(&mut c).is_empty(), "no watched listing");
    assert_eq!(events(&mut c), [ConsumerEvent::Empty]);
    assert!(!c.is_busy());
    // A missing directory, likewise: no wait for its creation.
    c.take(Some(Instant::from_millis(1))).unwrap();
    let s = sent(&mut c);
    c.handle_timeout(Instant::from_millis(1));
    c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::NoNode));
    assert!(sent(&mut c).is_empty(), "no exists on the directory");
    assert_eq!(events(&mut c), [ConsumerEvent::Empty]);
}

/// A listing lost with the connection decides nothing: the take ends at
/// once.
#[test]
fn a_take_whose_deciding_listing_is_lost_ends_at_once() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.take(Some(Instant::from_millis(1))).unwrap();
    sent(&mut c);
    c.handle_timeout(Instant::from_millis(1));
    assert_eq!(c.poll_timeout(), None);
    c.handle_session(Instant::from_millis(2), SessionEvent::Suspended);
    let due = c.poll_timeout().expect("due once the listing is lost");
    assert!(due <= Instant::from_millis(2));
    c.handle_timeout(Instant::from_millis(2));
    assert_eq!(events(&mut c), [ConsumerEvent::Empty]);
    assert_eq!(c.poll_timeout(), None);
}

// ---------------------------------------------------------------- cancel

#[test]
fn cancel_stops_a_waiting_take_and_nothing_else() {
    let mut zk = SimZk::new(3);
    zk.create_persistent(QUEUE, b"").unwrap();
    let mut op = Operator::open(&mut zk);
    let mut c = Link::new(&mut zk, Cons::new(QUEUE).unwrap());
    // Nothing to stop.
    assert!(!c.recipe.cancel());
    c.act(&mut zk, |c| c.take(Some(Instant::from_millis(9))))
        .unwrap();
    c.settle(&mut zk);
    assert!(c.recipe.is_busy());
    assert!(c.recipe.cancel(), "a waiting take stops");
    assert!(!c.recipe.is_busy());
    assert_eq!(c.recipe.poll_timeout(), None);
    assert!(!c.recipe.cancel(), "already stopped");
    // An item now wakes nobody: no request, no event, the item stays.
    let before = c.sent.len();
    op.create(
        &mut zk,
        &format!("{QUEUE}/x-queue-"),
        b"later",
        CreateMode::PersistentSequential,
    );
    c.settle(&mut zk);
    assert_eq!(c.sent.len(), before, "{:?}", &c.sent[before..]);
    assert!(c.events.is_empty(), "{:?}", c.events);
    assert_eq!(zk.children(QUEUE).unwrap().len(), 1);
    // A new take works.
    c.act(&mut zk, |c| c.take(None)).unwrap();
    c.settle(&mut zk);
    assert_eq!(c.events, [ConsumerEvent::Taken { certain: true }]);
    assert_eq!(c.recipe.item(), b"later");
}

#[test]
fn cancel_drops_a_read_on_its_way() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.take(None).unwrap();
    let s = sent(&mut c);
    let names: &[&str] = &["a-queue-0000000001"];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    let s = sent(&mut c);
    assert_eq!(texts(&s), [format!("read {QUEUE}/a-queue-0000000001")]);
    assert!(c.cancel());
    c.handle_reply(Instant::ZERO, s[0].0, data(b"one"));
    assert!(sent(&mut c).is_empty(), "no delete after a cancel");
    assert_eq!(events(&mut c), []);
}

#[test]
fn cancel_refuses_a_take_whose_delete_is_on_its_way() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.take(None).unwrap();
    let s = sent(&mut c);
    let names: &[&str] = &["a-queue-0000000001"];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    let s = sent(&mut c);
    c.handle_reply(Instant::ZERO, s[0].0, data(b"one"));
    let s = sent(&mut c);
    assert_eq!(texts(&s), [format!("delete {QUEUE}/a-queue-0000000001")]);
    assert!(!c.cancel(), "the delete may land");
    assert!(c.is_busy());
    c.handle_reply(Instant::ZERO, s[0].0, Reply::Deleted);
    assert_eq!(events(&mut c), [ConsumerEvent::Taken { certain: true }]);
    assert_eq!(c.item(), b"one");
}

#[test]
fn cancel_refuses_a_take_whose_lost_delete_is_being_checked() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.take(None).unwrap();
    let s = sent(&mut c);
    let names: &[&str] = &["a-queue-0000000001"];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    let s = sent(&mut c);
    c.handle_reply(Instant::ZERO, s[0].0, data(b"one"));
    let s = sent(&mut c);
    c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::ConnectionLoss));
    // Disconnected, the check waits for the reconnect.
    assert!(!c.cancel(), "the lost delete may have landed");
    connected(&mut c);
    let s = sent(&mut c);
    assert_eq!(
        texts(&s),
        [
            catch_up(&format!("{QUEUE}/a-queue-0000000001")),
            format!("exists {QUEUE}/a-queue-0000000001 watch=false")
        ]
    );
    assert!(!c.cancel(), "the check is on its way");
    c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::NoNode));
    c.handle_reply(Instant::ZERO, s[1].0, Reply::Error(ZkError::NoNode));
    assert_eq!(events(&mut c), [ConsumerEvent::Taken { certain: false }]);
}

// ----------------------------------------------------------- size limits

#[test]
fn a_priority_goes_from_0_to_99() {
    let mut p: Prod = Producer::new(QUEUE).unwrap();
    connected(&mut p);
    assert_eq!(
        p.put(Guid::from_random_bytes([4; 16]), b"x", Some(100), false),
        Err(Error::BadPriority)
    );
    assert!(!p.is_busy());
    assert!(sent(&mut p).is_empty());
    p.put(Guid::from_random_bytes([4; 16]), b"x", Some(99), false)
        .unwrap();
    assert_eq!(
        texts(&sent(&mut p)),
        [format!("create {QUEUE}/{}-queue-99-", guid_text(4))]
    );
}

/// The longest item path: the directory, `/`, the GUID (36), `-queue-`
/// (7), a priority and its hyphen (3), and a sequence wrapped negative
/// (11: `-2147483648`).
const LONGEST_ITEM_PAST_DIR: usize = 1 + 36 + 7 + 3 + 11;

#[test]
fn a_put_fits_its_longest_item_path_exactly() {
    const DIR: &str = "/queue";
    // Sized to the byte: `N` is the longest item path.
    assert_eq!(DIR.len() + LONGEST_ITEM_PAST_DIR, 64);
    let mut zk = SimZk::new(4);
    zk.create_persistent(DIR, b"").unwrap();
    zk.set_cversion(DIR, i32::MIN).unwrap();
    let mut p = Link::new(&mut zk, Producer::<8, 64>::new(DIR).unwrap());
    p.act(&mut zk, |p| {
        p.put(Guid::from_random_bytes([5; 16]), b"x", Some(42), false)
    })
    .unwrap();
    p.settle(&mut zk);
    assert_eq!(p.events, [ProducerEvent::Put]);
    let expected = format!("{DIR}/{}-queue-42--2147483648", guid_text(5));
    assert_eq!(expected.len(), 64);
    assert_eq!(p.recipe.item(), expected);
    assert!(zk.node(&expected).is_some());
}

#[test]
fn a_put_whose_longest_item_path_would_not_fit_is_refused() {
    const DIR: &str = "/queue";
    let needed = DIR.len() + LONGEST_ITEM_PAST_DIR;
    let mut p = Producer::<8, 63>::new(DIR).unwrap();
    connected(&mut p);
    assert_eq!(
        p.put(Guid::from_random_bytes([6; 16]), b"x", None, false),
        Err(Error::Path(PathError::TooLong {
            needed,
            capacity: 63
        }))
    );
    assert!(!p.is_busy());
    assert!(sent(&mut p).is_empty());
}

/// A name of `len` bytes that parses as an item of sequence `seq`.
fn item_name(len: usize, seq: u32) -> String {
    let tail = format!("-queue-{seq:010}");
    format!("{}{tail}", "g".repeat(len - tail.len()))
}

#[test]
fn a_consumer_takes_an_item_whose_path_fills_its_buffer_exactly() {
    // "/q" + "/" + name = 32 bytes.
    let name = item_name(29, 1);
    let mut c = Consumer::<4, 64, 32>::new("/q").unwrap();
    connected(&mut c);
    c.peek().unwrap();
    let s = sent(&mut c);
    let names: &[&str] = &[name.as_str()];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    let s = sent(&mut c);
    assert_eq!(texts(&s), [format!("read /q/{name}")]);
    c.handle_reply(Instant::ZERO, s[0].0, data(b"fits"));
    assert_eq!(events(&mut c), [ConsumerEvent::Peeked]);
    assert_eq!(c.item_name(), format!("/q/{name}"));
}

#[test]
fn a_consumer_of_the_root_takes_an_item_whose_path_fills_its_buffer_exactly() {
    // "/" + name = 32 bytes: the root adds no separator of its own.
    let name = item_name(31, 1);
    let mut c = Consumer::<4, 64, 32>::new("/").unwrap();
    connected(&mut c);
    c.peek().unwrap();
    let s = sent(&mut c);
    let names: &[&str] = &[name.as_str()];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    assert_eq!(texts(&sent(&mut c)), [format!("read /{name}")]);
}

#[test]
fn a_consumer_skips_an_item_whose_path_would_not_fit() {
    // "/q" + "/" + name = 33 bytes: one too many, although the name
    // alone fits. A lower item that does not fit never hides a higher one
    // that does.
    let too_long = item_name(30, 1);
    let fits = item_name(29, 2);
    let mut c = Consumer::<4, 64, 32>::new("/q").unwrap();
    connected(&mut c);
    c.peek().unwrap();
    let s = sent(&mut c);
    let names: &[&str] = &[too_long.as_str(), fits.as_str()];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    assert_eq!(texts(&sent(&mut c)), [format!("read /q/{fits}")]);

    let mut c = Consumer::<4, 64, 32>::new("/q").unwrap();
    connected(&mut c);
    c.peek().unwrap();
    let s = sent(&mut c);
    let names: &[&str] = &[too_long.as_str()];
    c.handle_reply(Instant::ZERO, s[0].0, children(&names));
    assert!(sent(&mut c).is_empty());
    assert_eq!(events(&mut c), [ConsumerEvent::Empty]);
}

#[test]
fn a_peek_of_an_empty_queue_finds_it_empty() {
    let mut zk = SimZk::new(5);
    zk.create_persistent(QUEUE, b"").unwrap();
    let mut c = Link::new(&mut zk, Cons::new(QUEUE).unwrap());
    c.act(&mut zk, |c| c.peek()).unwrap();
    c.settle(&mut zk);
    assert_eq!(c.events, [ConsumerEvent::Empty]);
    assert!(!c.recipe.is_busy());
    // A peek sets no watch and leaves nothing waiting.
    assert_eq!(c.count("getChildren"), 1);
    assert_eq!(zk.watch_count(), 0);
}

// --------------------------------------------------- a deep directory

fn creates(sent: &[OwnedRequest]) -> Vec<String> {
    sent.iter()
        .filter_map(|r| match r {
            OwnedRequest::Create { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_put_creates_every_missing_ancestor_of_a_deep_directory_once() {
    for existing in [&[][..], &["/a"][..], &["/a", "/a/b"][..]] {
        let mut zk = SimZk::new(6);
        for dir in existing {
            zk.create_persistent(dir, b"").unwrap();
        }
        let mut p = Link::new(&mut zk, Prod::new("/a/b/c").unwrap());
        p.act(&mut zk, |p| {
            p.put(Guid::from_random_bytes([7; 16]), b"deep", None, false)
        })
        .unwrap();
        p.settle(&mut zk);
        assert_eq!(p.events, [ProducerEvent::Put], "{existing:?}");
        let item = format!("/a/b/c/{}-queue-", guid_text(7));
        // The item's create fails (NoNode), then each level from the top,
        // then the item again.
        assert_eq!(
            creates(&p.sent),
            [item.as_str(), "/a", "/a/b", "/a/b/c", item.as_str()],
            "{existing:?}"
        );
        assert_eq!(zk.children("/a/b/c").unwrap().len(), 1);
        assert_eq!(zk.node(&format!("{item}0000000000")).unwrap().data, b"deep");
    }
}

// ------------------------------------------- the server's refusals

#[test]
fn a_refused_read_fails_the_take_with_the_servers_error() {
    for error in [ZkError::NoAuth, ZkError::BadArguments] {
        let mut c: Cons = Consumer::new(QUEUE).unwrap();
        connected(&mut c);
        c.take(None).unwrap();
        let s = sent(&mut c);
        let names: &[&str] = &["a-queue-0000000001"];
        c.handle_reply(Instant::ZERO, s[0].0, children(&names));
        let s = sent(&mut c);
        c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(error));
        assert_eq!(
            events(&mut c),
            [ConsumerEvent::Failed(Error::Zk(error))],
            "{error:?}"
        );
        assert!(!c.is_busy());
        // Still connected, in the same session: a take goes out at once.
        c.take(None).unwrap();
        assert_eq!(
            texts(&sent(&mut c)),
            [format!("read {QUEUE}/a-queue-0000000001")],
            "{error:?}"
        );
    }
}

/// A listing too large for an embedded driver's receive buffer (a name in
/// it over the buffer) reaches the consumer as the parts before that name,
/// then `ReplyTooLarge`. Those parts are not the queue: the lowest item may
/// be in the rest. The take fails, and the next one lists again rather
/// than take the lowest item of the parts read.
#[test]
fn a_take_whose_listing_is_too_large_after_some_parts_lists_again_next_time() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    assert!(c.takes_listing_in_parts());
    connected(&mut c);
    c.take(None).unwrap();
    let s = sent(&mut c);
    assert_eq!(texts(&s), [format!("list {QUEUE} watch=false")]);
    let part: &[&str] = &["a-queue-0000000007"];
    c.handle_listing_part(Instant::ZERO, s[0].0, Children::new(&part), false);
    c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::ReplyTooLarge));
    assert_eq!(
        events(&mut c),
        [ConsumerEvent::Failed(Error::Zk(ZkError::ReplyTooLarge))]
    );
    assert!(sent(&mut c).is_empty());
    c.take(None).unwrap();
    assert_eq!(
        texts(&sent(&mut c)),
        [format!("list {QUEUE} watch=false")],
        "not a read of the item the parts named"
    );
}

/// A take in progress when its session expires goes on on the next
/// session, as one asked for before the transport has renewed the session
/// does (an embedded consumer once failed on every `take` until a real
/// server's expiry was over, and spun; herdless-std's, on a renewing
/// session, failed with `SessionEnded` although a session followed). A
/// close, which no session follows, ends it.
#[test]
fn a_take_whose_session_expires_goes_on_on_the_next_and_a_close_ends_it() {
    for error in [ZkError::SessionExpired, ZkError::SessionMoved] {
        let mut c: Cons = Consumer::new(QUEUE).unwrap();
        connected(&mut c);
        c.take(None).unwrap();
        let s = sent(&mut c);
        c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(error));
        assert_eq!(events(&mut c), [], "{error:?}");
        assert!(sent(&mut c).is_empty(), "nothing without a session");
        assert!(c.is_busy());
        assert_eq!(c.take(None), Err(Error::InvalidState), "still taking");
        connected(&mut c);
        assert_eq!(
            texts(&sent(&mut c)),
            [format!("list {QUEUE} watch=false")],
            "{error:?}"
        );
    }
    for ending in [SessionEvent::Expired, SessionEvent::Closed] {
        let mut c: Cons = Consumer::new(QUEUE).unwrap();
        connected(&mut c);
        c.take(None).unwrap();
        sent(&mut c);
        c.handle_session(Instant::ZERO, ending);
        if ending == SessionEvent::Expired {
            assert_eq!(events(&mut c), []);
            assert!(c.is_busy(), "waits for the next session");
            c.handle_session(Instant::ZERO, SessionEvent::Closed);
        }
        assert_eq!(events(&mut c), [ConsumerEvent::Failed(Error::SessionEnded)]);
        assert!(!c.is_busy());
    }
}

/// No session follows a close: a take or a put is refused at once, rather
/// than wait for ever.
#[test]
fn a_take_or_a_put_after_a_close_is_refused() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.handle_session(Instant::ZERO, SessionEvent::Closed);
    assert_eq!(c.take(None), Err(Error::SessionEnded));
    assert_eq!(c.peek(), Err(Error::SessionEnded));
    // A late expiry answer does not reopen it.
    c.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(c.take(None), Err(Error::SessionEnded));
    let mut p: Prod = Producer::new(QUEUE).unwrap();
    connected(&mut p);
    p.handle_session(Instant::ZERO, SessionEvent::Closed);
    assert_eq!(
        p.put(Guid::from_random_bytes([3; 16]), b"x", None, false),
        Err(Error::SessionEnded)
    );
}

/// A put asked for between an expiry and the next session goes out on
/// the next session.
#[test]
fn a_put_after_an_expiry_waits_for_the_next_session() {
    let mut p: Prod = Producer::new(QUEUE).unwrap();
    connected(&mut p);
    p.handle_session(Instant::ZERO, SessionEvent::Expired);
    p.put(Guid::from_random_bytes([4; 16]), b"x", None, false)
        .unwrap();
    assert!(sent(&mut p).is_empty(), "nothing without a session");
    p.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
    let s = sent(&mut p);
    assert_eq!(s.len(), 1, "{s:?}");
    assert!(s[0].1.starts_with(&format!("create {QUEUE}/")), "{s:?}");
    let path = format!("{QUEUE}/{}-queue-0000000001", guid_text(4));
    p.handle_reply(Instant::ZERO, s[0].0, Reply::Created { path: &path });
    assert_eq!(events(&mut p), [ProducerEvent::Put]);
}

#[test]
fn a_delete_answered_session_expired_is_checked_on_the_next_session() {
    for (still_there, expected) in [
        (false, vec![ConsumerEvent::Taken { certain: false }]),
        (true, vec![ConsumerEvent::Taken { certain: true }]),
    ] {
        let mut c: Cons = Consumer::new(QUEUE).unwrap();
        connected(&mut c);
        c.take(None).unwrap();
        let s = sent(&mut c);
        let names: &[&str] = &["a-queue-0000000001"];
        c.handle_reply(Instant::ZERO, s[0].0, children(&names));
        let s = sent(&mut c);
        c.handle_reply(Instant::ZERO, s[0].0, data(b"one"));
        let s = sent(&mut c);
        assert_eq!(texts(&s), [format!("delete {QUEUE}/a-queue-0000000001")]);
        // The delete may have landed before the session went.
        c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::SessionExpired));
        assert_eq!(events(&mut c), [], "not failed: the item may be taken");
        c.handle_session(Instant::ZERO, SessionEvent::Expired);
        assert_eq!(events(&mut c), []);
        c.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
        let s = sent(&mut c);
        assert_eq!(
            texts(&s),
            [
                catch_up(&format!("{QUEUE}/a-queue-0000000001")),
                format!("exists {QUEUE}/a-queue-0000000001 watch=false")
            ]
        );
        let s = &s[1..];
        if still_there {
            c.handle_reply(
                Instant::ZERO,
                s[0].0,
                Reply::Exists {
                    stat: Stat::default(),
                },
            );
            let s = sent(&mut c);
            assert_eq!(texts(&s), [format!("delete {QUEUE}/a-queue-0000000001")]);
            c.handle_reply(Instant::ZERO, s[0].0, Reply::Deleted);
        } else {
            c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::NoNode));
        }
        assert_eq!(events(&mut c), expected, "still there: {still_there}");
        assert_eq!(c.item(), b"one");
    }
}

#[test]
fn a_refused_create_fails_the_put_with_the_servers_error() {
    for error in [ZkError::NoAuth, ZkError::BadArguments] {
        let mut p: Prod = Producer::new(QUEUE).unwrap();
        connected(&mut p);
        p.put(Guid::from_random_bytes([8; 16]), b"x", None, false)
            .unwrap();
        let s = sent(&mut p);
        p.handle_reply(Instant::ZERO, s[0].0, Reply::Error(error));
        assert_eq!(
            events(&mut p),
            [ProducerEvent::Failed(Error::Zk(error))],
            "{error:?}"
        );
        assert!(!p.is_busy());
        // Still connected, in the same session: a put goes out at once.
        p.put(Guid::from_random_bytes([9; 16]), b"y", None, false)
            .unwrap();
        assert_eq!(
            texts(&sent(&mut p)),
            [format!("create {QUEUE}/{}-queue-", guid_text(9))],
            "{error:?}"
        );
    }
}

#[test]
fn a_create_answered_session_expired_looks_for_its_item_on_the_next_session() {
    for found in [true, false] {
        let mut p: Prod = Producer::new(QUEUE).unwrap();
        connected(&mut p);
        p.put(Guid::from_random_bytes([10; 16]), b"x", None, false)
            .unwrap();
        let s = sent(&mut p);
        // It may have landed before the session went.
        p.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::SessionExpired));
        assert_eq!(events(&mut p), []);
        assert!(p.is_busy());
        p.handle_session(Instant::ZERO, SessionEvent::Expired);
        assert_eq!(events(&mut p), []);
        assert!(p.is_busy());
        p.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
        let s = sent(&mut p);
        // The search goes behind a no-op write: the new session's server
        // may not have applied the create yet.
        assert_eq!(
            texts(&s),
            [catch_up(QUEUE), format!("list {QUEUE} watch=false")]
        );
        let s = &s[1..];
        let own = format!("{}-queue-0000000003", guid_text(10));
        let names: Vec<&str> = if found {
            vec!["other-queue-0000000002", own.as_str()]
        } else {
            vec!["other-queue-0000000002"]
        };
        p.handle_reply(
            Instant::ZERO,
            s[0].0,
            Reply::Children(Children::new(&names.as_slice())),
        );
        if found {
            assert_eq!(events(&mut p), [ProducerEvent::Put]);
            assert_eq!(p.item(), format!("{QUEUE}/{own}"));
        } else {
            assert_eq!(
                texts(&sent(&mut p)),
                [format!("create {QUEUE}/{}-queue-", guid_text(10))]
            );
        }
    }
}

#[test]
fn a_search_answered_session_expired_searches_again_on_the_next_session() {
    let mut p: Prod = Producer::new(QUEUE).unwrap();
    connected(&mut p);
    p.put(Guid::from_random_bytes([11; 16]), b"x", None, false)
        .unwrap();
    let s = sent(&mut p);
    p.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::ConnectionLoss));
    p.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let s = sent(&mut p);
    let search = [catch_up(QUEUE), format!("list {QUEUE} watch=false")];
    assert_eq!(texts(&s), search);
    // The lost create may have landed: still unknown.
    p.handle_reply(Instant::ZERO, s[1].0, Reply::Error(ZkError::SessionExpired));
    p.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(events(&mut p), []);
    assert!(p.is_busy());
    p.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
    assert_eq!(texts(&sent(&mut p)), search);
}

/// Nothing of the item can have landed when an ancestor's create is
/// answered `SessionExpired`: the put goes on on the next session, as one
/// asked then would, and a close (no session follows) ends it.
#[test]
fn an_ancestor_create_answered_session_expired_puts_on_the_next_session() {
    for ending in [SessionEvent::Expired, SessionEvent::Closed] {
        let mut p: Prod = Producer::new("/a/q").unwrap();
        connected(&mut p);
        p.put(Guid::from_random_bytes([12; 16]), b"x", None, false)
            .unwrap();
        let s = sent(&mut p);
        p.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::NoNode));
        // Only the first ancestor goes out: the item's create is still queued.
        let ensure = p.poll_request().unwrap();
        assert_eq!(ensure.request.path(), "/a");
        let ensure = ensure.id;
        p.handle_reply(Instant::ZERO, ensure, Reply::Error(ZkError::SessionExpired));
        assert_eq!(events(&mut p), []);
        assert!(p.is_busy());
        p.handle_session(Instant::ZERO, ending);
        if ending == SessionEvent::Closed {
            assert_eq!(events(&mut p), [ProducerEvent::Failed(Error::SessionEnded)]);
            assert!(!p.is_busy());
            continue;
        }
        p.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
        let again = sent(&mut p);
        assert_eq!(again.len(), 1, "{:?}", texts(&again));
        assert!(
            again[0].1.starts_with("create /a/q/"),
            "{:?}",
            texts(&again)
        );
    }
}

/// An ephemeral item lives and dies with its session: a put whose session
/// expires ends with it.
#[test]
fn an_ephemeral_put_ends_with_its_session() {
    let mut p: Prod = Producer::new(QUEUE).unwrap();
    connected(&mut p);
    p.put(Guid::from_random_bytes([13; 16]), b"x", None, true)
        .unwrap();
    sent(&mut p);
    p.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(events(&mut p), [ProducerEvent::Failed(Error::SessionEnded)]);
    assert!(!p.is_busy());
}

// ------------------------------------------------ notifications

#[test]
fn a_waiting_take_ignores_notifications_about_other_nodes_and_data() {
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    connected(&mut c);
    c.take(None).unwrap();
    let s = sent(&mut c);
    c.handle_reply(Instant::ZERO, s[0].0, children(&EMPTY));
    let s = sent(&mut c);
    assert_eq!(texts(&s), [format!("list {QUEUE} watch=true")]);
    c.handle_reply(Instant::ZERO, s[0].0, children(&EMPTY));
    assert!(sent(&mut c).is_empty(), "waits on the watch");
    for (kind, path) in [
        (WatchKind::NodeChildrenChanged, "/app"),
        (WatchKind::NodeChildrenChanged, "/app/queue2"),
        (WatchKind::NodeCreated, "/app/other"),
        (WatchKind::NodeDataChanged, QUEUE),
    ] {
        c.handle_watch(Instant::ZERO, WatchEvent { kind, path });
        assert!(sent(&mut c).is_empty(), "{kind:?} {path}");
    }
    c.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeChildrenChanged,
            path: QUEUE,
        },
    );
    assert_eq!(texts(&sent(&mut c)), [format!("list {QUEUE} watch=false")]);
}

/// A put whose create was still queued (not sent) when the connection
/// dropped: the loss empties the queue, so the reconnect must send the
/// create again; a `Connected` that reports no loss sends nothing twice.
#[test]
fn a_put_queued_when_the_connection_dropped_is_sent_on_reconnect_once() {
    let mut p: Prod = Producer::new(QUEUE).unwrap();
    connected(&mut p);
    p.put(Guid::from_random_bytes([3; 16]), b"x", None, false)
        .unwrap();
    p.handle_session(Instant::ZERO, SessionEvent::Suspended);
    assert!(sent(&mut p).is_empty(), "nothing is sent while down");
    connected(&mut p);
    let again = sent(&mut p);
    assert_eq!(
        texts(&again),
        [format!("create {QUEUE}/{}-queue-", guid_text(3)).as_str()]
    );
    connected(&mut p);
    assert!(sent(&mut p).is_empty(), "the create went once");
    assert!(p.is_busy());
}

/// Answers a consumer's listing with `names` and returns what it sends next.
fn listed(c: &mut Cons, id: RequestId, names: &[&str]) -> Vec<(RequestId, String)> {
    c.handle_reply(Instant::ZERO, id, children(&names));
    sent(c)
}

#[test]
fn an_item_too_large_to_hold_is_passed_over_and_left_in_the_queue() {
    // Written by another client: 65 bytes, over the consumer's 64.
    let big = [b'x'; 65];
    let (a, b, c) = (
        "a-queue-0000000001",
        "b-queue-0000000002",
        "c-queue-0000000003",
    );
    let mut consumer: Cons = Consumer::new(QUEUE).unwrap();
    consumer.take(None).unwrap();
    let list = sent(&mut consumer);
    let read = listed(&mut consumer, list[0].0, &[a, b]);
    assert_eq!(texts(&read), [format!("read {QUEUE}/{a}")]);
    consumer.handle_reply(Instant::ZERO, read[0].0, data(&big));
    assert_eq!(consumer.passed_over(), format!("{QUEUE}/{a}"));
    assert!(
        events(&mut consumer).is_empty(),
        "no error: the take goes on"
    );
    let read = sent(&mut consumer);
    assert_eq!(texts(&read), [format!("read {QUEUE}/{b}")], "not deleted");
    consumer.handle_reply(Instant::ZERO, read[0].0, data(b"small"));
    let delete = sent(&mut consumer);
    consumer.handle_reply(Instant::ZERO, delete[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut consumer),
        [ConsumerEvent::Taken { certain: true }]
    );
    assert_eq!(consumer.item(), b"small");

    // The next listing still holds it: it is not read again.
    consumer.take(None).unwrap();
    let list = sent(&mut consumer);
    let read = listed(&mut consumer, list[0].0, &[a, c]);
    assert_eq!(texts(&read), [format!("read {QUEUE}/{c}")]);
    consumer.cancel();

    // A peek passes over it too; an embedded transport's answer that the
    // reply did not fit its receive buffer counts the same.
    let mut consumer: Cons = Consumer::new(QUEUE).unwrap();
    consumer.peek().unwrap();
    let list = sent(&mut consumer);
    let read = listed(&mut consumer, list[0].0, &[a, c]);
    consumer.handle_reply(
        Instant::ZERO,
        read[0].0,
        Reply::Error(ZkError::ReplyTooLarge),
    );
    assert_eq!(consumer.passed_over(), format!("{QUEUE}/{a}"));
    let read = sent(&mut consumer);
    assert_eq!(texts(&read), [format!("read {QUEUE}/{c}")]);
    consumer.handle_reply(Instant::ZERO, read[0].0, data(b"next"));
    assert_eq!(events(&mut consumer), [ConsumerEvent::Peeked]);
}

#[test]
fn an_item_passed_over_is_forgotten_once_it_leaves_the_queue() {
    // The directory is made anew and its sequence numbers start again: an
    // item of the same name and size that fits is taken.
    let a = "a-queue-0000000001";
    let mut consumer: Cons = Consumer::new(QUEUE).unwrap();
    consumer.peek().unwrap();
    let list = sent(&mut consumer);
    let read = listed(&mut consumer, list[0].0, &[a]);
    consumer.handle_reply(Instant::ZERO, read[0].0, data(&[b'x'; 65]));
    let list = sent(&mut consumer);
    assert_eq!(texts(&list), [format!("list {QUEUE} watch=false")]);
    let none = listed(&mut consumer, list[0].0, &[a]);
    assert!(none.is_empty(), "{none:?}");
    assert_eq!(events(&mut consumer), [ConsumerEvent::Empty]);

    consumer.peek().unwrap();
    let list = sent(&mut consumer);
    assert!(listed(&mut consumer, list[0].0, &[]).is_empty());
    assert_eq!(events(&mut consumer), [ConsumerEvent::Empty]);
    consumer.peek().unwrap();
    let list = sent(&mut consumer);
    let read = listed(&mut consumer, list[0].0, &[a]);
    assert_eq!(texts(&read), [format!("read {QUEUE}/{a}")], "read again");
}

/// A consumer's listing answered with the items numbered `items` (each
/// named `i-queue-<n>`); returns what it sends next.
fn listed_items(c: &mut Consumer<8, 64>, id: RequestId, items: &[u32]) -> Vec<(RequestId, String)> {
    let names: Vec<String> = items.iter().map(|i| format!("i-queue-{i:010}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    c.handle_reply(Instant::ZERO, id, children(&&names[..]));
    sent(c)
}

fn read_of(i: u32) -> String {
    format!("read {QUEUE}/i-queue-{i:010}")
}

/// More items too large than a consumer remembers one by one: it reads
/// none of them again while they stay, however many, and an item added
/// later is read at once. Reading the oldest again once forgotten kept a
/// consumer listing and reading without end, its deadline never reached,
/// while a queue held five items too large or more (found by the
/// simulator's writes over the receive buffer).
#[test]
fn a_consumer_reads_no_item_passed_over_again_however_many_there_are() {
    let too_large = [b'x'; 65];
    let mut consumer: Consumer<8, 64> = Consumer::new(QUEUE).unwrap();
    consumer.peek().unwrap();
    let list = sent(&mut consumer);
    let mut next = listed_items(&mut consumer, list[0].0, &[1, 2, 3, 4, 5, 6, 7]);
    for i in 1..=6 {
        assert_eq!(texts(&next), [read_of(i)]);
        consumer.handle_reply(Instant::ZERO, next[0].0, data(&too_large));
        next = sent(&mut consumer);
    }
    assert_eq!(texts(&next), [read_of(7)]);
    consumer.handle_reply(Instant::ZERO, next[0].0, data(b"fits"));
    assert_eq!(events(&mut consumer), [ConsumerEvent::Peeked]);

    // The one that fits is taken by someone else: the six too large are
    // all left out, and the peek finds the queue empty.
    consumer.peek().unwrap();
    let read = sent(&mut consumer);
    assert_eq!(texts(&read), [read_of(7)]);
    consumer.handle_reply(Instant::ZERO, read[0].0, Reply::Error(ZkError::NoNode));
    let list = sent(&mut consumer);
    assert_eq!(texts(&list), [format!("list {QUEUE} watch=false")]);
    assert!(listed_items(&mut consumer, list[0].0, &[1, 2, 3, 4, 5, 6]).is_empty());
    assert_eq!(events(&mut consumer), [ConsumerEvent::Empty]);

    // An item added later is read at once.
    consumer.peek().unwrap();
    let list = sent(&mut consumer);
    let read = listed_items(&mut consumer, list[0].0, &[1, 2, 3, 4, 5, 6, 8]);
    assert_eq!(texts(&read), [read_of(8)]);
    consumer.handle_reply(Instant::ZERO, read[0].0, data(b"fits"));
    assert_eq!(events(&mut consumer), [ConsumerEvent::Peeked]);

    // Someone takes it, and a consumer with a larger buffer the last one
    // passed over: from the next listing on, the one before that is no
    // longer left out. It is read once more, then left out again.
    consumer.peek().unwrap();
    let read = sent(&mut consumer);
    consumer.handle_reply(Instant::ZERO, read[0].0, Reply::Error(ZkError::NoNode));
    let list = sent(&mut consumer);
    assert!(listed_items(&mut consumer, list[0].0, &[1, 2, 3, 4, 5]).is_empty());
    assert_eq!(events(&mut consumer), [ConsumerEvent::Empty]);
    consumer.peek().unwrap();
    let list = sent(&mut consumer);
    let read = listed_items(&mut consumer, list[0].0, &[1, 2, 3, 4, 5]);
    assert_eq!(texts(&read), [read_of(5)]);
    consumer.handle_reply(Instant::ZERO, read[0].0, data(&too_large));
    let list = sent(&mut consumer);
    assert!(listed_items(&mut consumer, list[0].0, &[1, 2, 3, 4, 5]).is_empty());
    assert_eq!(events(&mut consumer), [ConsumerEvent::Empty]);
}
