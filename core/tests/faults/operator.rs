//! Another client's session, for the scripted fault tests of
//! `conn_loss` and `faults`: an operator (or a peer of another library)
//! that deletes, creates and writes nodes, each request applied at once.

use herdless_core::sim::{Delivery, OwnedReply, SimZk};
use herdless_core::{Request, RequestIds};

/// Another client's session: an operator or a peer of another library.
pub struct Operator {
    pub session: i64,
    ids: RequestIds,
}

impl Operator {
    /// Opens the operator's session.
    pub fn open(zk: &mut SimZk) -> Self {
        Operator {
            session: zk.open_session(),
            ids: RequestIds::new(),
        }
    }

    /// Sends one request, has the server apply it, and returns the answer.
    pub fn run(&mut self, zk: &mut SimZk, request: Request<'_>) -> OwnedReply {
        let id = self.ids.next_id();
        zk.submit(self.session, id, &request);
        assert!(zk.apply_next(self.session));
        let mut answer = None;
        while let Some(delivery) = zk.next_delivery(self.session) {
            if let Delivery::Reply(got, reply) = delivery {
                if got == id {
                    answer = Some(reply);
                }
            }
        }
        answer.expect("the operator's answer")
    }

    pub fn delete(&mut self, zk: &mut SimZk, path: &str) -> OwnedReply {
        self.run(
            zk,
            Request::Delete {
                path,
                version: herdless_core::Version::Any,
            },
        )
    }

    /// `deleteall`: the children, then the node.
    pub fn delete_all(&mut self, zk: &mut SimZk, path: &str) {
        for child in zk.children(path).unwrap_or_default() {
            let child = format!("{path}/{child}");
            self.delete_all(zk, &child);
        }
        self.delete(zk, path);
    }

    pub fn create(
        &mut self,
        zk: &mut SimZk,
        path: &str,
        data: &[u8],
        mode: herdless_core::CreateMode,
    ) -> OwnedReply {
        self.run(
            zk,
            Request::Create {
                path,
                data,
                acl: herdless_core::Acl::OPEN,
                mode,
            },
        )
    }

    pub fn set(&mut self, zk: &mut SimZk, path: &str, data: &[u8]) -> OwnedReply {
        self.run(
            zk,
            Request::SetData {
                path,
                data,
                version: herdless_core::Version::Any,
            },
        )
    }
}
