//! Every handle can cross tasks and threads: a service keeps them in
//! shared state and awaits them from any task. Checked when this file
//! compiles (their channels and waits are internal and may change).

use herdless_std::barrier::{Barrier, DoubleBarrier, Inside};
use herdless_std::config::Config;
use herdless_std::election::{Election, LeaderObserver, Leadership};
use herdless_std::group::GroupObserver;
use herdless_std::lock::{Lock, LockGuard, RevocableGuard};
use herdless_std::member::GroupMember;
use herdless_std::queue::Queue;
use herdless_std::rwlock::ReadWriteLock;
use herdless_std::two_phase::{Coordinator, Site};
use herdless_std::{Fenced, Session};

fn send_sync<T: Send + Sync>() {}

#[test]
fn every_handle_is_send_and_sync() {
    send_sync::<Lock>();
    send_sync::<LockGuard>();
    send_sync::<RevocableGuard>();
    send_sync::<ReadWriteLock>();
    send_sync::<Election>();
    send_sync::<Leadership>();
    send_sync::<LeaderObserver>();
    send_sync::<GroupMember>();
    send_sync::<GroupObserver>();
    send_sync::<Queue>();
    send_sync::<Barrier>();
    send_sync::<DoubleBarrier>();
    send_sync::<Inside<'static>>();
    send_sync::<Config>();
    send_sync::<Coordinator>();
    send_sync::<Site>();
    send_sync::<Fenced>();
    send_sync::<Session>();
}
