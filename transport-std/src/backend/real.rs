//! The backend of a real server: `zookeeper-client`'s calls.

use futures::future::BoxFuture;
use herdless_core::owned::OwnedReply;
use herdless_core::{Acl, Request, ZkError};
use tracing::warn;
use zookeeper_client as zk;

use super::{send_now, Call, Watcher};
use crate::driver::convert;
use crate::fence::{FenceOp, FencedResult};
use crate::Error;

fn failed(e: &zk::Error) -> (OwnedReply, Option<Watcher>) {
    let code = convert::error(e);
    if code == ZkError::SystemError {
        warn!(error = %e, "client error without a ZooKeeper code");
    }
    (OwnedReply::Error(code), None)
}

/// Issues one core request on the client.
pub(super) fn call(client: &zk::Client, request: Request<'_>) -> Call {
    let client = client.clone();
    match request {
        Request::Create {
            path,
            data,
            acl,
            mode,
        } => {
            let (path, data, acls) = (path.to_owned(), data.to_vec(), convert::acl(acl));
            let mode = convert::create_mode(mode);
            send_now(async move {
                let options = mode.with_acls(zk::Acls::new(&acls));
                match client.create(&path, &data, &options).await {
                    Ok((_, sequence)) => {
                        let full = if mode == zk::CreateMode::EphemeralSequential
                            || mode == zk::CreateMode::PersistentSequential
                        {
                            format!("{path}{sequence}")
                        } else {
                            path
                        };
                        (OwnedReply::Created(full), None)
                    }
                    Err(e) => failed(&e),
                }
            })
        }
        Request::Delete { path, version } => {
            let path = path.to_owned();
            send_now(async move {
                let expected = convert::expected_version(version);
                match client.delete(&path, expected).await {
                    Ok(()) => (OwnedReply::Deleted, None),
                    Err(e) => failed(&e),
                }
            })
        }
        Request::Exists { path, watch } => {
            let path = path.to_owned();
            send_now(async move {
                let result = if watch {
                    client
                        .check_and_watch_stat(&path)
                        .await
                        .map(|(s, w)| (s, Some(Watcher::Real(w))))
                } else {
                    client.check_stat(&path).await.map(|s| (s, None))
                };
                match result {
                    Ok((Some(stat), w)) => (OwnedReply::Exists(convert::stat(&stat)), w),
                    Ok((None, w)) => (OwnedReply::Error(ZkError::NoNode), w),
                    Err(e) => failed(&e),
                }
            })
        }
        Request::GetData { path, watch } => {
            let path = path.to_owned();
            send_now(async move {
                let result = if watch {
                    client
                        .get_and_watch_data(&path)
                        .await
                        .map(|(d, s, w)| (d, s, Some(Watcher::Real(w))))
                } else {
                    client.get_data(&path).await.map(|(d, s)| (d, s, None))
                };
                match result {
                    Ok((data, stat, w)) => (OwnedReply::Data(data, convert::stat(&stat)), w),
                    Err(e) => failed(&e),
                }
            })
        }
        Request::SetData {
            path,
            data,
            version,
        } => {
            let (path, data) = (path.to_owned(), data.to_vec());
            send_now(async move {
                let expected = convert::expected_version(version);
                match client.set_data(&path, &data, expected).await {
                    Ok(stat) => (OwnedReply::DataSet(convert::stat(&stat)), None),
                    Err(e) => failed(&e),
                }
            })
        }
        Request::GetChildren { path, watch } => {
            let path = path.to_owned();
            send_now(async move {
                let result = if watch {
                    client
                        .list_and_watch_children(&path)
                        .await
                        .map(|(c, w)| (c, Some(Watcher::Real(w))))
                } else {
                    client.list_children(&path).await.map(|c| (c, None))
                };
                match result {
                    Ok((children, w)) => (OwnedReply::Children(children), w),
                    Err(e) => failed(&e),
                }
            })
        }
        Request::Check { path, version } => {
            let path = path.to_owned();
            send_now(async move {
                // A top-level check is only defined inside a multi on 3.8.
                let mut writer = client.new_multi_writer();
                if let Err(e) = writer.add_check_version(&path, version.wire()) {
                    return failed(&e);
                }
                match writer.commit().await {
                    Ok(_) => (OwnedReply::Checked, None),
                    Err(zk::MultiWriteError::OperationFailed { source, .. }) => failed(&source),
                    Err(zk::MultiWriteError::RequestFailed { source }) => failed(&source),
                }
            })
        }
        Request::Sync { path } => {
            let path = path.to_owned();
            send_now(async move {
                match client.sync(&path).await {
                    Ok(()) => (OwnedReply::Synced, None),
                    Err(e) => failed(&e),
                }
            })
        }
        // Requests added to the core later are refused rather than guessed.
        _ => Box::pin(std::future::ready((
            OwnedReply::Error(ZkError::Unimplemented),
            None,
        ))),
    }
}

/// Sends a fenced batch as one `multi`: the check of `fence`, then `ops`.
pub(super) fn fenced(
    client: &zk::Client,
    fence: &str,
    ops: &[FenceOp],
) -> BoxFuture<'static, Result<Vec<FencedResult>, Error>> {
    let (client, fence, ops) = (client.clone(), fence.to_owned(), ops.to_vec());
    Box::pin(async move {
        let open = convert::acl(Acl::OPEN);
        let zk_error = |e: zk::Error| Error::from_client(&e);
        let mut writer = client.new_check_writer(&fence, None).map_err(zk_error)?;
        for op in &ops {
            match op {
                FenceOp::Create { path, data, mode } => {
                    let options = convert::create_mode(*mode).with_acls(zk::Acls::new(&open));
                    writer.add_create(path, data, &options)
                }
                FenceOp::SetData {
                    path,
                    data,
                    version,
                } => writer.add_set_data(path, data, convert::expected_version(*version)),
                FenceOp::Delete { path, version } => {
                    writer.add_delete(path, convert::expected_version(*version))
                }
                FenceOp::Check { path, version } => writer.add_check_version(path, version.wire()),
            }
            .map_err(zk_error)?;
        }
        match writer.commit().await {
            Ok(results) => Ok(results.into_iter().map(result).collect()),
            Err(zk::CheckWriteError::CheckFailed { source }) => match source {
                zk::Error::NoNode | zk::Error::BadVersion => {
                    warn!(%fence, "fenced batch refused: the fence node is gone");
                    Err(Error::Fenced)
                }
                other => Err(Error::from_client(&other)),
            },
            Err(zk::CheckWriteError::OperationFailed { index, source }) => {
                Err(Error::FencedWrite {
                    index,
                    error: convert::error(&source),
                })
            }
            Err(zk::CheckWriteError::RequestFailed { source }) => Err(Error::from_client(&source)),
        }
    })
}

fn result(r: zk::MultiWriteResult) -> FencedResult {
    match r {
        zk::MultiWriteResult::Create { path, .. } => FencedResult::Created { path },
        zk::MultiWriteResult::SetData { stat } => FencedResult::DataSet {
            stat: convert::stat(&stat),
        },
        zk::MultiWriteResult::Delete => FencedResult::Deleted,
        // `Check`. The enum is non-exhaustive, but a batch only holds the
        // four kinds of write it was built from, and checks are the only
        // writes left.
        _ => FencedResult::Checked,
    }
}
